"""Owned hardware in the plan: this machine first, energy (and wear) only, --own, --no-own, --fleet, derived GPUs,
the CPU and Apple Silicon targets and partial offload."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import load_catalog
from advisor.cli import main
from advisor.estimate.local import HostFigures
from advisor.planner import PlanRequest, plan
from advisor.planner.machine import local_machine
from advisor.planner.owned import OwnedHardware, owned_from_profile

CAT = load_catalog(use_user_file=False)


def _plan_json(capsys, *flags) -> dict:
    assert main(["plan", *flags, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_two_4090s_are_priced_at_their_energy_and_come_first():
    m = local_machine("2x4090", CAT)
    req = PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "lora", "tokens": 2e8})
    r = plan(req, CAT, owned=m.owned, host=m.host)
    o = r.options[0]
    assert (o.id, o.kind, o.this_machine, o.origin) == ("owned:rtx-4090", "owned", True, "this machine")
    assert o.devices <= 2
    # (devices x 450 W TDP x 0.9 load + 150 W system) x hours x 0.17 USD/kWh; no purchase or depreciation part.
    energy = (o.devices * 450 * 0.9 + 150) / 1000 * o.hours * 0.17
    assert o.cost_breakdown_usd == pytest.approx({"energy": energy})
    assert r.this_machine() is o


def test_unequal_cards_draw_one_busy_cards_power_at_a_time():
    # a 4090 (450 W, 1,008 GB/s) beside a 3090 (350 W, 936 GB/s), 24 GB each, run their layers in turn: each busy
    # for its layers' bytes at its bandwidth, 1/1008 : 1/936 = 0.4815 : 0.5185 of a step, so the pair draws
    # 0.4815 x 450 + 0.5185 x 350 = 398.1 W, not 800 W; energy (398.1 x 0.9 load + 150 W system) x h x 0.17 USD/kWh
    m = local_machine("4090+3090", CAT)
    req = PlanRequest.from_mapping({"model": "qwen2.5-14b", "workload": "lora"})
    o = plan(req, CAT, owned=m.owned, host=m.host).this_machine()
    assert o.id == "owned:pool-1xrtx-4090-1xrtx-3090" and o.fits and o.devices == 1
    energy = (398.148 * 0.9 + 150) / 1000 * o.hours * 0.17
    assert o.cost_breakdown_usd == pytest.approx({"energy": energy}, rel=1e-4)


def test_a_wear_rate_adds_a_wear_part(capsys):
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--tokens", "2e8", "--fake-gpu", "2x4090",
                     "--set", "owned_wear_usd_per_gpu_hour=0.05")
    o = doc["options"][0]
    assert o["id"] == "owned:rtx-4090" and set(o["cost_breakdown_usd"]) == {"energy", "wear"}
    assert o["cost_breakdown_usd"]["wear"] == pytest.approx(0.05 * o["devices"] * o["hours"])
    assert doc["this_machine"] == "owned:rtx-4090"


def test_no_own_leaves_owned_options_out(capsys):
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--fake-gpu", "2x4090", "--no-own",
                     "--own", "2xrtx-3090")
    assert not [o for o in doc["options"] if o["kind"] == "owned"]


def test_own_flag_and_scenario_key(capsys, tmp_path):
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--own", "2xrtx-3090")
    o = next(o for o in doc["options"] if o["kind"] == "owned")
    assert o["id"] == "owned:rtx-3090" and o["devices"] <= 2 and o["origin"] == "--own 2xrtx-3090"
    assert not o["this_machine"]
    sc = tmp_path / "own.toml"
    sc.write_text('schema = "advisor.scenario/1"\n[plan]\nmodel = "llama-3-8b"\nworkload = "lora"\n'
                  'own = ["1xrtx-3060-12gb"]\n')
    doc = _plan_json(capsys, str(sc))
    assert any(o["id"] == "owned:rtx-3060-12gb" for o in doc["options"])


@pytest.mark.parametrize("spec, message", [("2xnot-a-card", "unknown accelerator"), ("2x rtx 3090", "COUNTx")])
def test_a_bad_own_is_one_line(capsys, spec, message):
    assert main(["plan", "--model", "llama-3-8b", "--own", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_owned_devices_are_bounded_by_what_is_held():
    """Two 4090s for a 70B LoRA: the owned option uses both and does not fit; nothing takes a third."""
    hw = OwnedHardware(CAT.accelerators["rtx-4090"], 2, per_machine=2, origin="test")
    r = plan(PlanRequest.from_mapping({"model": "llama-3-70b", "workload": "lora"}), CAT, owned=[hw])
    o = r.option("owned:rtx-4090")
    assert o.devices == 2 and not o.fits


def test_a_gpu_missing_from_the_catalog_plans_as_derived():
    from advisor.hw.match import accelerator_for_gpu
    from advisor.hw.records import GpuInfo, GpuProfile

    info = GpuInfo(index=0, name="NVIDIA Prototype Z100", uuid="GPU-x", memory_total_bytes=24564 * 2**20,
                   compute_capability=(8, 9), power_limit_w=450.0, max_sm_clock_mhz=3120.0, max_mem_clock_mhz=10501.0,
                   mem_bus_width_bits=384, cuda_cores=16384)
    acc = accelerator_for_gpu(info, CAT)
    assert acc.derived and acc.id not in CAT.accelerators

    class Profile:
        gpus = (GpuProfile(info=info, catalog_id=None, accelerator=acc),)

    r = plan(PlanRequest.from_mapping({"model": "llama-3-8b", "workload": "qlora"}), CAT,
             owned=owned_from_profile(Profile()))
    o = r.options[0]
    assert o.id == f"owned:{acc.id}" and o.derived and o.to_json()["derived"] is True


def test_the_fleet_never_ranks_more_gpus_than_it_holds(capsys, tmp_path):
    for i in range(3):  # three hosts named alike, told apart by their machine ids
        assert main(["detect", "--fake-gpu", "2x4090", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        doc["machine_id"] = f"m-{i:016x}"
        (tmp_path / f"n{i}.json").write_text(json.dumps(doc))
    assert main(["fleet", "import", *(str(tmp_path / f"n{i}.json") for i in range(3))]) == 0
    capsys.readouterr()
    for model, workload in (("llama-3-8b", "lora"), ("llama-3-70b", "pretrain")):
        doc = _plan_json(capsys, "--model", model, "--workload", workload, "--tokens", "1e9", "--fleet")
        assert doc["options"], model
        for o in doc["options"]:
            assert o["accelerator"] == "rtx-4090" and o["devices"] <= 6, o["id"]
        owned = next(o for o in doc["options"] if o["kind"] == "owned")
        assert owned["origin"] == "fleet: 6 GPUs in 3 machine(s)"


# ------------------------------------------------------------------------------ CPU, Apple Silicon, offload
def _history_with_triad(gbps: float) -> None:
    from advisor.store.probe_history import ProbeHistory

    with ProbeHistory() as h:
        h.add({"probe": "host-bandwidth", "device": "cpu", "started_at": "2026-12-01T10:00:00+00:00",
               "results": {"triad": {"best": gbps, "unit": "GB/s"}}}, {"id": "test"})


def test_cpu_decode_from_the_measured_host_bandwidth(capsys):
    """llama.cpp issue #34 (comment of 2023-05-16): an i5-6500 measured at 20.0 GB/s decodes LLaMA-7B q4_0 at
    253.7 ms per token, 3.94 tokens/s. With the triad at 20.0 GB/s in the probe history the plan gives
    0.8 x 20.0 GB/s / 3.79 GB = 4.2 tokens/s at a short context (within 25 %)."""
    _history_with_triad(20.0)
    for context, low in ((128, 0.75), (2048, 0.75)):
        doc = _plan_json(capsys, "--model", "llama-2-7b", "--workload", "inference", "--accelerator", "cpu",
                         "--quant", "q4_0", "--context", str(context))
        o = doc["options"][0]
        assert o["id"] == "owned:cpu" and o["fits"]
        assert low * 3.94 <= o["tokens_per_s"] <= 1.25 * 3.94, (context, o["tokens_per_s"])
    assert "measured" in doc["options"][0]["mfu_origin"] or doc["inference"]["option"] == "owned:cpu"


def test_cpu_target_without_a_probe_uses_the_prior(capsys):
    doc = _plan_json(capsys, "--model", "llama-2-7b", "--workload", "inference", "--accelerator", "cpu",
                     "--precision", "bf16")
    o = doc["options"][0]
    # 0.8 x 40 GB/s prior over 13.5 GB of bf16 weights and the 2048-token KV cache (1.07 GB).
    weights, kv = 6.74e9 * 2, 2 * 32 * 4096 * 2 * 2048
    assert o["tokens_per_s"] == pytest.approx(0.8 * 40e9 / (weights + kv), rel=0.02)


def test_m2_ultra_decode_is_near_llama_cpp(capsys):
    """llama.cpp discussion #4167 (Apple Silicon table): M2 Ultra 76-core, LLaMA-7B F16 text generation 41.4 t/s."""
    for context in (128, 2048):
        doc = _plan_json(capsys, "--model", "llama-2-7b", "--workload", "inference", "--accelerator", "m2-ultra",
                         "--context", str(context), "--precision", "fp16")
        o = doc["options"][0]
        assert o["id"] == "owned:m2-ultra" and o["fits"]
        assert 0.75 * 41.4 <= o["tokens_per_s"] <= 1.25 * 41.4
        assert o["capacity_bytes"] == int(192 * 2**30 * 0.75)  # the GPU's share of unified memory


