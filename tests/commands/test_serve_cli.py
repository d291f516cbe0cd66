"""``advisor serve``: the answer for the owned GPUs first, the contract's JSON, bad input as one line, launches."""

from __future__ import annotations

import json

import pytest
import yaml

from advisor.cli import main

FRIENDS = ["serve", "--model", "llama-3.3-70b", "--quant", "q4_k_m", "--runtime", "llama.cpp", "--own", "2xrtx-3090",
           "--fake-gpu", "no-driver", "--users", "5", "--prompt-tokens", "1000", "--output-tokens", "300",
           "--ttft-p95", "2"]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_five_friends_json_answers_for_the_owned_gpus_first(capsys):
    code, out, err = run(capsys, *FRIENDS, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema"] == "advisor.serve/1"
    first = doc["options"][0]
    assert first["id"] == "owned:rtx-3090" and first["kind"] == "owned"
    for key in ("meets_target", "max_users", "replicas", "devices", "per_user_tokens_per_s", "ttft_s", "tpot_s",
                "usd_per_million_requests", "usd_per_million_output_tokens"):
        assert key in first
    assert {"p50", "p95"} <= set(first["ttft_s"]) and first["ttft_s"]["p95"] >= first["ttft_s"]["p50"]
    lo, hi = first["ttft_s_interval"]["p95"]
    assert lo < first["ttft_s"]["p95"] < hi
    # llama.cpp splits the 70B model's layers over both cards: one replica of two devices, five slots
    assert first["devices"] == 2 and first["launch"]["slots"] == 5
    # the cost per million requests is the hour's cost over the requests served in an hour
    assert first["usd_per_million_requests"] == pytest.approx(
        first["usd_per_hour"] / (first["requests_per_s"] * 3600) * 1e6, rel=1e-9)
    kinds = [o["kind"] for o in doc["options"]]
    assert kinds.count("owned") == 1 and "cloud" in kinds


def test_five_friends_table_says_what_each_user_sees_and_the_cheapest_cloud(capsys):
    code, out, err = run(capsys, *FRIENDS)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[3].startswith("Your GPUs: 2 x GeForce RTX 3090")
    assert "Each user sees: first token after" in out
    assert "Cheapest cloud at the same target:" in out
    assert "To change:" in out or "meets the target" in out


def test_the_owned_line_says_what_of_the_gpus_a_load_uses(capsys):
    # two 4090s hold an 8B model each: five users need one of them, and the line says so rather than read as if the
    # machine had one; the 70B pair above needs both, and says nothing more
    code, out, err = run(capsys, "serve", "--model", "llama-3.1-8b", "--fake-gpu", "2x4090", "--users", "5")
    assert code == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("Your GPUs:")]
    assert line.endswith("; this load uses 1 of 2 GPUs"), line
    code, out, err = run(capsys, *FRIENDS)
    assert "this load uses" not in out


def test_a_target_no_option_meets_is_an_answer(capsys):
    code, out, err = run(capsys, *FRIENDS[:-2], "--ttft-p95", "0.001")
    assert code == 0, err
    assert "No option meets p95 time to first token 1 ms; the closest is" in out


@pytest.mark.parametrize("args, field", [
    (["--model", "llama-3-8b", "--users", "0"], "users"),
    (["--model", "llama-3-8b", "--users", "3", "--requests-per-s", "1"], "users"),
    (["--model", "llama-3-8b", "--users", "3", "--prompt-tokens", "9000"], "prompt_tokens"),
    (["--model", "llama-3-8b", "--users", "3", "--ttft-p95", "-1"], "ttft_p95_s"),
    (["--model", "llama-3-8b", "--users", "3", "--tpot-p95", "0.1", "--tokens-per-s-per-user", "10"],
     "tokens_per_s_per_user"),
    (["--model", "llama-3-8b", "--users", "3", "--accelerator", "nope"], "accelerator"),
    (["--model", "llama-3-8b", "--users", "3", "--runtime", "llama.cpp", "--launch", "vllm"], "--runtime"),
    (["--model", "llama-3-8b", "--users", "3", "--quant", "awq", "--runtime", "llama.cpp"], "quant"),
])
def test_impossible_loads_and_lengths_are_one_line_exit_2(capsys, args, field):
    code = main(["serve", *args])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and field in err


