"""The one place that decides where the advisor keeps its files.

``ADVISOR_HOME`` overrides every directory (tests point it at a temporary directory).
Importing this module creates nothing; directories are created when asked for.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "hardware-advisor"


def _base(kind: str) -> Path:
    home = os.environ.get("ADVISOR_HOME")
    if home:
        return Path(home) / kind
    try:
        import platformdirs
    except ImportError:  # a bare interpreter (the package not installed): the XDG layout
        return _xdg(kind)
    getter = {
        "config": platformdirs.user_config_dir,
        "data": platformdirs.user_data_dir,
        "cache": platformdirs.user_cache_dir,
        "log": platformdirs.user_log_dir,
    }[kind]
    return Path(getter(APP_NAME, appauthor=False))


def _xdg(kind: str) -> Path:
    env, default = {"config": ("XDG_CONFIG_HOME", ".config"), "data": ("XDG_DATA_HOME", ".local/share"),
                    "cache": ("XDG_CACHE_HOME", ".cache"), "log": ("XDG_STATE_HOME", ".local/state")}[kind]
    base = Path(os.environ.get(env) or Path.home() / default) / APP_NAME
    return base / "log" if kind == "log" else base


def config_dir(create: bool = False) -> Path:
    """Directory of settings and the user catalog."""
    return _ensure(_base("config"), create)


def data_dir(create: bool = False) -> Path:
    """Directory of the probe history database and recordings."""
    return _ensure(_base("data"), create)


def cache_dir(create: bool = False) -> Path:
    """Directory of disposable files (probe scratch files, downloads)."""
    return _ensure(_base("cache"), create)


def log_dir(create: bool = False) -> Path:
    """Directory of the advisor's log files (``advisor.log``, rotated)."""
    return _ensure(_base("log"), create)


def user_catalog_file() -> Path:
    """The user's catalog file that adds or overrides bundled entries."""
    return config_dir() / "catalog.toml"


def _ensure(path: Path, create: bool) -> Path:
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def shown(path: str | os.PathLike) -> str:
    """A path as the app and the command line show it: under the user's home as ``~/...`` (shorter, and the same
    words on every machine), else as it is. Display only: files are opened by their full path."""
    p = Path(path)
    try:
        rest = p.relative_to(Path.home())
    except (ValueError, RuntimeError):  # outside home, or no home to be found
        return str(p)
    return "~" if str(rest) == "." else f"~{os.sep}{rest}"