def test_qlora_is_not_offered_on_the_cpu(capsys):
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "qlora", "--accelerator", "cpu")
    assert doc["options"] == []
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--accelerator", "cpu")
    assert doc["options"][0]["id"] == "owned:cpu"


def test_partial_offload_memory_on_each_side_and_speed():
    host = HostFigures(memory_total_bytes=64 * 2**30, physical_cores=8, bandwidth_bps=50e9)
    laptop = OwnedHardware(CAT.accelerators["rtx-4060-laptop"], 1, origin="this machine", this_machine=True,
                           host=host)
    base = {"model": "llama-2-7b", "workload": "inference", "context": 512, "precision": "bf16"}
    full = plan(PlanRequest.from_mapping(base), CAT, owned=[laptop], host=host).options[0]
    half = plan(PlanRequest.from_mapping({**base, "gpu_layers": 16}), CAT, owned=[laptop], host=host).options[0]
    none = plan(PlanRequest.from_mapping({**base, "gpu_layers": 0}), CAT, owned=[laptop], host=host).options[0]
    off = half.offload
    assert off["gpu_layers"] == 16 and off["layers"] == 32 and off["host_fits"]
    # Half of the 32 layers (6.48e9 params of 6.74e9 are in layers) on each side, bf16: about 6.5 GB each.
    assert off["gpu_bytes"] == pytest.approx(16 * (6.74e9 - 2 * 32000 * 4096) / 32 * 2 + 512 * 16 * 2 * 4096 * 2
                                             + 2**29, rel=0.02)
    assert half.host_bytes == off["host_bytes"] > 6e9
    # t = gpu bytes / (256 GB/s x 0.7) + cpu bytes / (50 GB/s x 0.8): between all-GPU and all-CPU.
    assert none.tokens_per_s < half.tokens_per_s < full.tokens_per_s
    assert half.memory_per_device_bytes < full.memory_per_device_bytes