def test_a_scenario_serve_table(tmp_path, capsys):
    f = tmp_path / "friends.toml"
    f.write_text('schema = "advisor.scenario/1"\n[serve]\nmodel = "llama-3-8b"\nusers = 20\n'
                 'prompt_tokens = 500\nttft_p95_s = 1.0\naccelerator = ["l4"]\n[assumptions]\n'
                 'electricity_usd_per_kwh = 0.3\n')
    code, out, err = run(capsys, "serve", str(f), "--json", "--fake-gpu", "no-driver")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["load"] == {"users": 20} and {o["accelerator"] for o in doc["options"]} == {"l4"}
    bad = tmp_path / "bad.toml"
    bad.write_text('schema = "advisor.scenario/1"\n[plan]\n[serve]\nmodel = "llama-3-8b"\nusers = 2\nseq_len = 9\n')
    code = main(["serve", str(bad)])
    assert code == 2 and "seq_len" in capsys.readouterr().err


def test_launch_vllm_has_the_real_flags(capsys):
    code, out, err = run(capsys, "serve", "--model", "llama-3-8b", "--users", "50", "--prompt-tokens", "500",
                         "--output-tokens", "200", "--accelerator", "h100-sxm", "--launch", "vllm")
    assert code == 0, err
    cmd = [ln for ln in out.splitlines() if ln.startswith("vllm serve")][0]
    for flag in ("--tensor-parallel-size 1", "--max-num-seqs 1024", "--max-model-len 1536",
                 "--gpu-memory-utilization 0.9", "--kv-cache-dtype auto"):
        assert flag in cmd
    assert "meta-llama/Meta-Llama-3-8B" in cmd


def test_launch_llama_server_and_skypilot(capsys):
    code, out, err = run(capsys, *FRIENDS, "--kv-cache-bits", "8", "--launch", "llama-server")
    assert code == 0, err
    cmd = out.splitlines()[-1]
    assert cmd.startswith("llama-server -m ") and "-np 5" in cmd and "-ctk q8_0 -ctv q8_0" in cmd
    assert "-ngl 999" in cmd and "--flash-attn on" in cmd
    code, out, err = run(capsys, "serve", "--model", "llama-3-8b", "--users", "400", "--prompt-tokens", "500",
                         "--ttft-p95", "1", "--accelerator", "h100-sxm", "--launch", "skypilot")
    assert code == 0, err
    doc = yaml.safe_load(out)
    assert doc["service"]["readiness_probe"]["path"] == "/v1/models"
    assert doc["service"]["replicas"] >= 1 and doc["resources"]["accelerators"].startswith("H100:")
    assert doc["run"].startswith("vllm serve ")


def test_every_serving_input_is_a_flag_and_a_scenario_key(capsys, tmp_path):
    from advisor.job.serve import FROM_JOB, SERVE_FIELDS

    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = capsys.readouterr()[0]
    for meta in SERVE_FIELDS.values():
        if meta.flag:
            assert meta.flag in text, meta.name
    assert "--seq-len" not in text and "--optimizer" not in text  # a plan's training inputs are not a server's
    # the serving inputs of their own, as [serve] keys
    f = tmp_path / "s.toml"
    f.write_text('schema = "advisor.scenario/1"\n[serve]\nmodel = "llama-3-8b"\nrequests_per_s = 2.5\n'
                 'prompt_spread = 0.5\noutput_spread = 0.5\nmax_seqs = 64\ntpot_p95_s = 0.05\n'
                 'accelerator = ["l4"]\n')
    code, out, err = run(capsys, "serve", str(f), "--json", "--fake-gpu", "no-driver")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["load"] == {"requests_per_s": 2.5} and doc["targets"]["tpot_p95_s"] == 0.05
    assert all(o["launch"]["max_num_seqs"] == 64 for o in doc["options"] if o["fits"])
    assert set(SERVE_FIELDS) - set(FROM_JOB) == {"users", "requests_per_s", "prompt_spread", "output_spread",
                                                 "lengths", "max_seqs", "ttft_p95_s", "tpot_p95_s",
                                                 "tokens_per_s_per_user"}


