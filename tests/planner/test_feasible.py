"""Only options that can run are ranked: tensor parallelism inside one node, multi-node with a stated fabric,
price-index rows as reference prices, launch specs with the instance's real accelerator count."""

from __future__ import annotations

import dataclasses
import re

import pytest

from advisor.catalog import load_catalog
from advisor.planner import PlanRequest, plan
from advisor.planner.placement import ONPREM_INTER_NODE_BPS, cloud_placement, owned_placement
from advisor.report.launch import LaunchError, launch_resources, render_launch
from advisor.store.scenario import load_scenario

CAT = load_catalog(use_user_file=False)
EXAMPLE = "docs/examples/serve-llama3-70b.toml"


def _plan(**kw):
    return plan(PlanRequest.from_mapping(kw), CAT)


def _first_launchable_spec(doc: dict) -> str:
    return render_launch("skypilot", doc)


def _assert_real_spec(text: str, accelerator_count: int, provider: str) -> dict:
    import yaml

    task = yaml.safe_load(text)
    name, count = task["resources"]["accelerators"].split(":")
    assert name == "H100" and int(count) == accelerator_count
    assert task["resources"]["cloud"] == provider
    return task


def test_serving_llama3_70b_ranks_an_option_that_runs():
    # Issue 17: four single-chip inf2.xlarge spot VMs joined by tensor parallelism came first.
    sc = load_scenario(EXAMPLE)
    r = plan(PlanRequest.from_mapping(sc.plan), CAT)
    best = r.best()
    assert best.feasible and r.options[0] is best
    inf2 = r.option("cloud:aws:inf2.xlarge:spot")
    assert not inf2.feasible and "tensor parallelism over 4 devices" in inf2.infeasible_reason
    assert inf2 not in r.ranked and inf2.id not in r.pareto_ids()
    cloud = next(o for o in r.ranked if o.kind == "cloud" and o.fits)
    offer = next(o for o in CAT.offers if f"cloud:{o.id}" == cloud.id.removesuffix(":spot"))
    assert cloud.parallelism.tp <= offer.accelerator_count or "per" in offer.instance.lower()
    text = _first_launchable_spec(r.to_json())
    assert f"option {cloud.id}" in text  # skypilot launches the cheapest cloud option that runs


def test_70b_pretrain_on_h100_is_multi_node_on_a_stated_fabric():
    r = _plan(model="llama-3-70b", workload="pretrain", accelerator=["h100-sxm"])
    index = [o for o in r.options if o.id.startswith("cloud:market-index:")]
    assert index and all(not o.feasible and o.reference and "reference price" in o.infeasible_reason for o in index)
    best = r.best()
    assert best.feasible and best.devices == 16 and best.parallelism.tp == 8
    doc = r.to_json()
    spec = render_launch("skypilot", doc)
    chosen = r.option(re.search(r"option (\S+)", spec).group(1))
    assert chosen.kind == "cloud" and chosen.feasible and not chosen.reference
    assert _assert_real_spec(spec, 8, chosen.provider.lower())["num_nodes"] == 2
    with pytest.raises(LaunchError, match="cannot run as planned"):
        render_launch("skypilot", doc, index[0].id)


def test_multi_node_is_timed_with_its_fabric():
    # Same 16 H100s on 2 instances: 800 Gb/s (a3-highgpu-8g) against 3,200 Gb/s (p5.48xlarge) per instance.
    r = _plan(model="llama-3-70b", workload="pretrain", accelerator=["h100-sxm"])
    slow, fast = r.option("cloud:gcp:a3-highgpu-8g"), r.option("cloud:aws:p5.48xlarge-2026-03-11")
    assert slow.parallelism == fast.parallelism and slow.nodes == fast.nodes == 2
    assert slow.hours > fast.hours  # dp 2 over the fabric: most of it hides behind the backward pass
    assert slow.time_split_s["communication"] > fast.time_split_s["communication"]
    for o in (slow, fast):
        assert sum(o.time_split_s.values()) == pytest.approx(o.hours * 3600.0, rel=1e-9)
    # 800 Gb/s for 8 GPUs is 12.5 GB/s per GPU: the placement says so
    offer = next(o for o in CAT.offers if o.id == "gcp:a3-highgpu-8g")
    assert cloud_placement(offer, CAT.accelerators["h100-sxm"]).inter_node_bps == pytest.approx(800e9 / 8 / 8)


