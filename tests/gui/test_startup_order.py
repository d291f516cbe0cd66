"""Start-up order: the Machine page is filled before the planner, the job schema (pydantic), numpy and
pyqtgraph are imported; they follow in a second worker, and then the sampler runs and the planner has this
machine. Run in a fresh interpreter, where nothing is imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys
from PySide6.QtCore import QTimer
from advisor.app import build_window, get_app
app = get_app()
window = build_window("2x4090")
seen = {}

def on_machine(_profile):
    seen["at_machine_ready"] = sorted(m for m in ("pydantic", "numpy", "pyqtgraph", "advisor.planner")
                                     if m in sys.modules)
    seen["summary"] = window.page("machine").summary.text()

def check():
    ctx = window.ctx
    if ctx.local_known and ctx.sampler is not None and "pyqtgraph" in sys.modules:
        seen["after"] = {"local": ctx.local is not None, "owned": [hw.count for hw in ctx.local.owned] if ctx.local else [],
                         "planner": "advisor.planner" in sys.modules}
        app.quit()
    else:
        QTimer.singleShot(10, check)

window.ctx.machine_ready.connect(on_machine)
window.show()
QTimer.singleShot(0, check)
QTimer.singleShot(20000, app.quit)
app.exec()
window.close()
window.ctx.shutdown()
print("RESULT " + json.dumps(seen))
"""


def test_machine_page_fills_before_the_planner_and_charts_are_imported(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", ADVISOR_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=60)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, out.stderr[-2000:]
    seen = json.loads(line[len("RESULT "):])
    assert seen["at_machine_ready"] == []
    assert "logical cores" in seen["summary"]
    # then, off the GUI thread: the sampler, this machine for the planner (2 RTX 4090 as owned), pyqtgraph
    assert seen["after"] == {"local": True, "owned": [2], "planner": True}
