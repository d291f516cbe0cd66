"""The planning engine: memory, FLOPs, time and inference speed (pure functions, no I/O)."""
