"""The one error of this package: bad or missing model input, reported as one line (exit 2 on the CLI)."""

from __future__ import annotations


class ModelSpecError(ValueError):
    """A model spec cannot be resolved: the message is one line naming the file, key or model that is wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
