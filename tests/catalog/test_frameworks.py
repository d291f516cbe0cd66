"""The framework profiles: the bundled file is valid and complete, and a broken one is one clear error."""

from __future__ import annotations

import pytest

from advisor.catalog.frameworks import (
    BEHAVIOURS,
    FrameworkError,
    bundled_frameworks,
    canonical_framework,
    framework_names,
    parse_frameworks,
    resolve_framework,
)
from advisor.catalog.load import _resource_text

REQUIRED = ("transformers", "unsloth", "torchtune", "litgpt", "torchtitan", "megatron", "deepspeed")


def test_bundled_profiles_cover_the_frameworks_people_run():
    profiles = bundled_frameworks()
    assert set(REQUIRED) <= set(profiles)
    for alias, pid in (("trl", "transformers"), ("peft", "transformers"), ("axolotl", "transformers"),
                       ("llama-factory", "transformers"), ("nemo", "megatron"), ("megatron-lm", "megatron")):
        assert canonical_framework(alias) == pid
    assert len(framework_names()) == len(set(framework_names()))


def test_every_behaviour_has_its_source():
    for p in bundled_frameworks().values():
        for wl in ("pretrain", "finetune", "lora", "qlora"):
            sources = p.sources_for(wl)
            assert set(sources) == set(BEHAVIOURS), p.id
            assert all(len(text) > 15 for text in sources.values()), p.id
        if p.behaviours.kernel_efficiency != 1.0:  # a claim, marked as a prior until fitted
            assert p.kernel_efficiency_origin in ("prior", "fitted")
            assert "PRIOR" in p.sources["kernel_efficiency"] or p.kernel_efficiency_origin == "fitted"


def test_defaults_are_what_most_people_run():
    for wl in ("finetune", "lora", "qlora"):
        assert resolve_framework(None, wl).id == "transformers"
    assert resolve_framework(None, "pretrain").id == "megatron"  # the runs the utilisation model is fitted on


def test_torchtune_full_finetune_recipe():
    """recipes/configs/llama3_1/8B_full_single_device.yaml: bf16 weights, PagedAdamW8bit, optimizer_in_bwd."""
    b = resolve_framework("torchtune", "finetune").behaviours_for("finetune")
    assert (b.master_weights, b.optimizer_state, b.optimizer_in_backward) == ("bf16", "paged-8bit", True)
    assert b.checkpointing == "full" and b.loss == "fused"
    q = resolve_framework("torchtune", "qlora").behaviours_for("qlora")  # 8B_qlora_single_device.yaml
    assert q.loss == "chunked" and not q.optimizer_in_backward


GOOD = _resource_text("frameworks.toml")


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.replace('schema = "advisor.frameworks/1"', 'schema = "x"'), "schema"),
    (lambda t: t.replace('optimizer_state = "8bit"', 'optimizer_state = "4bit"', 1), "optimizer_state"),
    (lambda t: t.replace('kernel_efficiency = 2.0', 'kernel_efficiency = "fast"', 1), "kernel_efficiency"),
    (lambda t: t.replace('aliases = ["liger-kernel"]', 'aliases = ["trl"]', 1), "'trl'"),
    (lambda t: t.replace('default_for = []', 'default_for = ["qlora"]', 1), "exactly one default"),
    (lambda t: t.replace('loss_chunks = 32', 'loss_chunk = 32', 1), "unknown behaviour"),
    (lambda t: t.replace('[frameworks.unsloth.speed]\nkernel_efficiency_origin = "prior"', ''), "origin"),
    (lambda t: t.replace('[frameworks.torchtune.workloads.finetune.sources]\n', '[frameworks.torchtune.workloads.'
                         'finetune.notes]\n'), "unknown behaviour"),
    (lambda t: t + "\n[frameworks.x.behaviours\n", "frameworks.toml"),
])
def test_a_broken_profile_is_one_clear_error(edit, says):
    text = edit(GOOD)
    assert text != GOOD
    with pytest.raises(FrameworkError, match=says.replace("(", r"\(")):
        parse_frameworks(text)


def test_a_behaviour_without_source_is_refused():
    text = GOOD.replace('checkpointing = "Unsloth README quick start', 'checkpointing_x = "Unsloth', 1)
    with pytest.raises(FrameworkError, match="source"):
        parse_frameworks(text)
