"""The live monitor engine: a sampler thread feeding bounded ring-buffer history. No Qt here.

Public API (stable; the GUI's monitor page and ``advisor monitor`` use only this):

    from advisor.hw import select_backend, select_host_backend
    from advisor.monitor import Sampler, CsvRecorder

    gpu, host = select_backend(fake=None), select_host_backend()
    sampler = Sampler(gpu, host, interval_s=1.0)   # 0.1..10 s (ValueError outside); capacity=3600 rows
    sampler.start()                                 # background thread "advisor-sampler", first tick at once
    sampler.pause(); sampler.resume(); sampler.set_interval(0.5)
    new = sampler.drain()                           # list[MonitorSample] since the last drain (GUI QTimer)
    sampler.add_listener(fn)                        # fn(MonitorSample) on the sampler thread (keep it quick)
    times, values = sampler.history.window("gpu0_power_w", 60)   # numpy arrays, NaN = not available
    sampler.history.latest("cpu_util_pct")         # float | None
    sampler.processes()                             # tuple[ProcessSample]: GPU memory + process name/user
    sampler.stop(); gpu.close()
    sampler.run(max_ticks=None, duration_s=None)   # the same schedule in the calling thread (CLI, tests)
    sampler.tick()                                  # one sample now, synchronously

``MonitorSample(seq, time_s, wall_time_s, host: HostSample, gpus: tuple[GpuSample, ...])``; a GPU that
is lost or suspended has ``state`` "lost" / "suspended" and every figure None. Metric names (history and
CSV columns) come from ``advisor.monitor.columns``: host ``cpu_util_pct``, ``mem_used_bytes``, ... per-core
``cpu<k>_util_pct`` (history only) and per GPU ``gpu<i>_util_pct``, ``gpu<i>_mem_used_bytes``,
``gpu<i>_power_w``, ``gpu<i>_temp_c``, ``gpu<i>_sm_clock_mhz``, ``gpu<i>_pcie_rx_bps`` ...
``CsvRecorder(path, gpu_count)`` is a listener that writes the ``advisor monitor --csv`` file (a symlink,
a non-regular file or a file another monitor holds is refused; a failed write keeps whole rows).
``advisor.monitor.snapshot.monitor_document`` builds ``advisor.monitor/1``; ``advisor.monitor.events``
turns samples into events (lost, asleep, not responding, Xid, throttling; ``fault`` for the banner).
Each GPU is read on its own thread with a deadline (``call_timeout_s``): a hung call marks only that GPU
"not-responding".
Tests drive the schedule without sleeping: ``Sampler(..., clock=fake_clock, wait=fake_clock.advance)``.
Laptop-safe mode (default on) reads the PCI runtime power state first and never polls a suspended GPU.
"""

from advisor.monitor.columns import GPU_METRICS, HOST_METRICS, csv_columns, gpu_metric, metric_names
from advisor.monitor.history import DEFAULT_CAPACITY, History
from advisor.monitor.recorder import CsvRecorder
from advisor.monitor.sampler import (
    DEFAULT_INTERVAL_S,
    MAX_INTERVAL_S,
    MIN_INTERVAL_S,
    MonitorSample,
    Sampler,
    check_interval,
)

__all__ = [
    "DEFAULT_CAPACITY", "DEFAULT_INTERVAL_S", "GPU_METRICS", "HOST_METRICS", "MAX_INTERVAL_S", "MIN_INTERVAL_S",
    "CsvRecorder", "History", "MonitorSample", "Sampler", "check_interval", "csv_columns", "gpu_metric",
    "metric_names",
]
