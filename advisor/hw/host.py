"""The host through psutil (the only psutil importer): CPU, memory, swap, disks, network, processes.

Every psutil call is guarded: a figure the platform does not offer (CPU frequency in many VMs, disk
counters in containers) is None, never an exception.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Callable

import psutil

from advisor.hw.records import CpuInfo, DiskInfo, HostInfo, HostProcess, HostSample, MemoryInfo

_SKIP_FSTYPES = {"squashfs", "tmpfs", "devtmpfs", "overlay", "proc", "sysfs", "iso9660", "nsfs", "autofs"}


def _guard(fn: Callable, *args, default=None, **kwargs):
    """Call a psutil function; the default when the platform lacks it or access is denied."""
    try:
        return fn(*args, **kwargs)
    except (psutil.Error, OSError, NotImplementedError, AttributeError, RuntimeError, ValueError):
        return default


def cpu_model() -> str:
    """The CPU's marketing name (from /proc/cpuinfo on Linux, platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Hardware", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def host_ids(files=MACHINE_ID_FILES) -> tuple[str, ...]:
    """Identifiers that survive a rename: the OS machine id (systemd's machine-id(5)) and the MAC
    addresses of the network interfaces, sorted; empty when none can be read."""
    ids = []
    for path in files:
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                text = f.read(64).strip()
        except OSError:
            continue
        if text:
            ids.append("machine-id:" + text)
            break
    link = getattr(psutil, "AF_LINK", None)
    macs = set()
    for name, addrs in (_guard(psutil.net_if_addrs, default={}) or {}).items():
        if name == "lo":
            continue
        for a in addrs:
            mac = str(getattr(a, "address", "") or "").lower()
            if a.family == link and mac and mac.strip("0:") != "":
                macs.add(mac)
    ids.extend("mac:" + m for m in sorted(macs))
    return tuple(ids)


