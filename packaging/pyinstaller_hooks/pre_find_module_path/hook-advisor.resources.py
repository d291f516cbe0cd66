"""PyInstaller: find ``advisor.resources`` where pyproject maps it, the top-level resources/ directory.

setuptools installs resources/ as the ``advisor.resources`` package (``[tool.setuptools.package-dir]``);
PyInstaller looks for sub-packages inside ``advisor/`` only, so point its search at the repository root.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def pre_find_module_path(hook_api):
    hook_api.search_dirs = [str(ROOT)]
