"""Shared test set-up: every test gets its own ADVISOR_HOME, Qt runs offscreen, GPU tests are opt-in."""

from __future__ import annotations

import os
import threading

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.pop("ADVISOR_FAKE_GPU", None)


def pytest_addoption(parser):
    parser.addoption("--run-gpu", action="store_true", default=False, help="run tests that need a real NVIDIA GPU")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-gpu"):
        return
    skip = pytest.mark.skip(reason="needs a real GPU: run with --run-gpu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def advisor_home(tmp_path, monkeypatch):
    """Redirect every advisor directory (config, data, cache) into the test's temporary directory."""
    home = tmp_path / "advisor-home"
    monkeypatch.setenv("ADVISOR_HOME", str(home))
    monkeypatch.delenv("ADVISOR_FAKE_GPU", raising=False)
    # The user's model stores stay out of every test (advisor.models reads these at call time).
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-hub"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama-models"))
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(tmp_path / "lmstudio-models"))
    from advisor.models import resolve

    resolve._READ.clear()  # models read from Hub headers (--fetch-header) are this process's, not the next test's
    from advisor.planner.service import forget_kept

    forget_kept()  # a test that patches a prior or a fit plans anew, not from an earlier test's timings
    return home


@pytest.fixture(autouse=True)
def _no_dangling_threads():
    """Fail a test that leaves a non-daemon thread or a sampler thread running."""
    before = set(threading.enumerate())
    yield
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()
                and not t.daemon and not t.name.startswith(("pydevd", "Dummy"))]
    for t in leftover:
        t.join(timeout=2.0)
    leftover = [t for t in leftover if t.is_alive()]
    assert not leftover, f"test left threads running: {[t.name for t in leftover]}"
