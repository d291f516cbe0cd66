"""The hobbyist's question in the app, "can I QLoRA Llama 3 8B here", on a laptop RTX 4060: from start to
"this machine: fits / time / cost" in three actions (click Planner, pick QLoRA, apply the first fit advice);
the Machine page's "What fits" opens the Planner in one click; the owned-GPU setting persists.

``ADVISOR_SHOTS=DIR`` saves a 1280x720 screenshot of each step there.
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt


def _shot(window, name):
    target = os.environ.get("ADVISOR_SHOTS")
    if target:
        os.makedirs(target, exist_ok=True)
        window.grab().save(os.path.join(target, f"{name}.png"))


def _planned(page, done):
    return page.is_ready() and page.plans_done > done and page.bundle is not None


def test_three_actions_to_this_machine_fits_time_cost(make_window, qtbot):
    w = make_window("laptop-4060")
    w.resize(1280, 720)
    machine = w.page("machine")
    qtbot.waitUntil(machine.is_ready, timeout=20000)
    _shot(w, "0-start")
    actions = 0

    planner = w.page("planner")
    done = planner.plans_done
    item = w.nav.item(next(i for i in range(w.nav.count()) if w.nav.item(i).text() == "Planner"))
    rect = w.nav.visualItemRect(item)
    qtbot.mouseClick(w.nav.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # 1: the Planner page
    actions += 1
    qtbot.waitUntil(lambda: _planned(planner, done), timeout=20000)
    assert planner.form.values()["model"] == "llama-3.1-8b"  # the default model (resources/defaults.toml)
    _shot(w, "1-planner")

    done = planner.plans_done
    box = planner.form.w["workload"]
    box.setCurrentIndex(box.findData("qlora"))  # 2: QLoRA
    actions += 1
    qtbot.waitUntil(lambda: _planned(planner, done), timeout=20000)
    text = planner.answer.text()
    assert "This machine (1 x GeForce RTX 4060 Laptop GPU): does not fit" in text
    assert planner.model.rows()[0]["this_machine"] and planner.fit_advice.isVisible()
    _shot(w, "2-qlora")

    done = planner.plans_done
    qtbot.mouseClick(planner.fit_advice.buttons[0], Qt.MouseButton.LeftButton)  # 3: apply the first advice
    actions += 1
    qtbot.waitUntil(lambda: _planned(planner, done), timeout=20000)
    result = planner.bundle.result
    mine = result.this_machine()
    assert mine.fits and mine.kind == "owned"
    text = planner.answer.text()
    assert "This machine (1 x GeForce RTX 4060 Laptop GPU): fits" in text and "energy" in text
    assert "renting" in text
    _shot(w, "3-fits")
    assert actions <= 3


def test_what_fits_opens_the_planner_in_one_click(make_window, qtbot):
    w = make_window("laptop-4060")
    machine = w.page("machine")
    qtbot.waitUntil(lambda: machine.is_ready() and machine.fits is not None, timeout=20000)
    rows = {r["workload_id"]: r for r in machine.fits}
    assert set(rows) == {"inference", "qlora", "lora", "finetune"}
    qlora = rows["qlora"]
    assert qlora["values"]["workload"] == "qlora" and qlora["cost_usd"] > 0
    planner = w.page("planner")
    done = planner.plans_done
    button = machine.fits_list.buttons[list(rows).index("qlora")]
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: planner.isVisible() and _planned(planner, done), timeout=20000)
    result = planner.bundle.result
    assert result.model_name == qlora["model"] and result.this_machine().fits


def test_owned_gpus_setting_persists_and_plans(make_window, qtbot):
    w = make_window("laptop-4060")
    machine = w.page("machine")
    qtbot.waitUntil(lambda: machine.is_ready() and machine.fits is not None, timeout=20000)
    machine.own_setting.edit.setText("2xnot-a-gpu")
    qtbot.mouseClick(machine.own_setting.save, Qt.MouseButton.LeftButton)
    assert "unknown accelerator" in machine.own_setting.status.text()
    machine.own_setting.edit.setText("2xrtx-3090")
    qtbot.mouseClick(machine.own_setting.save, Qt.MouseButton.LeftButton)
    assert w.ctx.own_specs == ["2xrtx-3090"]
    from advisor.gui import settings as settings_mod
    from advisor.gui.context import OWN_KEY

    assert settings_mod.read_json(w.ctx.settings, OWN_KEY, []) == ["2xrtx-3090"]
    w.show_page("planner")
    planner = w.page("planner")
    qtbot.waitUntil(lambda: planner.is_ready() and planner.bundle is not None
                    and planner.bundle.result.option("owned:rtx-3090") is not None, timeout=20000)
    ids = [r["where"] for r in planner.model.rows()]
    assert ids[0] == "owned:rtx-4060-laptop" and "owned:rtx-3090" in ids


def test_inference_draws_the_context_sweep(make_window, qtbot):
    w = make_window("laptop-4060")
    w.show_page("planner")
    planner = w.page("planner")
    qtbot.waitUntil(lambda: planner.is_ready() and planner.bundle is not None, timeout=20000)
    done = planner.plans_done
    planner.form.set_values({"model": "llama-3.1-8b", "workload": "inference", "quant": "q4_k_m"})
    qtbot.waitUntil(lambda: _planned(planner, done), timeout=20000)
    plot = planner.context_plot
    assert plot.isVisible() and len(plot.points) >= 4
    xs, ys = plot.ttft.getData()
    # the contexts that fit are drawn, those beyond the largest are not (a time for them could not be true)
    assert len(xs) == sum(p["fits"] for p in plot.points) >= 4 and all(a < b for a, b in zip(ys, ys[1:]))
    assert "largest context that fits" in plot.caption.text() and "this machine's" in plot.caption.text()
    w.resize(1280, 720)
    _shot(w, "4-inference")
