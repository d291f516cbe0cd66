"""Qt-free driver of the Probes page: run several probes in a row, recording each in the history."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.probes import CancelToken, ProbeCancelled


@dataclass(frozen=True)
class ProbeStarted:
    """Progress event: probe ``name`` (``index`` of ``count``) starts."""

    name: str
    index: int
    count: int


@dataclass(frozen=True)
class ProbeFinished:
    """Progress event: a probe finished (``run`` is a ``RecordedRun``; its result may be a skip)."""

    run: object


def run_probes(names, device: str, quick: bool, cancel: CancelToken, params: dict | None = None, store: bool = True):
    """Run probes one after the other (a generator for ``GeneratorWorker``).

    Yields ``ProbeStarted``, each probe's ``Progress`` events, then ``ProbeFinished``.
    Args:
        params: extra keyword parameters per probe name (``{"host-bandwidth": {"elements": 4_000_000}}``).
    Returns:
        The list of ``RecordedRun`` s finished before a cancel (a cancelled probe is not included).
    """
    from advisor.probes.session import record

    runs = []
    names = list(names)
    for i, name in enumerate(names):
        if cancel.cancelled:
            break
        yield ProbeStarted(name, i, len(names))
        try:
            run = yield from record(name, device=device, quick=quick, cancel=cancel, store=store,
                                    **(params or {}).get(name, {}))
        except ProbeCancelled:
            break
        runs.append(run)
        yield ProbeFinished(run)
    return runs


def history_entries(limit: int = 200):
    """Earlier runs from the probe history, newest first (empty when the database cannot be read)."""
    from advisor.store.probe_history import ProbeHistory, history_file

    if not history_file().exists():  # nothing measured yet: reading must not create the store
        return []
    try:
        with ProbeHistory() as h:
            return h.list(limit=limit)
    except Exception:  # a history that cannot be opened must not break the page; the store keeps it aside
        return []
