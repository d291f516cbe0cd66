"""One question, one answer: each question of the grid below is asked of every surface that shows its answer,
and the surfaces must agree at the precision they display.

Surfaces: ``advisor plan`` (JSON and text), ``advisor serve --json`` at one user, ``advisor models --json``,
the app's What-fits card (``gui.plan_service.what_fits``), the plan report (Markdown, whose text the HTML and PDF
share: tests/report), and the llama-server launch line. The machines are the issue's: a laptop RTX 4060, two RTX
4090s, eight H100 SXM, and two RTX 3090s owned on a box with no driver here.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from advisor.cli import main

MACHINES = ("laptop-4060", "2x4090", "8xh100-sxm")


def _run(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return code, out


def _json(capsys, *args) -> dict:
    return json.loads(_run(capsys, *args, "--json")[1])


def _mine(doc: dict) -> dict:
    return next(o for o in doc["options"] if o["id"] == doc["this_machine"])


def _number(text: str, pattern: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in {text[:400]!r}"
    return float(found.group(1).replace(",", ""))


# ------------------------------------------------------------------ "can I run this model here, how fast?"
@pytest.mark.parametrize("fake", MACHINES)
def test_inference_plan_serve_models_and_text_agree(capsys, fake):
    ask = ("--model", "llama-3.1-8b", "--fake-gpu", fake)
    plan = _json(capsys, "plan", *ask, "--workload", "inference")
    inf = plan["inference"]
    assert inf["fits"] and inf["this_machine"]
    # serve at one user: the same request (the plan's default window: 1,792 prompt and 256 output tokens)
    serve = _json(capsys, "serve", *ask, "--users", "1", "--prompt-tokens", str(inf["prompt_tokens"]),
                  "--output-tokens", str(inf["output_tokens"]))
    mine = serve["options"][0]
    assert mine["id"] == inf["option"]
    assert mine["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-6)
    assert mine["per_user_tokens_per_s"] == pytest.approx(inf["decode_tokens_per_s"], rel=1e-6)
    # the cache the runtime leaves is the longest context, up to the model's 131,072 tokens
    assert min(mine["kv_capacity_tokens"], 131_072) == inf["largest_context"]
    # the text's headline shows the same decode at one decimal
    _, text = _run(capsys, "plan", *ask, "--workload", "inference")
    assert _number(text, r"decode ([\d,.]+) tokens/s") == round(inf["decode_tokens_per_s"], 1)
    assert inf["software"]["weight_format"] in text and "assumed" in json.dumps(plan["software"])
    # advisor models: the same plan at its 4,096-token context
    plan4k = _json(capsys, "plan", *ask, "--workload", "inference", "--context", "4096")
    models = _json(capsys, "models", "llama-3.1-8b", "--fake-gpu", fake)["models"][0]["fits"]["inference"]
    opt = _mine(plan4k)
    assert models["fits"] is True and models["devices"] == opt["devices"]
    assert models["per_device_bytes"] == opt["memory_per_device_bytes"]
    assert models["tokens_per_s"] == pytest.approx(opt["tokens_per_s"], rel=1e-9)
    assert models["weight_format"] == plan4k["software"]["weight_format"]


def test_a_70b_q4_on_two_3090s_one_request_and_its_launch_line(capsys):
    common = ("--model", "llama-3.3-70b", "--quant", "q4_k_m", "--runtime", "llama.cpp", "--own", "2xrtx-3090",
              "--fake-gpu", "no-driver", "--prompt-tokens", "1000", "--output-tokens", "300")
    inf = _json(capsys, "plan", "--workload", "inference", *common)["inference"]
    one = _json(capsys, "serve", *common, "--users", "1")["options"][0]
    assert one["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-6)
    assert one["per_user_tokens_per_s"] == pytest.approx(inf["decode_tokens_per_s"], rel=1e-6)
    assert one["kv_capacity_tokens"] == inf["largest_context"]
    # five friends: llama-server's -c is the cache that fits (whole 256-token blocks a slot), split by -np
    five = _json(capsys, "serve", *common, "--users", "5")["options"][0]
    _, out = _run(capsys, "serve", *common, "--users", "5", "--launch", "llama-server")
    words = shlex.split(out.strip().splitlines()[-1])
    c, n = int(words[words.index("-c") + 1]), int(words[words.index("-np") + 1])
    assert n == 5 and five["kv_capacity_tokens"] - 5 * 256 < c <= five["kv_capacity_tokens"]


def test_one_users_decode_range_is_the_plans_held_at_the_bandwidth_bound(capsys):
    """A range never shows a speed that cannot be: the plan holds its decode range's top at the bandwidth bound
    (planner.timing.Timing.high_cap), advisor serve its per-user rate's top and its per-token times' bottom
    (planner.serve.rate_bound); at one user the two are one range, in the JSON and in the text."""
    common = ("--model", "llama-3.3-70b", "--quant", "q4_k_m", "--runtime", "llama.cpp", "--own", "2xrtx-3090",
              "--fake-gpu", "no-driver", "--prompt-tokens", "1000", "--output-tokens", "300")
    inf = _json(capsys, "plan", "--workload", "inference", *common)["inference"]
    one = _json(capsys, "serve", *common, "--users", "1")["options"][0]
    low, high = inf["decode_tokens_per_s_interval"]
    # the bound by hand: one 3090's 936 GB/s (llama.cpp's layer split: the cards run in turn) over a step's bytes,
    # the Q4_K_M weights and the cache at the request's mean length, 1,000 + 299 / 2 tokens of 80 layers x 8 KV
    # heads x 128 x 2 (K, V) x 2 bytes
    weights = 936e9 / high - 80 * 8 * 128 * 2 * 2 * (1000 + 299 / 2)
    assert 39e9 < weights < 44e9  # 70.6e9 x about 4.9 bits
    assert one["per_user_tokens_per_s_interval"] == pytest.approx([low, high], rel=1e-9)
    assert high < inf["decode_tokens_per_s"] * 1.32  # the decode group's width alone would reach 22.6
    assert one["tpot_s_interval"]["p50"][0] == pytest.approx(1 / high, rel=1e-9)
    _, plan_text = _run(capsys, "plan", "--workload", "inference", *common)
    _, serve_text = _run(capsys, "serve", *common, "--users", "1")
    assert _number(plan_text, r"decode [\d.]+ tokens/s \(80 %: [\d.]+-([\d.]+)\)") == pytest.approx(high, abs=0.05)
    assert _number(serve_text, r"tokens/s \(80 %: [\d.]+-([\d.]+)\)") == pytest.approx(high, abs=0.05)


# ------------------------------------------------------------------ "how long does this training job take here?"
@pytest.mark.parametrize("fake", MACHINES)
@pytest.mark.parametrize("workload", ("qlora", "lora", "pretrain"))
def test_training_plan_json_text_models_and_report_agree(capsys, tmp_path, fake, workload):
    ask = ("--model", "llama-3.1-8b", "--workload", workload, "--fake-gpu", fake)
    doc = _json(capsys, "plan", *ask)
    report = tmp_path / "plan.md"
    _, text = _run(capsys, "plan", *ask, "--report", str(report))
    mine = next((o for o in doc["options"] if o["id"] == doc["this_machine"]), None)
    if mine is None or not mine["fits"]:
        assert "does not fit" in text or "fits" not in text.split("\n\n")[1][:200]
        return
    # the headline (text and report) shows this machine's option: same devices, hours at 3 figures
    from advisor import units

    assert units.fmt_hours(mine["hours"]) in text.split("\n\n")[1]
    assert units.fmt_hours(mine["hours"]) in report.read_text(encoding="utf-8")
    if workload in ("lora", "qlora"):
        fit = _json(capsys, "models", "llama-3.1-8b", "--fake-gpu", fake)["models"][0]["fits"][workload]
        # advisor models plans at its own 2,048-token sequences: the same option when asked the same
        same = _mine(_json(capsys, "plan", *ask, "--seq-len", "2048", "--lora-rank", "16"))
        assert fit["fits"] == (same["fits"] and same.get("feasible", True))
        assert fit["per_device_bytes"] == same["memory_per_device_bytes"] and fit["devices"] == same["devices"]


def test_every_gpu_the_user_owns_is_used_when_faster(capsys):
    doc = _json(capsys, "plan", "--model", "llama-3.1-8b", "--workload", "lora", "--fake-gpu", "2x4090")
    mine = _mine(doc)
    assert mine["devices"] == 2 and doc["memory"]["devices"] == 2
    one = next((o for o in doc["options"] if o["id"] == f"{doc['this_machine']}@1"), None)
    if one is not None:  # one GPU shown beside when cheaper, never as this machine
        assert one["cost_usd"] < mine["cost_usd"] and one["hours"] > mine["hours"]


# ------------------------------------------------------------------ the app's What-fits card is the plan
def test_what_fits_card_is_the_plan(capsys):
    from advisor.catalog import load_catalog
    from advisor.gui.plan_service import what_fits
    from advisor.planner.machine import local_machine

    catalog = load_catalog(use_user_file=False)
    m = local_machine("laptop-4060", catalog)
    cards = what_fits(m.owned, catalog, host=m.host)
    inference = next(c for c in cards if c["workload_id"] == "inference")
    assert inference["values"] is not None
    flags = [x for k, v in inference["values"].items() for x in (f"--{k.replace('_', '-')}", str(v))]
    doc = _json(capsys, "plan", "--fake-gpu", "laptop-4060", *flags)
    mine = _mine(doc)
    assert mine["tokens_per_s"] == pytest.approx(inference["tokens_per_s"], rel=1e-9)
    assert mine["hours"] == pytest.approx(inference["hours"], rel=1e-9)


def test_a_4090_beside_a_3090_serves_a_70b_q4_split_over_both(capsys):
    # 43 GB of Q4_K_M weights fit neither card alone; llama.cpp splits the layers over both by memory, and each
    # reads its share in turn: 1 / (m1/(m1+m2)/1008 GB/s + m2/(m1+m2)/936 GB/s) = 971 GB/s for the pair
    ask = ("--model", "llama-3.3-70b", "--fake-gpu", "4090+3090")
    doc = _json(capsys, "plan", *ask, "--workload", "inference")
    inf = doc["inference"]
    assert inf["fits"] and inf["option"].startswith("owned:pool-") and inf["software"]["weight_format"] == "q4_k_m"
    # between two 3090s (16.57 tokens/s, llama-bench tg512, XiongjieDai) and two 4090s (19.22)
    assert 16.0 < inf["decode_tokens_per_s"] < 19.5
    one = _json(capsys, "serve", *ask, "--users", "1", "--prompt-tokens", str(inf["prompt_tokens"]),
                "--output-tokens", str(inf["output_tokens"]))["options"][0]
    assert one["id"] == inf["option"]
    assert one["per_user_tokens_per_s"] == pytest.approx(inf["decode_tokens_per_s"], rel=1e-6)
    assert one["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-6)
    _, out = _run(capsys, "serve", *ask, "--users", "2", "--launch", "llama-server")
    words = shlex.split(out.strip().splitlines()[-1])
    assert words[words.index("--tensor-split") + 1] == "25.8,25.8"


@pytest.mark.parametrize("fake", ("2x4090", "m3-max"))
def test_a_hybrid_models_one_request_is_one_figure_in_plan_and_serve(capsys, fake):
    # Qwen3-Next (48 layers, "LLLF": 12 attention layers of 2 KV heads of 256) adds 12 x 2 x 256 x 2 values x 2 bytes
    # = 24,576 bytes of cache a token; its 36 linear layers keep a fixed state (39.5 MB), which the plan read as if
    # every cached token carried it: 11.6 tokens/s planned against serve's 177 for the same request on two 4090s.
    # Only the 12 attention layers score (query, key) pairs: counted over all 48, the attention's arithmetic bound
    # the M3 Max's step, at rates that differ by 0.2 % between the plan's request and the server's step
    from advisor.catalog import load_catalog
    from advisor.estimate import memory
    from advisor.estimate.model import attention_layers

    arch = load_catalog(use_user_file=False).models["qwen3-next-80b-a3b"]
    assert memory.kv_token_bytes(arch, 2.0) == 12 * 2 * 256 * 2 * 2
    assert attention_layers(arch) == 12
    ask = ("--model", "qwen3-next-80b-a3b", "--fake-gpu", fake)
    inf = _json(capsys, "plan", *ask, "--workload", "inference")["inference"]
    one = _json(capsys, "serve", *ask, "--users", "1", "--prompt-tokens", str(inf["prompt_tokens"]),
                "--output-tokens", str(inf["output_tokens"]))["options"][0]
    assert one["id"] == inf["option"]
    assert one["per_user_tokens_per_s"] == pytest.approx(inf["decode_tokens_per_s"], rel=1e-6)
    assert one["ttft_s"]["p50"] == pytest.approx(inf["ttft_single_request_s"], rel=1e-6)
    # about 3.9B active parameters a token, as Qwen3-30B-A3B's 3.4B: a decode of the same order, not 15 times slower
    small = _json(capsys, "plan", "--model", "qwen3-30b-a3b", "--fake-gpu", fake, "--workload", "inference")
    assert 0.5 < inf["decode_tokens_per_s"] / small["inference"]["decode_tokens_per_s"] < 1.2
    # a training plan's attention beside its model FLOPs counts the same 12 layers: 6 x 12 x 2,048 x 2,048
    lora = _json(capsys, "plan", *ask, "--workload", "lora", "--seq-len", "2048")
    assert lora["attention_flops_per_token"] == pytest.approx(6 * 12 * 2048 * 2048)


def test_a_4090_beside_a_3090_fine_tunes_a_14b_with_lora_split_over_both(capsys):
    # 38.8 GB of LoRA on Qwen2.5-14B fits neither 24 GB card; transformers' device_map="auto" places the layers over
    # both by memory and the Trainer runs them in turn, so with equal memories each card does half the layers:
    # the pair takes the mean of the two cards' times, (4.785 + 11.110) / 2 = 7.948 h at the default 10M tokens
    ask = ("--model", "qwen2.5-14b", "--workload", "lora", "--fake-gpu", "4090+3090")
    doc = _json(capsys, "plan", *ask)
    by_id = {o["id"]: o for o in doc["options"]}
    mine = _mine(doc)
    assert mine["id"] == "owned:pool-1xrtx-4090-1xrtx-3090" and mine["fits"]
    assert not by_id["owned:rtx-4090"]["fits"] and not by_id["owned:rtx-3090"]["fits"]
    halves = (by_id["owned:rtx-4090"]["hours"] + by_id["owned:rtx-3090"]["hours"]) / 2.0
    assert mine["hours"] == pytest.approx(halves, rel=0.01)
    assert mine["hours"] == pytest.approx(7.95, rel=0.05)
    # the headline names the pool by its cards (it is no driver-derived part, and no count of one device)
    _, text = _run(capsys, "plan", *ask)
    assert "This machine (GeForce RTX 4090 + GeForce RTX 3090, layers split over them): fits" in text
    # advisor models and the app's What-fits card say the same of this machine
    fit = _json(capsys, "models", "qwen2.5-14b", "--fake-gpu", "4090+3090")["models"][0]["fits"]["lora"]
    assert fit["fits"] and fit["per_device_bytes"] == mine["memory_per_device_bytes"]
    from advisor.catalog import load_catalog
    from advisor.gui.plan_service import what_fits
    from advisor.planner.machine import local_machine

    catalog = load_catalog(use_user_file=False)
    m = local_machine("4090+3090", catalog)
    card = next(c for c in what_fits(m.owned, catalog, host=m.host) if c["workload_id"] == "lora")
    assert card["change"] == {}
    again = _mine(_json(capsys, "plan", "--fake-gpu", "4090+3090", "--model", card["model"], "--workload", "lora"))
    assert again["fits"] and card["hours"] == pytest.approx(again["hours"], rel=1e-9)
    # a framework whose ranks must be equal devices (torchtune's FSDP recipes) plans the cards one kind at a time
    doc = _json(capsys, "plan", *ask, "--framework", "torchtune")
    assert not any(o["id"].startswith("owned:pool-") for o in doc["options"])
    assert doc["this_machine"] == "owned:rtx-4090" and not _mine(doc)["fits"]


# ------------------------------------------------------------------ "is this job like the runs the ranges come from?"
def test_training_beyond_the_calibrated_runs_is_said_alike_everywhere(capsys, tmp_path):
    """One statement (planner.summary.reach_sentence) in the JSON, the table, --explain, the app's Planner answer and
    the report: 8,192 H100s lie beyond the largest calibrated fleet (6,144 GPUs, Megatron-LM's weak-scaling table)."""
    import html as _html

    from advisor.catalog import load_catalog
    from advisor.gui.pages.planner import PlannerPage
    from advisor.planner import PlanRequest, plan
    from advisor.planner.summary import reach_sentence

    ask = ("--model", "llama-3-8b", "--workload", "pretrain", "--gpus", "8192", "--accelerator", "h100-sxm",
           "--tokens", "1e12", "--no-own")
    doc = _json(capsys, "plan", *ask)
    said = doc["calibration_reach"]
    assert said["outside"] and said["option"] == "onprem:h100-sxm"
    assert said["sentence"].startswith("Against published runs (onprem:h100-sxm): outside the calibrated runs: 8,192 GPUs, "
                                       "largest seen 6,144")
    assert said["width_factor"] > said["width_factor_at_runs"]  # widened for the distance
    option = next(o for o in doc["options"] if o["id"] == said["option"])
    assert option["calibration_reach"]["statement"] == said["statement"]
    assert option["tokens_per_s_interval"][1] / option["tokens_per_s"] == pytest.approx(said["width_factor"])
    report = tmp_path / "plan.md"
    _, text = _run(capsys, "plan", *ask, "--report", str(report))
    _, explained = _run(capsys, "plan", *ask, "--explain")
    assert said["sentence"] in text and said["sentence"] in explained
    assert "grows as x (1 +" in explained and "grows as x (1 +" not in text
    assert said["sentence"].removeprefix("Against published runs ") in report.read_text(encoding="utf-8").replace("\\", "")
    result = plan(PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "pretrain", "gpus": 8192,
                                            "accelerator": ["h100-sxm"], "tokens": 1e12}),
                  load_catalog(use_user_file=False))
    assert reach_sentence(result) == said["sentence"]
    answer = _html.unescape(re.sub(r"<[^>]+>", "", PlannerPage._answer_text(None, result).replace("<br>", "\n")))
    assert said["sentence"] in answer.replace("\u200b", "")
