"""One module decides the directories: ADVISOR_HOME wins, platformdirs otherwise, XDG without it."""

from __future__ import annotations

import sys

from advisor import paths


def test_advisor_home_redirects_everything(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    assert paths.config_dir() == tmp_path / "config"
    assert paths.data_dir() == tmp_path / "data"
    assert paths.cache_dir() == tmp_path / "cache"
    assert paths.user_catalog_file() == tmp_path / "config" / "catalog.toml"
    assert not (tmp_path / "config").exists()  # asking creates nothing
    assert paths.data_dir(create=True).is_dir()


def test_platformdirs_locations(monkeypatch):
    import platformdirs

    monkeypatch.delenv("ADVISOR_HOME", raising=False)
    assert str(paths.config_dir()) == platformdirs.user_config_dir("hardware-advisor", appauthor=False)


def test_xdg_fallback_without_platformdirs(tmp_path, monkeypatch):
    monkeypatch.delenv("ADVISOR_HOME", raising=False)
    monkeypatch.setitem(sys.modules, "platformdirs", None)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.config_dir() == tmp_path / "cfg" / "hardware-advisor"
    assert paths.data_dir() == tmp_path / "home" / ".local" / "share" / "hardware-advisor"


def test_paths_are_shown_home_relative(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert paths.shown(tmp_path / ".cache" / "huggingface" / "hub") == "~/.cache/huggingface/hub"
    assert paths.shown(tmp_path) == "~"
    assert paths.shown("/srv/models") == "/srv/models"  # outside home: as it is
