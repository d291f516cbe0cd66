"""The Models page: the stores read in a worker, fits on the fake GPUs, and "Plan this model" opening the Planner."""

from __future__ import annotations

from advisor.gui.pages.models import plan_values
from advisor.models import ResolvedModel
from advisor.models.hf import arch_from_config
from tests.models import configs
from tests.models.conftest import add_to_hf_cache, config_bytes, write_gguf


def _stores(tmp_path, monkeypatch):
    hub = tmp_path / "hf-hub"
    add_to_hf_cache(hub, "Qwen/Qwen2.5-7B", {"config.json": config_bytes(configs.QWEN25_7B)})
    add_to_hf_cache(hub, "Qwen/Qwen3-30B-A3B", {"config.json": config_bytes(configs.QWEN3_30B_A3B)})
    folder = tmp_path / "lmstudio-models" / "pub" / "Tiny-GGUF"
    folder.mkdir(parents=True)
    write_gguf(folder / "Tiny-Q8_0.gguf")


def test_page_lists_models_with_fits_and_plans_a_dense_one(make_window, qtbot, tmp_path, monkeypatch):
    _stores(tmp_path, monkeypatch)
    w = make_window("2x4090")
    w.show_page("models")
    page = w.page("models")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    rows = page.table_model.rows()
    assert [r.found.name for r in rows] == ["Qwen/Qwen2.5-7B", "Qwen/Qwen3-30B-A3B", "pub/Tiny-GGUF/Tiny-Q8_0.gguf"]
    qwen = rows[0]
    assert qwen.fit_of("inference").fits is True  # 15.2 GB of bf16 weights over two 24 GiB cards
    assert rows[1].fit_of("inference").fits is False  # 61 GB over two
    assert not page.plan_button.isEnabled()
    page.table.selectRow(page.proxy.mapFromSource(page.table_model.index(1, 0)).row())
    assert not page.plan_button.isEnabled() and "mixture-of-experts" in page.plan_button.toolTip()
    page.table.selectRow(page.proxy.mapFromSource(page.table_model.index(0, 0)).row())
    assert page.plan_button.isEnabled()
    page.plan_button.click()
    assert w.current_page() is w.page("planner")
    values = w.page("planner").form.values()
    assert values["params"] == qwen.model.params and values["layers"] == 28 and values["kv_heads"] == 4
    qtbot.waitUntil(lambda: w.ctx.last_plan is not None and w.ctx.last_plan.params == qwen.model.params, timeout=10000)


def test_plan_values_keep_what_the_form_can_hold():
    def resolved(cfg, quant=""):
        return ResolvedModel(arch=arch_from_config(cfg, "m", "m"), name="m", source="gguf", quant=quant)

    dense = plan_values(resolved(configs.LLAMA31_8B, "Q4_K_M"))
    assert dense["hidden"] == 4096 and dense["quant"] == "q4_k_m" and dense["workload"] == "inference"
    assert plan_values(resolved(configs.MIXTRAL_8X7B)) is None  # MoE: the form would plan it dense
    assert plan_values(resolved(configs.QWEN3_30B_A3B)) is None


def test_empty_machine_says_how_to_get_a_model(make_window, qtbot):
    w = make_window("2x4090")
    w.show_page("models")
    page = w.page("models")
    qtbot.waitUntil(page.is_ready, timeout=10000)
    assert page.table_model.rowCount() == 0 and "hf download" in page.note.text()
