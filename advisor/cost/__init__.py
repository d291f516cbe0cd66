"""Total job cost: home rig, on-prem and cloud (pure functions, no I/O)."""
