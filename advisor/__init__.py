"""Hardware Advisor: know the machine, watch it, measure it, plan an LLM job and price it.

Importing this package imports no Qt, torch or NVML binding.
"""

__version__ = "0.1.0"
