"""A frozen build without torch says how to enable the probes."""

from __future__ import annotations

import sys

import pytest

from advisor.probes._common import ProbeSkipped, require_torch


def test_frozen_app_without_torch_says_how_to_enable_probes(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(ProbeSkipped, match="ADVISOR_FREEZE_TORCH=1"):
        require_torch()


def test_plain_install_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ProbeSkipped, match=r"hardware-advisor\[probes\]"):
        require_torch()