def test_launch_spec_for_p5_asks_for_the_instance_accelerator_count():
    # Issue 17: the YAML asked for H100:1 on an 8-GPU instance.
    r = _plan(model="llama-3-8b", workload="lora", tokens=2e8, accelerator=["h100-sxm"])
    option_id = "cloud:aws:p5.48xlarge-2026-03-11"
    o = r.option(option_id)
    assert o.devices == 1 and o.gpus_per_node == 8 and o.nodes == 1
    spec = render_launch("skypilot", r.to_json(), option_id)
    task = _assert_real_spec(spec, 8, "aws")
    assert task["resources"]["instance_type"] == "p5.48xlarge" and "--nproc-per-node=1 " in task["run"]
    res = launch_resources(r.to_json(), option_id)
    assert (res.gpus_per_node, res.procs, res.nodes) == (8, 1, 1)


def test_home_and_onprem_nodes():
    a = plan(PlanRequest.from_mapping(dict(model="gpt2", workload="finetune")), CAT).assumptions
    acc = CAT.accelerators["rtx-4090"]
    home = owned_placement("home", acc, a)
    assert home.devices_per_node == 4 and home.inter_node_bps is None
    assert owned_placement("onprem", CAT.accelerators["h100-sxm"], a).inter_node_bps == ONPREM_INTER_NODE_BPS
    # A 70B LoRA needs 16 x 24 GiB cards: more than one rig of 4 holds, and rigs have no stated fabric.
    r = _plan(model="llama-3-70b", workload="lora", tokens=1e7, accelerator=["rtx-4090"])
    o = r.option("home:rtx-4090")
    assert o.devices > 4 and not o.feasible and "home rig" in o.infeasible_reason and "of 4 devices" in o.infeasible_reason
    # a rig of 16 holds all 16 cards: it runs
    rig16 = plan(PlanRequest.from_mapping(dict(model="llama-3-70b", workload="lora", tokens=1e7,
                                              accelerator=["rtx-4090"], assumptions={"home_gpus_per_rig": 16})), CAT)
    assert rig16.option("home:rtx-4090").feasible


def test_stale_prices_are_marked_and_dated():
    old = dataclasses.replace(next(o for o in CAT.offers if o.id == "aws:p5.48xlarge-2026-03-11"),
                              id="aws:p5.48xlarge-old", price_date="2024-06-01")
    cat = dataclasses.replace(CAT, offers=(*CAT.offers, old))
    r = plan(PlanRequest.from_mapping(dict(model="llama-3-8b", workload="lora", tokens=2e8,
                                           accelerator=["h100-sxm"])), cat)
    stale = r.option("cloud:aws:p5.48xlarge-old")
    assert stale.price_stale and not r.option("cloud:aws:p5.48xlarge-2026-03-11").price_stale
    dates = r.to_json()["catalog"]["price_dates"]
    assert dates["oldest"] == "2024-06-01" and dates["newest"] == "2026-03-15"
    # the row added here, and the bundled AWS snapshot rows of H100s (dated only as before AWS's 2025-06-05 cut)
    by_id = {o.id: o for o in cat.offers}
    assert "aws:p5.48xlarge-old" in dates["older_than_a_year"] and "aws:p5.48xlarge-snapshot" in dates["older_than_a_year"]
    assert all(i == "aws:p5.48xlarge-old" or by_id[i].price_date.startswith("on or before 2025-06-05")
               for i in dates["older_than_a_year"])
    n = len(dates["older_than_a_year"])
    assert dates["summary"].startswith(f"this plan's {dates['offers']} cloud offers: prices from 2024-06-01 to "
                                       f"2026-03-15; {n} older than a year")
    from advisor.commands.plan import render_table

    text = render_table(r, top=None)
    # the CLI header counts the same offers as the JSON (and the reports), whatever --top shows
    assert dates["summary"] in text and dates["summary"] in render_table(r, top=3)
    assert "older than a year" in text and "[price of 2024-06-01, older than a year]" in text
