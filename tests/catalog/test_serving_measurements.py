"""The serving set (resources/measurements/{serving,ttft,tpot}.csv) against the figures its sources print.

Each MLPerf Inference row is one replica's share of a submission's server run: the completed tokens/s and the
scheduled samples/s of its mlperf_log_summary.txt over the replicas its configuration runs, the first-token and
time-per-output-token percentiles as printed (ns to ms). Each SGLang cookbook row is one bench_serving result block
of the page: output token throughput, mean and median TTFT, median TPOT and median ITL as printed, the mean lengths
the printed totals over the successful requests. The figures below are typed from the sources (quoted in the
comments), not from the rows."""

from __future__ import annotations

import pytest

from advisor.catalog.measurements import bundled_measurements
from advisor.estimate import calibration as C


@pytest.fixture(scope="module")
def rows():
    return {m.row_id: m for m in bundled_measurements(C.SERVE_GROUPS)}


# row id: (replicas, "Completed tokens per second", "Scheduled samples per second", first token mean/p50/p95 ns,
# time to output token p50/p95 ns), each from the submission's Server/performance/run_1/mlperf_log_summary.txt
MLPERF = {
    # closed/RedHat/results/L40S-RedHat-OpenShift/llama2-70b-99.9; code README: "When running on 4xL40S, we
    # created two copies"
    "mlperf-inference-v4.1-redhat-l40s-llama2-70b-server": (
        2, 1469.19, 5.01, (277734743, 230849666, 542471161), (121210374, 135452527)),
    # closed/Dell/results/XE9680_MI300X_192GBx8/llama2-70b-99.9 (eight single-GPU instances, an assumption)
    "mlperf-inference-v4.1-dell-8xmi300x-llama2-70b-server": (
        8, 19886.10, 68.65, (1203928035, 1207298076, 1560571371), (143904109, 183843169)),
    # closed/Supermicro/...SYS_821GE_TNHR_H100_SXM_80GBx8_TRT/llama2-70b-99; configs: H100_SXM_80GB_TP2x4
    "mlperf-inference-v4.1-supermicro-h100x8-llama2-70b-server": (
        4, 21986.02, 76.50, (325362413, 307084099, 452897847), (173667671, 183363910)),
    # closed/Supermicro/...SYS_821GE_TNHR_H100_SXM_80GBx8_TRT/mixtral-8x7b; configs: H100_SXM_80GBx8, TP 1
    "mlperf-inference-v4.1-supermicro-h100x8-mixtral-8x7b-server": (
        8, 50676.87, 347.57, (256714231, 173073652, 816112435), (109226688, 120296924)),
    # closed/Lenovo/results/Lenovo_8xH200_TRT/llama2-70b-99; configs: Lenovo_8xH200 from H200_SXM_141GBx1
    "mlperf-inference-v4.1-lenovo-8xh200-llama2-70b-server": (
        8, 30438.66, 105.21, (253230247, 229670248, 463903742), (164797586, 182269024)),
    # closed/Lenovo/results/SR675_V3_8xH100_NVL_TRT/llama2-70b-99.9; configs: SR675_V3_8XH100_NVL, TP 1
    "mlperf-inference-v4.1-lenovo-8xh100nvl-llama2-70b-server": (
        8, 13074.68, 45.03, (138908196, 120884416, 262120200), (66391013, 80977340)),
    # closed/NVIDIA/results/H200-SXM-141GBx8_TRT/mixtral-8x7b
    "mlperf-inference-v4.1-nvidia-h200x8-mixtral-8x7b-server": (
        8, 57177.20, 392.18, (227612110, 215435032, 497708192), (139232802, 157436397)),
    # closed/HPE/results/HPE_Cray_XD670_H100_SXM_80GBx8_TRT/llama2-70b-99; configs: H100_SXM_80GB_TP2x4
    "mlperf-inference-v4.1-hpe-h100x8-llama2-70b-server": (
        4, 23132.81, 80.10, (228984569, 226729131, 331247832), (128438113, 137547921)),
    # closed/Fujitsu/results/GX2560M7_H100_SXM_80GBx4_TRT/llama2-70b-99; configs: H100_SXM_80GB_TP2x2
    "mlperf-inference-v4.1-fujitsu-h100x4-llama2-70b-server": (
        2, 9493.99, 32.97, (289269432, 284921733, 431862446), (170697150, 183530940)),
    # v5.0 closed/AMD/results/8xMI325X_2xEPYC_9575F/llama2-70b-99.9; "harness_config.data_parallel_size=8"
    "mlperf-inference-v5.0-amd-8xmi325x-llama2-70b-server": (
        8, 30724.51, 104.31, (1060314084, 1035533586, 1718192216), (162036490, 177654783)),
    # v5.0 closed/ASUSTeK/results/ESC_A8A_MI325X_256GBx8/llama2-70b-99.9; "harness_config.data_parallel_size=8"
    "mlperf-inference-v5.0-asustek-8xmi325x-llama2-70b-server": (
        8, 30086.52, 103.24, (1021782330, 1015004030, 1625789205), (144835982, 159560983)),
}


