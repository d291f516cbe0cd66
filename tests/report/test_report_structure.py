"""Reports people send: one page per scenario (headline, chosen option, five alternatives, memory chart, cost
parts, changed assumptions with their origin), the option tables in an appendix; three scenarios in at most
twelve PDF pages (with the monthly view and every assumption); HTML and Markdown in the same order."""

from __future__ import annotations

import re

import pytest

from advisor.report import render_report, write_report
from advisor.report.content import money, sections

SCENARIOS = (
    ["--model", "llama-3-8b", "--workload", "lora"],
    ["--model", "mistral-7b", "--workload", "finetune", "--electricity-usd-per-kwh", "0.30"],
    ["--model", "llama-2-13b", "--workload", "inference"],
)


@pytest.fixture(scope="module")
def three_plans():
    import json
    import subprocess
    import sys

    docs = []
    for args in SCENARIOS:
        out = subprocess.run([sys.executable, "-m", "advisor", "plan", *args, "--json", "--sensitivity"], capture_output=True,
                             text=True, timeout=120, check=True)
        docs.append(json.loads(out.stdout))
    return docs


def test_scenario_page_holds_the_decision(three_plans):
    secs = sections(three_plans)
    for s in secs:
        assert s.chosen is not None and s.chosen["fits"]
        assert len(s.alternatives) == 5
        costs = [s.chosen["cost_usd"], *(o["cost_usd"] for o in s.alternatives)]
        assert costs == sorted(costs)  # the chosen one is the cheapest, the next five follow
        assert dict(s.memory_parts)["weights"] > 0


def test_changed_assumptions_name_their_value_default_and_origin():
    doc = {"schema": "advisor.plan/1", "options": [], "assumptions": {
        "electricity_usd_per_kwh": {"value": 0.30, "unit": "USD/kWh", "origin": "scenario file home.toml"},
        "home_load_factor": {"value": 0.9, "unit": "fraction of TDP", "origin": "assumption"}}}
    (s,) = sections([doc])
    assert s.changed_assumptions == (("electricity_usd_per_kwh", 0.30, "USD/kWh", "scenario file home.toml", 0.17),)
    html = render_report([doc], "html")
    assert "scenario file home.toml" in html and "Nothing fits" in html


def test_html_and_markdown_follow_the_same_structure(three_plans):
    html = render_report(three_plans, "html")
    md = render_report(three_plans, "md")
    html_heads = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h[23]>(.*?)</h[23]>", html)]
    md_heads = [h for h in re.findall(r"^#{2,3} (.*)$", md, flags=re.M)]
    # the same sections in the same order (the HTML escapes what Markdown writes plainly)
    assert [h.replace("&amp;", "&") for h in html_heads] == md_heads
    assert md_heads[0] == "Summary" and md_heads[1].startswith("1. ") and any(h.startswith("A3. ") for h in md_heads)


def test_three_scenarios_fit_in_eight_pdf_pages(three_plans, tmp_path):
    path = write_report(three_plans, tmp_path / "three.pdf")
    data = path.read_bytes()
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    # a page per scenario, appendix A (the options and the monthly view of owning against renting) and appendix B
    # (every assumption, once, a value per scenario)
    assert 5 <= pages <= 12, pages


def test_scenario_pages_show_the_tornado_and_serving_costs_per_million(three_plans):
    html = render_report(three_plans, "html")
    md = render_report(three_plans, "md")
    assert html.count('aria-label="What moves the total cost most') == 3  # one tornado per scenario page
    assert md.count("![What moves the total cost most]") == 3
    secs = sections(three_plans)
    serving = secs[2]
    assert serving.tornado["option"] == serving.chosen["id"]
    per_m = serving.chosen["usd_per_million_tokens"]
    # the serving scenario's tables carry $ per million tokens and requests; the training ones do not
    assert "$/M tokens" in html and "$/M requests" in html and money(per_m) in html
    first_page = html.split('<div class="scenario"')[1]
    assert "$/M tokens" not in first_page
    bars = serving.tornado["bars"]
    assert [b["swing_usd"] for b in bars] == sorted((b["swing_usd"] for b in bars), reverse=True)


def test_a_report_leads_with_the_users_gpus_as_the_screen_does(capsys):
    """With GPUs of one's own, the report's headline is the plan's (the CLI and the Planner page): the owned
    option first, then the cheapest rent; the chosen option is the owned one even when a rent is cheaper."""
    import json

    from advisor.cli import main
    from advisor.report.markdown import render_markdown

    assert main(["plan", "--model", "llama-3.1-8b", "--workload", "qlora", "--own", "1xrtx-3090", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (s,) = sections([doc])
    assert s.headline == " ".join(doc["headline"])
    assert s.headline.startswith("Your GPUs (1 x GeForce RTX 3090): fits")
    assert s.chosen["id"] == "owned:rtx-3090"
    assert s.chosen["id"] not in [o["id"] for o in s.alternatives]
    assert f"**{s.headline}**" in render_markdown([s]).replace("\\", "")