def test_a_rate_load_carries_the_rate_loads_ranges_and_an_unseen_runtime_a_wider_one(capsys):
    import math

    from advisor.catalog.measurements import bundled_calibration_fit
    from advisor.estimate.calibration import GroupFit

    fits = bundled_calibration_fit()
    ttft: GroupFit = fits["ttft"]
    # vLLM on CUDA at an arrival rate: the published rate loads' own held-out width (MLPerf's server scenario) of
    # dense models, not the closed loops of users'
    code, out, err = run(capsys, "serve", "--model", "llama-3-8b", "--requests-per-s", "5", "--accelerator",
                         "h100-sxm", "--runtime", "vllm", "--no-spot", "--json")
    assert code == 0, err
    doc = json.loads(out)
    first = next(o for o in doc["options"] if o["fits"])
    lo, hi = first["ttft_s_interval"]["p95"]
    assert math.log(hi / first["ttft_s"]["p95"]) == pytest.approx(ttft.width("rate/vllm/cuda/dense"), rel=1e-9)
    assert ttft.width("rate/vllm/cuda/dense") != ttft.width("users/vllm/cuda/dense")
    assert doc["ranges"].startswith("at a load of an arrival rate")
    # MLC at a load of users: no published served run of it in the set (llama.cpp's slots have had one since
    # llama.cpp PR #16894's batched-bench rows, SGLang since its cookbook's bench_serving pages), so its range adds
    # the spread between the runtimes' factors to the users' width
    code, out, err = run(capsys, "serve", "--model", "llama-3-8b", "--users", "8", "--accelerator", "h100-sxm",
                         "--runtime", "mlc", "--no-spot", "--json")
    assert code == 0, err
    first = next(o for o in json.loads(out)["options"] if o["fits"])
    lo, hi = first["ttft_s_interval"]["p95"]
    assert not ttft.seen("users/mlc/cuda")
    assert math.log(hi / first["ttft_s"]["p95"]) == pytest.approx(
        math.hypot(ttft.width("users/vllm/cuda/dense"), ttft.unseen_spread("users/mlc/cuda")), rel=1e-9)
    assert math.log(hi / first["ttft_s"]["p95"]) > ttft.width("users/vllm/cuda/dense")


def test_a_mixture_of_experts_carries_the_moe_runs_ranges_and_a_dense_model_the_dense_runs(capsys):
    """The published served MoE runs miss more than the dense ones (their prefill passes' fitted time leaves more of
    their first tokens unexplained than the dense runs'), so each kind's figures carry the width of its own runs held
    out source by source: the same vLLM on the same GPU, a MoE's first token range is the MoE runs', a dense model's
    the dense runs'."""
    import math

    from advisor.catalog.measurements import bundled_calibration_fit

    ttft = bundled_calibration_fit()["ttft"]
    widths = {}
    for model, kind in (("qwen3-30b-a3b", "moe"), ("llama-3.1-8b", "dense")):
        code, out, err = run(capsys, "serve", "--model", model, "--users", "8", "--accelerator", "h100-sxm",
                             "--runtime", "vllm", "--no-spot", "--json")
        assert code == 0, err
        doc = json.loads(out)
        first = next(o for o in doc["options"] if o["fits"])
        lo, hi = first["ttft_s_interval"]["p95"]
        widths[kind] = math.log(hi / first["ttft_s"]["p95"])
        assert widths[kind] == pytest.approx(ttft.width(f"users/vllm/cuda/{kind}"), rel=1e-9)
        assert widths[kind] == pytest.approx(ttft.class_width(f"users/{kind}"), rel=1e-9)  # vLLM is seen
        # the job's statement of its ranges is its kind's, as its options' are
        assert f"x/÷{math.exp(widths[kind]):.2f}" in doc["ranges"].split("time to first token within ")[1][:12]
    assert widths["moe"] > 1.2 * widths["dense"]


def test_without_a_latency_target_the_most_is_not_said_to_be_within_one(capsys):
    assert main(["serve", "--model", "llama-3.1-8b", "--fake-gpu", "2x4090", "--users", "1"]) == 0
    out = capsys.readouterr().out
    assert "Target: no latency target" in out and "Most it serves (no latency target): " in out
    assert "within the target" not in out.split("option ")[0]  # the answer above the table
