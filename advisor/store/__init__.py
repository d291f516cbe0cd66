"""Saved state: settings, scenarios, probe history and calibration, written atomically."""
