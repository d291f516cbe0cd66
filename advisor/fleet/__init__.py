"""The live fleet: many machines' GPUs and processes, read from Prometheus exporters (the advisor's own
``advisor monitor --serve-metrics`` or NVIDIA's DCGM exporter, one name mapping: ``monitor.exporter``) or from
a Prometheus server that scrapes them.

    model.py      the node, GPU and process records and the ``advisor.fleet/1`` document
    read.py       exposition text and Prometheus query answers -> records (bounded, validated)
    sources.py    where a fleet is read from: ``--scrape URL...``, ``--prometheus URL``, simulated nodes
    watch.py      the watcher: every node on its own schedule, staleness, a dead node greyed
    fit.py        "where does this job fit now": nodes ranked by free GPU memory, the launch line
    simulated.py  simulated nodes (fake GPUs behind a real exporter) for tests, benchmarks and screenshots

No Qt here; the terminal view is ``commands/fleet_watch.py`` and the app's page ``gui/pages/fleet.py``.
"""
