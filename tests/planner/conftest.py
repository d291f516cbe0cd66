"""Fixtures the planner's tests share."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def catalog():
    """The bundled catalog without the user's overrides, once a module."""
    from advisor.catalog import load_catalog

    return load_catalog(use_user_file=False)


@pytest.fixture(scope="module")
def pinned(request):
    """The stored digests of the module's ``PINNED`` file (the pinning tests: ``tests/support_json.read_pins``)."""
    from tests.support_json import read_pins

    return read_pins(request.module.PINNED)
