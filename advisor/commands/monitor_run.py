"""What the ``advisor monitor`` modes share (``commands.monitor``, ``monitor_job``, ``monitor_serve``): the sampler run
in the calling thread until its duration or Ctrl-C, and the electricity price of the books."""

from __future__ import annotations


def usd_per_kwh(args) -> float:
    """The electricity price of the books: ``--usd-per-kwh``, else the cost assumptions' home price."""
    if getattr(args, "usd_per_kwh", None) is not None:
        return args.usd_per_kwh
    from advisor.cost.assumptions import CostAssumptions

    return CostAssumptions().electricity_usd_per_kwh


def run_sampler(sampler, duration) -> None:
    """Sample in this thread until ``duration`` seconds have passed (None: until Ctrl-C, which ends it quietly)."""
    try:
        sampler.run(duration_s=duration)  # in this thread: Ctrl-C ends it
    except KeyboardInterrupt:
        pass
    finally:
        sampler.stop()
