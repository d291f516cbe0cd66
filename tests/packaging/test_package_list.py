"""pyproject's hand-written package list matches the source tree, and every resource file is package data.

The list is explicit because resources/ is mapped into the package (``advisor.resources``), so a new
sub-package that is not listed would silently be left out of the wheel.
"""

from __future__ import annotations

import fnmatch

from tests.packaging.support import REPO, read_pyproject


def _setuptools() -> dict:
    return read_pyproject()["tool"]["setuptools"]


def _source_packages() -> set[str]:
    root = REPO / "advisor"
    return {".".join(init.parent.relative_to(REPO).parts) for init in root.rglob("__init__.py")
            if "__pycache__" not in init.parts}


def test_every_advisor_package_is_listed():
    listed = set(_setuptools()["packages"])
    missing = sorted(_source_packages() - listed)
    assert not missing, ("packages under advisor/ missing from pyproject [tool.setuptools] packages, "
                         f"so left out of the wheel: {missing}")


def test_every_listed_package_exists():
    package_dir = _setuptools().get("package-dir", {})
    gone = []
    for name in _setuptools()["packages"]:
        mapped = next((package_dir[p] + name[len(p):].replace(".", "/") for p in sorted(package_dir, key=len,
                       reverse=True) if name == p or name.startswith(p + ".")), name.replace(".", "/"))
        if not (REPO / mapped).is_dir():
            gone.append(f"{name} ({mapped}/)")
    assert not gone, f"pyproject lists packages with no directory: {gone}"


def test_no_python_directory_without_init():
    """A directory of modules without __init__.py would be a namespace package that the list misses."""
    root = REPO / "advisor"
    bare = sorted(str(d.relative_to(REPO)) for d in [root, *root.rglob("*")]
                  if d.is_dir() and "__pycache__" not in d.parts and any(d.glob("*.py"))
                  and not (d / "__init__.py").exists())
    assert not bare, f"directories with modules but no __init__.py: {bare}"


def test_resources_are_mapped_into_the_package():
    tool = _setuptools()
    assert tool["package-dir"].get("advisor.resources") == "resources"
    assert "advisor.resources" in tool["packages"]
    assert (REPO / "resources" / "__init__.py").is_file()


def _shipped_by_package_data(rel: str, package_data: dict[str, list[str]]) -> bool:
    """Whether a file at ``resources/<rel>`` matches a package-data glob of ``advisor.resources`` or a sub-package."""
    parts = rel.split("/")
    for depth in range(len(parts)):
        package = ".".join(["advisor", "resources", *parts[:depth]])
        inner = "/".join(parts[depth:])
        patterns = package_data.get(package, []) + package_data.get("*", []) + package_data.get("", [])
        if any(fnmatch.fnmatch(inner, pat) and inner.count("/") == pat.count("/") for pat in patterns):
            return True
    return False


def test_every_resource_file_matches_package_data():
    package_data = _setuptools()["package-data"]
    root = REPO / "resources"
    unmatched = sorted(rel for rel in (p.relative_to(root).as_posix() for p in root.rglob("*")
                                       if p.is_file() and "__pycache__" not in p.parts)
                       if not rel.endswith("__init__.py") and not _shipped_by_package_data(rel, package_data))
    assert not unmatched, f"files under resources/ that no [tool.setuptools.package-data] glob ships: {unmatched}"


def test_resource_subdirectories_are_listed_packages():
    """setuptools warns, and will later refuse, to ship a data directory that is not a listed package."""
    root = REPO / "resources"
    subdirs = sorted("advisor.resources." + ".".join(d.relative_to(root).parts) for d in root.rglob("*")
                     if d.is_dir() and "__pycache__" not in d.parts and any(f.is_file() for f in d.iterdir()))
    missing = [name for name in subdirs if name not in _setuptools()["packages"]]
    assert not missing, (f"add {missing} to pyproject [tool.setuptools] packages "
                         "(setuptools: 'Package ... is absent from the `packages` configuration')")