@pytest.mark.parametrize("row_id", sorted(MLPERF))
def test_an_mlperf_server_row_is_one_replicas_share_of_its_summary(rows, row_id):
    replicas, tokens, scheduled, ttft, tpot = MLPERF[row_id]
    m = rows[row_id]
    assert m.group == "serving" and m.unit == "tokens/s"
    assert m.value == pytest.approx(tokens / replicas, abs=0.006)
    assert float(dict(m.settings)["requests_per_s"]) == pytest.approx(scheduled / replicas, abs=6e-5)
    for stat, ns in zip(("mean", "p50", "p95"), ttft):
        t = rows[f"{row_id}-ttft-{stat}"]
        assert (t.group, t.statistic, t.settings) == ("ttft", stat, m.settings)
        assert t.value == pytest.approx(ns * 1e-9, rel=1e-9)
    for stat, ns in zip(("p50", "p95"), tpot):
        t = rows[f"{row_id}-tpot-{stat}"]
        assert (t.group, t.statistic, t.settings) == ("tpot", stat, m.settings)
        assert t.value == pytest.approx(ns * 1e-9, rel=1e-9)


def test_a_mixtral_rows_answer_length_is_its_summarys_tokens_per_sample(rows):
    # "Completed tokens per second: 57177.20" over "Completed samples per second: 391.79" = 145.9
    assert rows["mlperf-inference-v4.1-nvidia-h200x8-mixtral-8x7b-server"].output_tokens == round(57177.20 / 391.79)
    # "50676.87" over "347.25" = 145.9
    assert rows["mlperf-inference-v4.1-supermicro-h100x8-mixtral-8x7b-server"].output_tokens == round(50676.87 / 347.25)


# row id: (requests, "Total input tokens", "Total generated tokens", "Output token throughput (tok/s)",
# "Mean TTFT (ms)", "Median TTFT (ms)", "Median TPOT (ms)", "Median ITL (ms)"), one block of each page
COOKBOOK = {
    # docs/autoregressive/Llama/Llama3.1.md, 5.1.1.2 Medium Concurrency (8x A100, TP8)
    "sglang-cookbook-llama-3.1-70b-a100x8-1000in-1000out-c16": (80, 39668, 40805, 513.48, 264.84, 147.02, 26.08, 23.95),
    # DeepSeek-V3_1.md, --random-input-len 8000 --random-output-len 1000 --max-concurrency 64 (8x MI300X)
    "sglang-cookbook-deepseek-v3.1-mi300xx8-8000in-1000out-c64": (
        320, 1273893, 170000, 601.67, 786.69, 499.38, 103.45, 55.7),
    # DeepSeek-R1.md, DeepSeek-R1-0528, 1000 in, 8000 out, --max-concurrency 16 (8x B200)
    "sglang-cookbook-deepseek-r1-0528-b200x8-1000in-8000out-c16": (
        80, 39668, 318226, 912.02, 176.02, 153.75, 15.59, 15.17),
    # Qwen3.md, 5.1.1.3 High Concurrency (Qwen3-235B-A22B-Instruct-2507, 8x B200)
    "sglang-cookbook-qwen3-235b-a22b-2507-b200x8-1000in-1000out-c100": (
        500, 249831, 252162, 2738.78, 260.55, 122.68, 34.04, 23.54),
    # Llama4.md, 5.2.2 Medium Concurrency (Balanced), Llama-4-Maverick on MI300X
    "sglang-cookbook-llama-4-maverick-mi300xx8-1000in-1000out-c16": (
        80, 39668, 40805, 1328.41, 259.30, 72.60, 10.22, 9.10),
    # OpenAI/GPT-OSS.md, 5.1.2 Throughput-Sensitive Benchmark (gpt-oss-120b, 8x B200, ShareGPT)
    "sglang-cookbook-gpt-oss-120b-b200x8-sharegpt-c100": (1000, 297156, 192432, 7773.26, 102.94, 31.53, 11.00, 5.75),
    # Qwen/Qwen3-Next.md, 5.1.1 Latency-Sensitive Benchmark (8x B200, ShareGPT)
    "sglang-cookbook-qwen3-next-80b-a3b-b200x8-sharegpt-c1": (100, 33839, 21640, 147.70, 127.88, 132.88, 6.17, 6.16),
}


