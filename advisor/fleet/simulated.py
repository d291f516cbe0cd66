"""Simulated nodes: a fake GPU scenario behind the real sampler, bookkeeper and exporter, on a clock of their
own. Their ``/metrics`` text is the exporter's, so everything downstream (reader, watcher, views, the fit) runs
as it does on a real fleet. For tests, the benchmark and ``--fake-gpu`` screenshots; never user data.

    node = SimulatedNode("8xh100-sxm")
    node.advance(1.0)          # one second of simulated time: one sample
    node.text()                # the exporter's /metrics text now
"""

from __future__ import annotations

from advisor.monitor.exporter import MetricsExporter, exposition


class _Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class SimulatedNode:
    """One simulated machine with its exporter (``scenario``: an ``advisor.hw.fake`` scenario)."""

    def __init__(self, scenario: str, hostname: str | None = None, *, start_s: float = 1000.0,
                 interval_s: float = 1.0, usd_per_kwh: float = 0.30) -> None:
        from advisor.hw.fake import FakeGpuBackend, FakeHostBackend
        from advisor.monitor import Sampler
        from advisor.monitor.books import BookKeeper
        from advisor.monitor.snapshot import read_infos

        self.clock = _Clock(start_s)
        self.gpu = FakeGpuBackend(scenario, clock=self.clock)
        host = FakeHostBackend(self.clock)
        self.sampler = Sampler(self.gpu, host, interval_s=interval_s, clock=self.clock,
                               wall_clock=lambda: 1.7e9 + self.clock.now, wait=self.clock.advance, call_timeout_s=None)
        self.keeper = BookKeeper(self.sampler, usd_per_kwh)
        self.exporter = MetricsExporter(self.sampler, self.keeper, read_infos(self.gpu),
                                        hostname or host.info().hostname, read_environ=False, clock=self.clock)
        self.sampler.add_listener(self.keeper)
        self.sampler.add_listener(self.exporter)
        self.sampler.tick()

    def advance(self, seconds: float) -> None:
        """Move this node's clock on by ``seconds`` and take a sample."""
        self.clock.advance(seconds)
        self.sampler.tick()

    def text(self) -> bytes:
        return exposition(self.exporter)

    def close(self) -> None:
        self.sampler.stop()
        self.gpu.close()


def simulated_fleet(scenarios: dict[str, str]) -> dict[str, SimulatedNode]:
    """``{name: scenario}`` -> ``{name: SimulatedNode}`` (each named as its own host)."""
    return {name: SimulatedNode(scenario, hostname=name) for name, scenario in scenarios.items()}