class PsutilHostBackend:
    """Host facts and readings from psutil. Rates (disk, network) are per second since the previous sample.

    Args:
        clock: monotonic seconds used to turn counters into rates.
    """

    simulated = False

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last_io: tuple[float, object, object] | None = None
        self._procs: dict[int, psutil.Process] = {}
        _guard(psutil.cpu_percent, percpu=True)  # prime: the next call measures from here

    def info(self) -> HostInfo:
        vm = psutil.virtual_memory()
        swap = _guard(psutil.swap_memory)
        freq = _guard(psutil.cpu_freq)
        disks = []
        for part in _guard(psutil.disk_partitions, all=False, default=[]) or []:
            if part.fstype in _SKIP_FSTYPES or part.mountpoint.startswith(("/snap", "/boot/efi")):
                continue
            usage = _guard(psutil.disk_usage, part.mountpoint)
            if usage is not None:
                disks.append(DiskInfo(part.mountpoint, part.device, part.fstype, int(usage.total), int(usage.free)))
        return HostInfo(
            hostname=socket.gethostname(),
            os=f"{platform.system()} {platform.release()}".strip(),
            python=platform.python_version(),
            cpu=CpuInfo(
                model=cpu_model(),
                physical_cores=_guard(psutil.cpu_count, logical=False),
                logical_cores=_guard(psutil.cpu_count, logical=True) or os.cpu_count() or 1,
                arch=platform.machine(),
                min_freq_mhz=(freq.min or None) if freq else None,
                max_freq_mhz=(freq.max or None) if freq else None,
            ),
            memory=MemoryInfo(total_bytes=int(vm.total), available_bytes=int(vm.available),
                              swap_total_bytes=int(swap.total) if swap else None,
                              swap_used_bytes=int(swap.used) if swap else None),
            disks=tuple(disks),
            host_ids=host_ids(),
        )

    def sample(self) -> HostSample:
        per_core = tuple(_guard(psutil.cpu_percent, percpu=True, default=[]) or [])
        vm = _guard(psutil.virtual_memory)
        swap = _guard(psutil.swap_memory)
        freq = _guard(psutil.cpu_freq)
        now = self._clock()
        disk = _guard(psutil.disk_io_counters)
        net = _guard(psutil.net_io_counters)
        rates: dict[str, float | None] = dict.fromkeys(("dr", "dw", "nr", "nt"))
        if self._last_io is not None:
            then, disk0, net0 = self._last_io
            dt = now - then
            if dt > 0:
                if disk is not None and disk0 is not None:
                    rates["dr"] = max(0.0, (disk.read_bytes - disk0.read_bytes) / dt)
                    rates["dw"] = max(0.0, (disk.write_bytes - disk0.write_bytes) / dt)
                if net is not None and net0 is not None:
                    rates["nr"] = max(0.0, (net.bytes_recv - net0.bytes_recv) / dt)
                    rates["nt"] = max(0.0, (net.bytes_sent - net0.bytes_sent) / dt)
        self._last_io = (now, disk, net)
        return HostSample(
            cpu_util_pct=round(sum(per_core) / len(per_core), 2) if per_core else None,
            per_core_util_pct=per_core,
            cpu_freq_mhz=(freq.current or None) if freq else None,
            mem_used_bytes=int(vm.total - vm.available) if vm else None,
            mem_total_bytes=int(vm.total) if vm else None,
            mem_available_bytes=int(vm.available) if vm else None,
            swap_used_bytes=int(swap.used) if swap else None,
            disk_read_bps=rates["dr"], disk_write_bps=rates["dw"], net_rx_bps=rates["nr"], net_tx_bps=rates["nt"],
        )

    def process_details(self, pid: int) -> HostProcess:
        """Name, user, CPU %, resident memory, command line and start time of a PID; an empty record when
        the PID is not visible here (gone, or a container's)."""
        proc = self._procs.get(pid)
        try:
            if proc is None or not proc.is_running():
                proc = psutil.Process(pid)
                if len(self._procs) > 512:  # bound the cache of dead PIDs' handles
                    self._procs.clear()
                self._procs[pid] = proc
                proc.cpu_percent(None)  # prime, so the next call measures since now
            with proc.oneshot():
                name = _guard(proc.name)
                user = _guard(proc.username)
                cpu = _guard(proc.cpu_percent, None)
                mem = _guard(proc.memory_info)
                cmd = _guard(proc.cmdline)
                started = _guard(proc.create_time)
                uids = _guard(proc.uids)
            own = _owned(uids)
            return HostProcess(name=name, user=user, cpu_pct=cpu, rss_bytes=int(mem.rss) if mem else None,
                               cmdline=" ".join(cmd) if cmd else None, started_s=started, own=own)
        except (psutil.Error, OSError):
            self._procs.pop(pid, None)
            return HostProcess()

    def signal_process(self, pid: int, kill: bool = False) -> str | None:
        """Ask the current user's process ``pid`` to end (SIGTERM), or end it (SIGKILL with ``kill``).

        Returns:
            None when the signal was sent, else one line saying why not (another user's process, gone,
            no permission). Another user's process is refused here, whatever the caller offered.
        """
        try:
            proc = psutil.Process(pid)
            if not _owned(_guard(proc.uids)):
                return f"PID {pid} belongs to another user: only your own processes can be stopped"
            proc.kill() if kill else proc.terminate()
            return None
        except psutil.NoSuchProcess:
            return f"PID {pid} has already ended"
        except (psutil.Error, OSError) as exc:
            return f"could not signal PID {pid}: {exc}"

    def process_alive(self, pid: int) -> bool:
        """True while ``pid`` exists and is not a zombie."""
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except (psutil.Error, OSError):
            return False


def _owned(uids) -> bool:
    """True when the real user id of a process is this user's (POSIX); False when unknown."""
    getuid = getattr(os, "getuid", None)
    return uids is not None and getuid is not None and uids.real == getuid()
