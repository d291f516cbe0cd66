"""A fake monotonic clock for driving the sampler without sleeping."""

from __future__ import annotations


class FakeClock:
    """Monotonic seconds that move only when told; ``advance`` doubles as the sampler's wait."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
