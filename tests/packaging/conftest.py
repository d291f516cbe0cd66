"""Build the wheel (and sdist) once per session and install it into a fresh environment outside the repository.

The fresh environment gets the wheel with ``--no-deps --no-index``; the wheel's declared dependencies
(its ``Requires-Dist``, followed transitively) are linked in from the environment running the tests, and
nothing else. So the installed app sees what ``pip install hardware-advisor`` would give it: no repository on
``sys.path``, no editable install, no torch, no test tools, and the check stays offline and fast.
"""

from __future__ import annotations

import email
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.support import REPO, read_pyproject

BUILD_TIMEOUT_S = 240
# Not copied into the build tree: environments, caches and earlier build outputs.
_COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__",
                                      ".pytest_cache", ".hypothesis", "screenshots-tmp", "*.pyc")


@dataclass(frozen=True)
class InstalledWheel:
    """A wheel built from the working tree and installed into a fresh virtual environment."""

    wheel: Path
    sdist: Path | None
    venv: Path
    python: Path
    bin_dir: Path
    wheel_names: frozenset[str]
    sdist_names: frozenset[str]
    linked_dists: tuple[str, ...]
    build_command: tuple[str, ...]

    def has_module(self, dotted: str) -> bool:
        """Whether the wheel ships module ``dotted`` (``advisor.commands.plan``)."""
        path = dotted.replace(".", "/")
        return f"{path}.py" in self.wheel_names or f"{path}/__init__.py" in self.wheel_names

    def env(self, home: Path) -> dict[str, str]:
        """Environment for the installed app: its bin first on PATH, Qt offscreen, ``ADVISOR_HOME`` at ``home``."""
        env = {k: v for k, v in os.environ.items()
               if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "ADVISOR_FAKE_GPU"}}
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env["QT_QPA_PLATFORM"] = "offscreen"
        env["ADVISOR_HOME"] = str(home)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env

    def run(self, args: list[str], home: Path, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
        """Run a program from the environment's bin directory (``advisor``, ``python``) outside the repository."""
        exe = self.bin_dir / args[0]
        return subprocess.run([str(exe), *args[1:]], cwd=cwd, env=self.env(home), capture_output=True,
                              text=True, timeout=timeout)


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = BUILD_TIMEOUT_S) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}\n"
                             f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
    return proc


def _installed_version_ok(requirement: str) -> bool:
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    try:
        version = importlib.metadata.version(req.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return req.specifier.contains(version, prereleases=True)


def _can_build_without_isolation() -> bool:
    """True when this environment already has the build backend pyproject asks for.

    ``wheel`` is not needed by setuptools 70.1 and later (it has ``bdist_wheel`` built in), so it is not required.
    """
    requires = read_pyproject()["build-system"]["requires"]
    needed = [r for r in requires if not r.strip().lower().startswith("wheel")]
    if not all(_installed_version_ok(r) for r in needed):
        return False
    if any(r.strip().lower().startswith("wheel") for r in requires):
        return _installed_version_ok("wheel") or _installed_version_ok("setuptools>=70.1")
    return True


def _build(src: Path, out: Path) -> tuple[Path, Path | None, tuple[str, ...]]:
    """Build sdist then wheel from the sdist with ``python -m build`` (or only a wheel with ``pip wheel``)."""
    no_isolation = _can_build_without_isolation()
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--outdir", str(out)]
        if no_isolation:
            cmd += ["--no-isolation", "--skip-dependency-check"]
        cmd.append(str(src))
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out)]
        if no_isolation:
            cmd.append("--no-build-isolation")
        cmd.append(str(src))
    _run(cmd, cwd=out)
    wheels = sorted(out.glob("*.whl"))
    sdists = sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1, f"expected one wheel in {out}, found {[w.name for w in wheels]}"
    return wheels[0], (sdists[0] if sdists else None), tuple(cmd)


def _requires_closure(wheel: Path) -> list[importlib.metadata.Distribution]:
    """The installed distributions the wheel depends on, transitively, with markers evaluated (no extras)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    with zipfile.ZipFile(wheel) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.message_from_bytes(zf.read(meta_name))
    pending = list(metadata.get_all("Requires-Dist") or [])
    seen: dict[str, importlib.metadata.Distribution] = {}
    missing = []
    while pending:
        req = Requirement(pending.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        key = canonicalize_name(req.name)
        if key in seen:
            continue
        try:
            dist = importlib.metadata.distribution(req.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(str(req))
            continue
        seen[key] = dist
        pending.extend(dist.requires or [])
    if missing:
        pytest.fail(f"the wheel's dependencies are not installed in the test environment: {missing}")
    return list(seen.values())


def _link_dependencies(dists: list[importlib.metadata.Distribution], target: Path) -> None:
    """Symlink each distribution's top-level files (its RECORD lists the dist-info too) into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    for dist in dists:
        root = Path(dist.locate_file(""))
        tops = {Path(f).parts[0] for f in (dist.files or [])}
        for name in sorted(tops):
            if name in {"..", "__pycache__"} or name.endswith(".pth"):
                continue
            source = root / name
            link = target / name
            if source.exists() and not link.exists():
                link.symlink_to(source, target_is_directory=source.is_dir())


def _venv_purelib(python: Path) -> Path:
    out = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout
    return Path(out.strip())


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> InstalledWheel:
    """Build the working tree's sdist and wheel, install the wheel into a fresh venv outside the repository."""
    base = tmp_path_factory.mktemp("wheel-install")
    assert REPO not in base.parents, "the install must live outside the repository"
    src = base / "src"
    shutil.copytree(REPO, src, ignore=_COPY_IGNORE, symlinks=True)
    out = base / "dist"
    out.mkdir()
    wheel, sdist, build_cmd = _build(src, out)

    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bin_dir / ("python.exe" if os.name == "nt" else "python")
    dists = _requires_closure(wheel)
    deps_dir = base / "deps"
    _link_dependencies(dists, deps_dir)
    (_venv_purelib(python) / "_advisor_test_deps.pth").write_text(f"{deps_dir}\n", encoding="utf-8")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "--disable-pip-version-check", str(wheel)])

    with zipfile.ZipFile(wheel) as zf:
        wheel_names = frozenset(zf.namelist())
    sdist_names: frozenset[str] = frozenset()
    if sdist is not None:
        import tarfile

        with tarfile.open(sdist) as tf:
            sdist_names = frozenset(m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name)
    return InstalledWheel(wheel=wheel, sdist=sdist, venv=venv, python=python, bin_dir=bin_dir,
                          wheel_names=wheel_names, sdist_names=sdist_names,
                          linked_dists=tuple(sorted(d.metadata["Name"] for d in dists)),
                          build_command=build_cmd)
