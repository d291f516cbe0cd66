"""Subcommands of the ``advisor`` CLI, one module each."""
