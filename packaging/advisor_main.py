"""Entry point of the frozen app (PyInstaller): ``advisor`` is the CLI, ``advisor-gui`` opens the window.

Both executables in the one-folder build run this script; the executable's name picks the entry point,
so the GUI launcher needs no console on Windows while sharing every library with the CLI.
"""

import sys
from pathlib import Path

from advisor.cli import gui_main, main

if __name__ == "__main__":
    name = Path(sys.executable).stem.lower()
    raise SystemExit(gui_main() if name == "advisor-gui" else main())
