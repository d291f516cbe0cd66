"""``advisor serve --report``: the serving answer, the knee chart and the options as Markdown, HTML and PDF, saying
what the command line (and the Serve page) says."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import unicodedata
from types import SimpleNamespace

import pytest

from advisor.cli import main
from advisor.report import serve_report
from advisor.report.serve_report import knee_chart_svg

FIVE_FRIENDS = ["serve", "--model", "llama-3.3-70b", "--quant", "q4_k_m", "--runtime", "llama.cpp", "--own",
                "2xrtx-3090", "--users", "5", "--prompt-tokens", "1000", "--output-tokens", "300", "--ttft-p95", "2"]


def _point(rate, ttft, stable=True):
    return SimpleNamespace(output_tokens_per_s=rate, ttft_p95_s=ttft, stable=stable)


def _option(name, owned=False):
    return SimpleNamespace(accelerator_name=name, devices_per_replica=1, runtime="vllm", owned=owned)


def test_the_knee_chart_places_points_on_log_axes_and_escapes_names():
    """Two curves, one point unstable (left out); x = 10, 100, 1000 tokens/s fall a third of the log span apart
    (the axes run from min/1.5 to max*1.5); the target is dashed; a hostile name is text, not markup."""
    curves = [(_option("<b>evil</b>", owned=True), (_point(10, 0.1), _point(100, 0.2), _point(1000, 1.0),
                                                   _point(5000, 50.0, stable=False))),
              (_option("H100"), (_point(100, 0.05), _point(1000, 0.08)))]
    svg = knee_chart_svg(curves, 2.0)
    assert svg.count("<polyline") == 2
    assert "<b>evil</b>" not in svg and "&lt;b&gt;evil&lt;/b&gt;" in svg
    assert "stroke-dasharray" in svg and "target 2 s" in svg
    first = re.search(r'<polyline points="([^"]+)"', svg).group(1)
    xs = [float(p.split(",")[0]) for p in first.split()]
    assert len(xs) == 3  # the unstable point is not drawn
    # equal steps in log10 of the rate: equal steps on the page
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1], abs=0.2)
    # the span: log10(1000*1.5) - log10(10/1.5) = 2.352 decades over 670 px; one decade = 284.9 px
    assert xs[1] - xs[0] == pytest.approx(670 / (math.log10(1500) - math.log10(10 / 1.5)), abs=0.5)


def test_the_knee_chart_says_when_nothing_fits():
    assert "nothing to chart" in knee_chart_svg([], None)


@pytest.mark.parametrize("suffix", [".md", ".html", ".pdf"])
def test_the_report_says_what_the_command_line_says(tmp_path, capsys, suffix):
    assert main(FIVE_FRIENDS) == 0
    text = capsys.readouterr().out
    path = tmp_path / f"friends{suffix}"
    assert main([*FIVE_FRIENDS, "--report", str(path)]) == 0
    capsys.readouterr()
    answer = [line.strip() for line in text.splitlines()[3:9]]  # the owned GPUs' answer, as printed
    assert answer[0].startswith("Your GPUs: 2 x GeForce RTX 3090")
    if suffix == ".pdf":
        data = path.read_bytes()
        assert data.startswith(b"%PDF-")
        if not shutil.which("pdftotext"):
            pytest.skip("pdftotext (poppler-utils) reads the PDF's text back; .ci/run installs it")
        body = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
        body = " ".join(unicodedata.normalize("NFKC", body).split())  # the PDF's "ﬁ" ligatures as two letters
        for line in answer[1:3]:
            assert " ".join(line.split()) in body
        return
    body = path.read_text()
    if suffix == ".md":
        body = body.replace("\\", "")
    else:
        import html

        body = html.unescape(body)
        assert "<svg" in body and body.count("<polyline") >= 2  # the owned GPUs and the cheapest options
    for line in answer:
        assert line in body
    assert serve_report.CHART_TITLE in body  # the chart the Serve page draws, under its title


def test_a_report_with_an_unknown_suffix_is_one_line_exit_2(tmp_path, capsys):
    assert main([*FIVE_FRIENDS, "--report", str(tmp_path / "x.docx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "use .md, .html or .pdf" in err[0]
    assert not (tmp_path / "x.docx").exists()