def test_an_accelerator_no_one_offers_points_to_own(capsys):
    """A laptop GPU has no cloud offer and no purchase price: restricting the plan to it leaves no option, and the
    answer says so and how to plan on one's own card, instead of 'nothing fits' (the job fits 8.6 GB: 7.6 GB)."""
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "qlora", "--framework", "unsloth",
                 "--accelerator", "rtx-4060-laptop", "--seq", "2048"]) == 0
    out = capsys.readouterr().out
    assert "No offer in the catalog has rtx-4060-laptop" in out
    assert "--own 1xrtx-4060-laptop" in out
    assert "Nothing in the catalog fits" not in out


def test_without_a_cadence_the_purchase_named_is_a_home_rig(capsys):
    """At an assumed use a datacenter server bought for one QLoRA looks cheap per job; the headline names a home
    rig that runs it instead (a server only with a stated cadence or when no home rig can run the job)."""
    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "qlora", "--own", "1xrtx-3090"]) == 0
    out = capsys.readouterr().out
    buy = out[out.index("To buy: "):].split("\n")[0]
    assert buy.startswith("To buy: home rig ")
    assert main(["plan", "--model", "llama-3-70b", "--workload", "finetune", "--own", "1xrtx-3090"]) == 0
    out = capsys.readouterr().out  # 70B full fine-tune: about 1.1 TB of states, more than 4 cards of any rig hold
    assert "To buy: on-prem " in out