@pytest.mark.parametrize("row_id", sorted(COOKBOOK))
def test_a_cookbook_row_is_its_pages_bench_serving_block(rows, row_id):
    n, tokens_in, tokens_out, throughput, ttft_mean, ttft_p50, tpot_p50, itl_p50 = COOKBOOK[row_id]
    m = rows[row_id]
    assert m.value == pytest.approx(throughput, abs=1e-9)
    assert (m.prompt_tokens, m.output_tokens) == (round(tokens_in / n), round(tokens_out / n))
    assert m.batch == int(row_id.rsplit("-c", 1)[1]) and m.arrivals == "steady"
    for suffix, ms in (("ttft-mean", ttft_mean), ("ttft-p50", ttft_p50), ("tpot-p50", tpot_p50),
                       ("tpot-itl_p50", itl_p50)):
        assert rows[f"{row_id}-{suffix}"].value == pytest.approx(ms * 1e-3, rel=1e-9)


def test_a_cold_start_mean_in_ten_requests_is_kept_and_not_fitted(rows):
    # Llama4.md, Llama-4-Scout at --max-concurrency 1: "Mean TTFT (ms): 4246.98", "Median TTFT (ms): 68.57",
    # "P99 TTFT (ms): 48091.05"
    m = rows["sglang-cookbook-llama-4-scout-mi300xx8-1000in-1000out-c1-ttft-mean"]
    assert m.value == pytest.approx(4.24698) and "cold start" in m.excluded
    assert not rows["sglang-cookbook-llama-4-scout-mi300xx8-1000in-1000out-c1-ttft-p50"].excluded


def test_each_serving_figure_has_a_hundred_rows_from_ten_sources_with_moe_and_mi300x(rows):
    for group in C.SERVE_GROUPS:
        mine = [m for m in rows.values() if m.group == group]
        assert len(mine) >= 100 and len({m.source_id for m in mine}) >= 10, group
    models = {m.model for m in rows.values()}
    assert {"mixtral-8x7b", "deepseek-v3", "deepseek-v3.1", "qwen3-235b-a22b-2507", "gpt-oss-120b"} <= models
    assert {"mi300x", "mi325x", "l40s", "h100-nvl", "b200", "a100-80gb-sxm"} <= {m.accelerator_id for m in rows.values()}
    # every source added here has all three figures
    for source in {m.source_id for m in rows.values() if m.row_id.startswith(("sglang-cookbook", "mlperf"))}:
        assert {m.group for m in rows.values() if m.source_id == source} == set(C.SERVE_GROUPS), source


def test_nims_inter_token_latency_is_a_mean_time_per_output_token_at_its_concurrency(rows):
    # NIM LLM Benchmarking, Performance, Llama-3.3-70b-instruct 1.8.0, 2 x H100 80G, fp8 TP2, 5000 in / 500 out:
    # "| 5 | 546.7 | 21.83 | 218.48 |", "| 25 | 688.69 | 38.75 | 623.4 |", "| 50 | 834.51 | 59.73 | 814.37 |"
    for users, itl, tokens in ((5, 21.83, 218.48), (25, 38.75, 623.4), (50, 59.73, 814.37)):
        m = rows[f"nim-l33-70b-5000in-500out-c{users}-tpot-mean"]
        assert (m.value, m.statistic, m.batch) == (pytest.approx(itl * 1e-3), "mean", users)
        assert rows[f"nim-l33-70b-5000in-500out-c{users}"].value == pytest.approx(tokens)
