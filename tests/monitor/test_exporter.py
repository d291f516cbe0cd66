"""The monitor's Prometheus endpoint: DCGM exporter names, units and labels on every simulated vendor, checked by
``promtool check metrics`` (Debian package ``prometheus``; .ci/run installs it), the books as
``advisor_process_*`` series, bounded and dropped after a process ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.cli import main
from advisor.fleet.simulated import SimulatedNode
from advisor.monitor.accounting import ProcessBooks
from advisor.monitor.exporter import MetricsExporter, exposition, metric_names, parse_listen, slurm_job_of

SCENARIOS = ["2x4090", "8xh100-sxm", "2xmi300x", "arc-b580", "m3-max"]


def samples(text: bytes) -> list:
    return [s for fam in text_string_to_metric_families(text.decode()) for s in fam.samples]


def series(text: bytes, name: str) -> list:
    return [s for s in samples(text) if s.name == name]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_promtool_accepts_every_simulated_machine(scenario):
    node = SimulatedNode(scenario)
    node.advance(1.0)
    node.advance(1.0)
    text = node.text()
    gpus = node.gpu.device_count()
    util = series(text, "DCGM_FI_DEV_GPU_UTIL")
    assert len(util) == gpus
    vendor = {"2x4090": "nvidia", "8xh100-sxm": "nvidia", "2xmi300x": "amd", "arc-b580": "intel", "m3-max": "apple"}
    assert {s.labels["vendor"] for s in util} == {vendor[scenario]}
    assert {s.labels["gpu"] for s in util} == {str(i) for i in range(gpus)}
    assert all(s.labels["UUID"] and s.labels["model_name"] and s.labels["Hostname"] for s in util)
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian package prometheus; .ci/run installs it)")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert r.returncode == 0, (r.stdout + r.stderr).decode()[:500]


def test_units_are_dcgm_units():
    """FB in MiB, energy in mJ, clocks in MHz (the DCGM exporter's default-counters.csv), from SI fields."""
    node = SimulatedNode("2x4090")
    node.advance(1.0)
    last = node.sampler.tick()
    text = node.text()
    g = last.gpus[0]

    def value(name):
        return next(s.value for s in series(text, name) if s.labels["gpu"] == "0")

    assert value("DCGM_FI_DEV_FB_USED") == pytest.approx(g.mem_used_bytes / 2**20)
    assert value("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") == pytest.approx(g.energy_j * 1000)
    assert value("DCGM_FI_DEV_SM_CLOCK") == pytest.approx(g.sm_clock_mhz)
    assert value("DCGM_FI_DEV_POWER_USAGE") == pytest.approx(g.power_w)


def test_a_figure_the_vendor_lacks_is_absent_not_zero():
    node = SimulatedNode("m3-max")  # macOS gives no power or temperature without root (advisor/hw/apple.py)
    last = node.sampler.tick()
    assert last.gpus[0].power_w is None and last.gpus[0].temp_c is None
    names = {s.name for s in samples(node.text())}
    assert "DCGM_FI_DEV_GPU_UTIL" in names
    assert not names & {"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"}
    assert not any(n.startswith("advisor_process_") for n in names)  # macOS lists no GPU processes


def test_process_energy_sums_to_the_gpu_counter_within_5_percent():
    """Over 60 simulated seconds (three periods of the simulated load), the processes' energy on each GPU adds
    up to the increase of that GPU's DCGM energy counter (mJ) over the same window."""
    node = SimulatedNode("2x4090", interval_s=0.5)
    start = {s.labels["gpu"]: s.value / 1000 for s in series(node.text(), "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")}
    for _ in range(120):
        node.advance(0.5)
    text = node.text()
    end = {s.labels["gpu"]: s.value / 1000 for s in series(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")}
    for gpu in ("0", "1"):
        procs = sum(s.value for s in series(text, "advisor_process_energy_joules_total") if s.labels["gpu"] == gpu)
        counted = end[gpu] - start[gpu]
        assert counted == pytest.approx(237.5 * 60, rel=0.01)  # 25 + 425 x mean load 0.5 W (advisor/hw/fake.py)
        assert procs == pytest.approx(counted, rel=0.05)


class _Stub:
    """A sampler and bookkeeper whose processes the test sets."""

    def __init__(self) -> None:
        self.procs: list = []
        self.books: dict = {}

    def processes(self):
        return tuple(self.procs)

    def current(self):
        return dict(self.books)


def _proc(pid, gpu=0, mem=2**30, cmdline="python train.py --token=SECRET"):
    return SimpleNamespace(pid=pid, gpu_index=gpu, gpu_mem_bytes=mem, started_s=1.0, user="u", name="python",
                           cmdline=cmdline)


def _books(pid, energy=10.0):
    return ProcessBooks(pid=pid, name="python", started_s=1.0, gpus=(0,), first_seen_s=0.0, last_seen_s=1.0,
                        gpu_hours=1.0, energy_j=energy, cost_usd=0.01, peak_gpu_mem_bytes=2**30, mean_util_pct=50.0)


def _exporter(stub, clock, **kw):
    return MetricsExporter(stub, stub, [], "node1", read_environ=False, clock=clock, **kw)


def test_series_are_bounded_and_ended_processes_dropped_after_their_time():
    now = [0.0]
    stub = _Stub()
    exp = _exporter(stub, lambda: now[0], max_processes=3, keep_ended_s=300.0)
    stub.procs = [_proc(100 + k, mem=(k + 1) * 2**30) for k in range(5)]
    stub.books = {(100 + k, 0): _books(100 + k) for k in range(5)}
    exp(SimpleNamespace(gpus=()))
    running = series(exposition(exp), "advisor_process_running")
    assert sorted(int(s.labels["pid"]) for s in running) == [102, 103, 104]  # the 3 holding the most memory
    assert all(s.value == 1 for s in running)
    stub.procs, stub.books = stub.procs[3:], {k: v for k, v in stub.books.items() if k[0] >= 103}
    now[0] = 10.0
    exp(SimpleNamespace(gpus=()))  # 100..102 ended: kept, running 0, their books final
    text = exposition(exp)
    states = {int(s.labels["pid"]): s.value for s in series(text, "advisor_process_running")}
    assert {p: v for p, v in states.items() if v == 1} == {103: 1, 104: 1}  # bounded: running first,
    assert len(states) == 3 and set(states) - {103, 104} <= {100, 101, 102}  # then one of those that ended
    assert sum(s.value for s in series(text, "advisor_process_energy_joules_total")) == pytest.approx(30.0)
    now[0] = 311.0
    exp(SimpleNamespace(gpus=()))
    pids = {int(s.labels["pid"]) for s in series(exposition(exp), "advisor_process_running")}
    assert pids == {103, 104}  # dropped 300 s after they ended


def test_command_lines_only_when_asked():
    stub = _Stub()
    stub.procs, stub.books = [_proc(7)], {(7, 0): _books(7)}
    plain = _exporter(stub, lambda: 0.0)
    plain(SimpleNamespace(gpus=()))
    assert b"SECRET" not in exposition(plain) and b"command=" not in exposition(plain)
    asked = _exporter(stub, lambda: 0.0, export_cmdline=True)
    asked(SimpleNamespace(gpus=()))
    assert b'command="python train.py --token=SECRET"' in exposition(asked)


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="reads /proc/PID/environ (Linux)")
def test_slurm_job_read_from_the_process_environment():
    child = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                             env={**os.environ, "SLURM_JOB_ID": "4242"}, stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"  # past exec: /proc shows the new environment
        assert slurm_job_of(child.pid) == "4242"
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert slurm_job_of(os.getpid()) == os.environ.get("SLURM_JOB_ID")
    assert slurm_job_of(2**31 - 1) is None


@pytest.mark.parametrize("text, want", [("9400", ("127.0.0.1", 9400)), ("0.0.0.0:9400", ("0.0.0.0", 9400)),
                                        ("[::1]:9401", ("::1", 9401)), ("node7:0", ("node7", 0))])
def test_listen_address(text, want):
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["", "x", "70000", "host:", "a b:90", "-1", "\u00b2", "host:9\u00b2"])
def test_bad_listen_address(text):
    with pytest.raises(ValueError, match=r"must be|is not a host"):  # its own line, not int()'s ('²' a digit)
        parse_listen(text)


@pytest.mark.parametrize("args, message", [
    (["--serve-metrics", "nonsense"], "--serve-metrics"),
    (["--serve-metrics", "9400", "--once"], "not with --once"),
    (["--job", "x"], "only with --serve-metrics"),
])
def test_bad_flags_are_one_line(capsys, args, message):
    assert main(["monitor", "--fake-gpu", "2x4090", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) <= 2


def test_port_in_use_is_one_line(capsys):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["monitor", "--fake-gpu", "2x4090", "--serve-metrics", f"127.0.0.1:{port}", "--duration", "1"]) == 2
    assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def test_name_mapping_is_data_with_known_units():
    names = {m.name: m for m in metric_names()}
    for required in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                     "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
        assert required in names
    assert names["DCGM_FI_DEV_FB_USED"].per_si == 1 / 2**20 and names["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"].per_si == 1e3


def test_planned_job_exported_beside_the_observed_books(tmp_path):
    from advisor.monitor.exporter import planned_job

    doc = {"schema": "advisor.plan/1", "workload": "lora", "model": {"name": "llama-3-8b"},
           "this_machine": "owned:rtx-4090",
           "options": [{"id": "cloud:x", "tokens_per_s": 5.0, "memory_per_device_bytes": 1.0},
                       {"id": "owned:rtx-4090", "tokens_per_s": 1067.3, "memory_per_device_bytes": 22691985080}]}
    plan = planned_job(doc, "train-7")
    assert (plan.job, plan.option, plan.peak_memory_bytes, plan.tokens_per_s) == (
        "train-7", "owned:rtx-4090", 22691985080.0, 1067.3)
    stub = _Stub()
    stub.procs, stub.books = [_proc(7)], {(7, 0): _books(7)}
    exp = MetricsExporter(stub, stub, [], "node1", job="train-7", read_environ=False, clock=lambda: 0.0, plan=plan)
    exp(SimpleNamespace(gpus=()))
    text = exposition(exp)
    (peak,) = series(text, "advisor_plan_peak_memory_bytes")
    assert peak.value == 22691985080.0 and peak.labels == {"job": "train-7", "option": "owned:rtx-4090",
                                                           "Hostname": "node1"}
    (observed,) = series(text, "advisor_process_peak_memory_bytes")
    assert observed.labels["job"] == "train-7"  # the same job label: predicted beside observed
    assert series(text, "advisor_plan_tokens_per_second")[0].value == 1067.3
    for bad in ({"schema": "advisor.buy/1"}, {**doc, "options": []},
                {**doc, "options": [{"id": "owned:rtx-4090", "tokens_per_s": float("nan")}]}):
        with pytest.raises(ValueError):
            planned_job(bad, None)


def test_plan_flag_reads_a_file_at_the_border(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text('{"schema": "advisor.plan/1", "options": []}')
    assert main(["monitor", "--fake-gpu", "2x4090", "--serve-metrics", "0", "--plan", str(bad),
                 "--duration", "1"]) == 2
    assert "--plan:" in capsys.readouterr().err
    assert main(["monitor", "--fake-gpu", "2x4090", "--plan", str(bad)]) == 2