def test_a_power_limit_lowers_what_the_owned_gpu_draws(capsys):
    """An RTX 3090 (350 W) runs at 0.9 of its TDP, 315 W, plus the rig's 150 W: 465 W. Held at 250 W it runs at
    0.9 of that, 225 W, plus 150 W = 375 W for the longer job (speed: compute.power_limited_fraction), as a
    bought rig of the same card; a rented instance keeps its speed (no one sets the power of a cloud GPU)."""
    def owned(*extra):
        doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--own", "1xrtx-3090", *extra)
        return next(o for o in doc["options"] if o["kind"] == "owned")

    full, held = owned(), owned("--power-limit-w", "250")
    assert full["energy_kwh"] * 1000 / full["hours"] == pytest.approx(465.0)
    assert held["energy_kwh"] * 1000 / held["hours"] == pytest.approx(375.0)
    assert held["hours"] > full["hours"]
    doc = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--own", "1xrtx-3090",
                     "--power-limit-w", "250")
    rig = next(o for o in doc["options"] if o["id"] == "home:rtx-3090")
    assert rig["hours"] == pytest.approx(held["hours"]) and rig["energy_kwh"] == pytest.approx(held["energy_kwh"])
    free = _plan_json(capsys, "--model", "llama-3-8b", "--workload", "lora", "--own", "1xrtx-3090")
    cloud = [o for o in doc["options"] if o["kind"] == "cloud"][:5]
    same = {o["id"]: o["hours"] for o in free["options"]}
    assert cloud and all(o["hours"] == pytest.approx(same[o["id"]]) for o in cloud)


def test_the_cpu_probe_s_utilisation_is_applied_against_the_peak_it_was_measured_against(tmp_path):
    """One peak: the training-step probe on the CPU measures its MFU against the fp32 matmul rate it measured
    (0.43 TFLOP/s here); the plan applies that MFU to the same rate, not to cores x clock x 32 (0.19 TFLOP/s for
    2 cores at 3 GHz), so the planned step is the measured one: 0.5 x 0.43e12 over the FLOPs of a token, which the
    probe and the plan count alike (6 x params + 6 x L x s x h: probes.train_step.model_flops_per_token)."""
    from advisor.planner.machine import measured_cpu_peak
    from advisor.store.calibration import Calibration
    from advisor.store.probe_history import ProbeHistory

    doc = {"probe": "train-step", "device": "cpu", "mode": "quick", "results": {},
           "peak": {"TFLOP/s": 0.43, "precision": "fp32", "origin": "measured fp32 matmul"}}
    with ProbeHistory() as h:
        h.add(doc, {"hostname": "box", "cpu_model": "cpu"}, [])
    peak, origin = measured_cpu_peak("box", "cpu")
    assert peak == pytest.approx(0.43e12) and "training-step" in origin
    host = HostFigures(memory_total_bytes=64 * 2**30, physical_cores=2, max_freq_hz=3e9, fp32_flops=peak,
                       fp32_origin=origin)
    cal = Calibration(mfu=0.5, eta_mem=None, device="cpu", accelerator_id="cpu", measured_at="2026-12-01T00:00:00Z",
                      source="probe:train-step")
    r = plan(PlanRequest.from_mapping({"model": "gpt2", "workload": "pretrain", "tokens": 1e8,
                                       "accelerator": ["cpu"], "precision": "fp32"}), CAT, cal, host=host)
    o = r.option("owned:cpu")
    per_token = r.flops_per_token + r.attention_flops_per_token
    assert o.tokens_per_s == pytest.approx(0.5 * 0.43e12 / per_token, rel=1e-6)


def test_gpu_layers_time_the_rest_at_a_host_s_bandwidth_on_every_option():
    """--gpu-layers N on hardware one does not own: the layers left on the CPU are read at the host prior's
    bandwidth (40 GB/s x 0.8), as on one's own GPU, not at the GPU's: a 70B Q4_K_M half offloaded is a few
    tokens/s, not the 30 of the whole model on a 5090's bandwidth."""
    kw = {"model": "llama-3.3-70b", "workload": "inference", "accelerator": ["rtx-5090"], "owned_options": False}
    half = plan(PlanRequest.from_mapping({**kw, "gpu_layers": 40}), CAT).option("home:rtx-5090")
    weights = 70.55e9 * 4.8944 / 8
    cpu_s = weights * 40 / 80 / (40e9 * 0.8)  # the CPU's half of the layers, read once a token
    assert half.tokens_per_s < 1 / cpu_s
    assert half.tokens_per_s == pytest.approx(1 / (cpu_s + weights / 2 / (1792e9 * 0.85)), rel=0.15)
