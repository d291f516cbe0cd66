"""Helpers for comparing plan documents."""

from __future__ import annotations


def without_sources(doc):
    """A plan document without the keys that say where a value came from (``origin``, ``source``).

    Two plans of the same job given in different places (a scenario file, flags, the app) have the same
    figures and differ only there.
    """
    if isinstance(doc, dict):
        return {k: without_sources(v) for k, v in doc.items() if k not in ("origin", "source")}
    if isinstance(doc, list):
        return [without_sources(v) for v in doc]
    return doc


def write_pins(argv: list[str], doc: str, path, scenarios: dict, digests, noun: str) -> int:
    """A pinning test's ``--write``: the digests of every scenario planned on the bundled catalog, stored in ``path``
    (``tests/planner/test_plan_pinned.py`` and ``test_serve_pinned.py``); any other argument prints ``doc``."""
    import json

    if argv != ["--write"]:
        print(doc)
        return 2
    from advisor.catalog import load_catalog

    cat = load_catalog(use_user_file=False)
    out = {name: digests(values, cat) for name, values in sorted(scenarios.items())}
    path.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"pinned {len(out)} {noun} in {path.name}")
    return 0


def read_pins(path) -> dict:
    """The digests a pinning test stored with ``write_pins``."""
    import json

    return json.loads(path.read_text(encoding="utf-8"))


def benchmark_module(name: str):
    """``benchmarks/<name>.py`` imported once as the module ``name`` (kept in ``sys.modules``: a dataclass looks its
    module up), its neighbour ``verdict.py`` imported first as the benchmark imports it."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    for module_name in ("verdict", name):
        if module_name not in sys.modules:
            spec = importlib.util.spec_from_file_location(module_name, bench / f"{module_name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
    return sys.modules[name]
