"""Machine page: a card per CPU and GPU with detected figures, catalog peaks and measured results.

Shown first at start-up: detection runs in a worker, the page says so while it runs, and each GPU card
shows live readings (utilisation, memory, power, temperature) from the shared sampler once it starts.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Slot
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.safe_text import rich
from advisor.gui.widgets.cards import CardWidget
from advisor.probes.labels import is_measured, kernel_label, kernel_value, run_mode
from advisor.units import fmt_bytes, fmt_date, fmt_hours, fmt_mem, fmt_rate, sig3

UTIL_TIP = ("NVML utilisation: the share of the last sample period (1/6 s to 1 s, set by the driver) in which at "
            "least one kernel was running. It is time occupancy, not how busy the SMs were: a GPU at 100 % can "
            "still be far from its peak FLOP/s.")
PCIE_TIP = "PCIe link generation and lane count now / the most the card and slot support."


def _tf(v):
    return "—" if not v else f"{sig3(v / 1e12)} TFLOP/s"


def peak_rows(acc) -> list[tuple[str, str, str]]:
    """Catalog peak rows of an accelerator (dense tensor figures, as the catalog stores them)."""
    rows = [("memory (catalog)", f"{fmt_mem(acc.memory_bytes)} {acc.memory_type}",
             "device memory on paper (GB = 1e9 bytes; a card sold as 24 GB holds 24 GiB = 25.8 GB)"),
            ("bandwidth (catalog)", fmt_rate(acc.mem_bandwidth_bps / 1e9, "GB/s"), "peak memory bandwidth on paper")]
    peaks = [f"{p} {_tf(getattr(acc, f'{p}_flops'))}" for p in ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4")
             if getattr(acc, f"{p}_flops")]
    if acc.int8_ops:
        peaks.append(f"int8 {sig3(acc.int8_ops / 1e12)} TOP/s")
    rows.append(("compute peaks", " · ".join(peaks), "dense tensor peaks per precision (no 2:4 sparsity)"))
    if acc.tdp_w:
        rows.append(("board power (catalog)", f"{acc.tdp_w:,.0f} W", "TDP / total board power"))
    return rows


def _what_fits(owned, catalog, host):
    """The largest preset per workload on this machine and at what setting (worker thread: the planner is
    imported there, not on the GUI thread at start-up)."""
    from advisor.gui.plan_service import what_fits

    return what_fits(owned, catalog, None, host)


class MachinePage(Page):
    """Cards describing this machine; the first page people see."""

    page_id = "machine"
    title = "Machine"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        self._live: dict[int, dict[str, QLabel]] = {}
        self._gpu_cards: dict[int, tuple[CardWidget, str]] = {}  # index -> (card, its title as detected)
        self._fits_worker = None
        self._fits_card: CardWidget | None = None
        self.fits: list | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        outer.addWidget(scroll)
        body = QWidget()
        scroll.setWidget(body)
        self._layout = QVBoxLayout(body)
        self._layout.setContentsMargins(16, 12, 16, 12)
        self.heading = QLabel("<h2 style='margin:0'>This machine</h2>")
        self._layout.addWidget(self.heading)
        self.summary = QLabel("Detecting the CPU, memory and GPUs…")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)  # names in it go through rich()
        self.summary.setObjectName("machineSummary")
        self._layout.addWidget(self.summary)
        self.current_job = QLabel()  # the app's current job on this machine (from ctx.plan, never planned here)
        self.current_job.setObjectName("machineCurrentJob")
        self.current_job.setWordWrap(True)
        self.current_job.setTextFormat(Qt.TextFormat.RichText)
        self.current_job.setVisible(False)
        self._layout.addWidget(self.current_job)
        self._grid = QGridLayout()
        self._grid.setSpacing(12)
        self._grid.setColumnStretch(0, 1)
        self._grid.setColumnStretch(1, 1)
        self._layout.addLayout(self._grid)
        self._layout.addStretch(1)
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._on_timer_timeout)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        ctx.local_ready.connect(self._on_ctx_local_ready)
        ctx.hardware_failed.connect(self._on_ctx_hardware_failed)
        ctx.probe_result.connect(self._on_ctx_probe_result)
        ctx.gpu_events.connect(self._on_ctx_gpu_events)
        if ctx.has_plan_model:  # the plan model is built by the first page that plans, not at start-up
            self._on_ctx_plan_model_ready(ctx.plan)
        else:
            ctx.plan_model_ready.connect(self._on_ctx_plan_model_ready)
        if ctx.machine is not None:
            self._build(ctx.machine)

    # ------------------------------------------------------------ the current job
    @Slot(object)
    def _on_ctx_plan_model_ready(self, model) -> None:
        model.plan_ready.connect(self._on_plan_changed)
        model.stale_changed.connect(self._on_plan_changed)
        self._on_plan_changed()

    @Slot()
    def _on_plan_changed(self, *_args) -> None:
        """One line: does the current job fit this machine, and how long would it take (read from the plan).
        Written when the page is shown: while another page is (the Planner, re-planning on every edit), the
        line waits for :meth:`on_shown`."""
        if not self.isVisible():
            self._job_line_due = True
            return
        self._write_job_line()

    def _write_job_line(self) -> None:
        self._job_line_due = False
        from advisor.gui.plan_service import WORKLOAD_WORDS, per_accelerator

        model, m = self.ctx.plan, self.ctx.machine
        result = model.result
        ids = [g.catalog_id for g in m.gpus if g.catalog_id] if m is not None else []
        if result is None or not ids:
            self.current_job.setVisible(False)
            return
        t = themes.current()
        here = next((r for r in per_accelerator(result) if r["accelerator"] == ids[0]), None)
        work = dict(WORKLOAD_WORDS).get(result.request.workload, result.request.workload)
        job = f"{work} {rich(result.model_name or 'custom model')}"
        count = ids.count(ids[0])
        if here is None and result.request.accelerator and ids[0] not in result.request.accelerator:
            verdict = f"<span style='color:{t.muted}'>not planned on this GPU (the job is restricted to others)</span>"
        elif here is None:
            reason = next((o.infeasible_reason for o in result.infeasible if o.accelerator == ids[0]), "")
            verdict = f"<span style='color:{t.bad}'>cannot run here</span>" + (f" ({rich(reason)})" if reason else "")
        elif here["fits"] and here["devices"] <= count:
            verdict = (f"<span style='color:{t.good}'>fits on {here['devices']} of your {count}</span>, about "
                       f"{fmt_hours(here['hours'])}")
        else:
            verdict = f"<span style='color:{t.bad}'>needs {here['devices']} (you have {count})</span>" if here["fits"] \
                else f"<span style='color:{t.bad}'>does not fit</span>"
        self.current_job.setText(f"Current job (Planner, Ctrl+4): <b>{job}</b>: {verdict}.")
        self.current_job.setVisible(True)

    # ------------------------------------------------------------ building
    @Slot(object)
    def _on_ctx_machine_ready(self, profile) -> None:
        self._build(profile)
        if self.ctx.has_plan_model:
            self._on_plan_changed()

    @Slot(str)
    def _on_ctx_hardware_failed(self, reason: str) -> None:
        self.summary.setText(f"Detection failed: {rich(reason, None)}")

    def _build(self, m) -> None:
        self.ctx.load_probe_results()
        while self._grid.count():
            w = self._grid.takeAt(0).widget()
            if w:
                w.deleteLater()
        self._live.clear()
        self._gpu_cards.clear()
        cards = [self._host_card(m)] + [self._gpu_card(m, g) for g in m.gpus]
        if not m.gpus:
            cards.append(self._no_gpu_card(m))
        else:
            self._fits_card = CardWidget("What fits on this machine", "the largest model preset per workload on "
                                         "its GPUs, as it is or with the change that makes it fit; the planner's "
                                         "default budget, priced at its electricity")
            cards.insert(1, self._fits_card)
            self._start_fits(m)
        cards.append(self._software_card(m))
        for i, card in enumerate(cards):
            self._grid.addWidget(card, i // 2, i % 2, Qt.AlignmentFlag.AlignTop)
        self.summary.setText(self._summary_text(m))
        self._on_ctx_gpu_events(self.ctx.event_log)
        self._timer.start()
        self._on_timer_timeout()

    def _summary_text(self, m) -> str:
        host = m.host
        parts = [f"<b>{rich(host.cpu.model)}</b>, {host.cpu.logical_cores} logical cores, "
                 f"{fmt_mem(host.memory.total_bytes)} RAM"]
        if m.gpus:
            names: dict[str, int] = {}
            for g in m.gpus:
                key = "GPU asleep, not woken" if g.info.state == "suspended" else g.catalog_name or g.info.name
                names[key] = names.get(key, 0) + 1
            total = sum(g.info.memory_total_bytes or 0 for g in m.gpus)
            parts.append(", ".join(f"{n}× {rich(k)}" for k, n in names.items())
                         + (f" ({fmt_mem(total)} GPU memory in all)" if total else ""))
        else:
            parts.append("no GPU found: " + rich(m.gpu_backend.status))
        text = " · ".join(parts)
        text += ("<br>Next: open <b>Planner</b> (Ctrl+4) to see which models fit here and how long a job takes, "
                 "or <b>Monitor</b> (Ctrl+2) to watch the GPUs live.")
        return text

    def _host_card(self, m) -> CardWidget:
        h = m.host
        card = CardWidget(f"CPU · {h.cpu.model}", f"{h.hostname} · {h.os} · Python {h.python}")
        cores = f"{h.cpu.physical_cores or '?'} physical / {h.cpu.logical_cores} logical"
        card.add_row("cores", cores, "physical cores run the bandwidth probes; logical includes SMT threads")
        if h.cpu.max_freq_mhz:
            card.add_row("frequency", f"{(h.cpu.min_freq_mhz or 0):,.0f} – {h.cpu.max_freq_mhz:,.0f} MHz")
        card.add_row("memory", f"{fmt_mem(h.memory.total_bytes)} total, "
                     f"{fmt_mem(h.memory.available_bytes)} available at start", "host RAM; GB = 1e9 bytes")
        if h.memory.swap_total_bytes:
            card.add_row("swap", fmt_mem(h.memory.swap_total_bytes))
        for d in h.disks[:4]:
            card.add_row(f"disk {d.mountpoint}", f"{fmt_bytes(d.free_bytes)} free of {fmt_bytes(d.total_bytes)} "
                         f"({d.fstype})", "GB = 1e9 bytes")
        self._live[-1] = {"cpu": card.add_row("CPU load now", "—", "mean over all logical cores, %"),
                          "ram": card.add_row("RAM used now", "—", "host memory in use")}
        self._add_probe_rows(card, "cpu")
        return card

    def _gpu_card(self, m, g) -> CardWidget:
        info = g.info
        t = themes.current()
        asleep = info.state == "suspended"
        match = g.catalog_name or ("not read while asleep" if asleep else "not in the catalog")
        title = f"GPU {info.index} · " + ("asleep, not woken" if asleep else info.name)
        card = CardWidget(title, f"catalog match: {match}" + (f" ({g.catalog_id})" if g.catalog_id else ""))
        self._gpu_cards[info.index] = (card, title)
        if asleep:
            card.add_row("state", "asleep (runtime power saving)", "the app reads the PCI power state first and does "
                         "not query a sleeping GPU, which would wake it and drain a laptop's battery", color=t.warn)
        elif not info.available:
            card.add_row("state", info.state, "lost: fell off the bus or the driver lost it", color=t.bad)
        if info.memory_total_bytes:
            card.add_row("memory", fmt_mem(info.memory_total_bytes), "reported by the driver")
        if info.compute_capability:
            card.add_row("compute capability", "%d.%d" % info.compute_capability)
        if g.nvml_mem_bandwidth_bps:
            card.add_row("bandwidth (driver)", fmt_rate(g.nvml_mem_bandwidth_bps / 1e9, "GB/s"),
                         "max memory clock × bus width × 2 / 8, from the driver's figures")
        if info.pcie_gen_max:
            cur = f"Gen{info.pcie_gen_current or '?'} x{info.pcie_width_current or '?'}"
            mx = f"Gen{info.pcie_gen_max} x{info.pcie_width_max or '?'}"
            slow = ((info.pcie_gen_current or 0) < info.pcie_gen_max
                    or (info.pcie_width_current or 0) < (info.pcie_width_max or 0))
            text = f"{cur} (max {mx})" + ("  ⚠ trained below its maximum" if slow else "")
            tip = PCIE_TIP + (" An idle GPU may lower its link to save power; check under load." if slow else "")
            card.add_row("PCIe link", text, tip, color=t.warn if slow else None)
        if info.power_limit_w:
            card.add_row("power limit", f"{info.power_limit_w:,.0f} W")
        if info.nvlink_links_active:
            card.add_row("NVLink", f"{info.nvlink_links_active} links active")
        acc = self.ctx.catalog.accelerators.get(g.catalog_id) if g.catalog_id else None
        if acc is not None:
            card.add_rows(peak_rows(acc))
        self._live[info.index] = {
            "util": card.add_row("utilisation now", "—", UTIL_TIP),
            "mem": card.add_row("memory used now", "—", "memory allocated on the device"),
            "power": card.add_row("power / temperature", "—", "board power draw and GPU temperature"),
        }
        self._add_probe_rows(card, f"cuda:{info.index}")
        return card

    def _start_fits(self, m) -> None:
        from advisor.gui.workers import GeneratorWorker

        local = self.ctx.local
        if local is None and not self.ctx.local_known:  # read off the GUI thread after detection: local_ready
            self._fits_card.clear_rows()
            self._fits_card.add_row("planning…", "reading this machine for the planner")
            return
        if local is None:
            self._fits_card.clear_rows()
            self._fits_card.add_row("not planned", f"this machine could not be read for the planner: "
                                    f"{self.ctx.local_error}")
            return
        owned = local.owned
        if not owned or self._fits_worker is not None:
            if not owned and m.gpus and all(g.info.state == "suspended" for g in m.gpus):
                self._fits_card.add_row("GPU asleep", "its name is read when a program wakes it (the app does not "
                                        "wake it); the Planner plans for any accelerator you pick meanwhile")
            elif not owned:
                self._fits_card.add_row("unknown GPU", "the driver does not report enough to plan for this GPU: "
                                        "add it with Edit overrides… on the Catalog page (Ctrl+6)")
            return
        if self.fits is not None:
            self._show_fits()
            return
        hw = owned[0]
        derived = " (derived from the driver's figures)" if hw.accelerator.derived else ""
        self._fits_card.add_row("planning…", f"{hw.count}× {hw.accelerator.name}{derived}")
        self._fits_worker = GeneratorWorker(_what_fits, owned, self.ctx.catalog, local.host, parent=self)
        self._fits_worker.result_ready.connect(self._on_fits_result_ready)
        self._fits_worker.done.connect(self._on_fits_done)
        self._fits_worker.start()

    @Slot()
    def _on_ctx_local_ready(self) -> None:
        m = self.ctx.machine
        if m is not None and m.gpus and self._fits_card is not None and self.fits is None \
                and self._fits_worker is None:
            self._fits_card.clear_rows()
            self._start_fits(m)

    @Slot(object)
    def _on_fits_result_ready(self, rows) -> None:
        self.fits = rows
        self._show_fits()

    @Slot()
    def _on_fits_done(self) -> None:
        from advisor.gui.workers import release

        worker, self._fits_worker = self._fits_worker, None
        release(worker)

    def _show_fits(self) -> None:
        from advisor.gui.widgets.what_fits import OwnedSettingWidget, WhatFitsWidget

        card = self._fits_card
        if card is None:
            return
        card.clear_rows()
        self.fits_list = WhatFitsWidget()
        self.fits_list.set_rows(self.fits or [])
        self.fits_list.plan_requested.connect(self._on_fits_list_plan_requested)
        card.add_widget(self.fits_list)
        self.own_setting = OwnedSettingWidget(self.ctx)
        card.add_widget(self.own_setting)
        self.name_controls()  # the card's buttons and field came after the page was named (screen readers)

    @Slot(dict)
    def _on_fits_list_plan_requested(self, values: dict) -> None:
        """One click: the Planner opens on the row's job (its inputs, as a scenario is opened)."""
        self.ctx.plan.load(values)
        self.ctx.page_requested.emit("planner")

    def _no_gpu_card(self, m) -> CardWidget:
        card = CardWidget("No GPU found", m.gpu_backend.status)
        card.add_row("what still works", "Planner, Compare and Catalog work without a GPU; the CPU probes measure "
                     "this machine's memory bandwidth and matmul speed.")
        return card

    def _software_card(self, m) -> CardWidget:
        b = m.gpu_backend
        card = CardWidget("Drivers and frameworks", f"GPU backend: {b.name} — {b.status}")
        card.add_row("driver", b.driver_version or "—", "NVIDIA driver version")
        card.add_row("CUDA (driver)", b.cuda_driver_version or "—", "highest CUDA version the driver supports")
        card.add_row("NVML", b.nvml_version or "—")
        card.add_row("torch", m.torch.status, "torch is imported only when a probe runs, to keep the app light")
        card.add_row("JAX", m.jax.status)
        for note in m.notes:
            card.add_row("note", note)
        return card

    def _add_probe_rows(self, card: CardWidget, device: str) -> None:
        results = [r for r in self.ctx.probe_results.values() if r.device == device and not r.skipped]
        if not results:
            card.add_row("measured", "no probe run yet: Probes page (Ctrl+3)",
                         "probe results appear here beside the catalog peaks")
            return
        labelled: set[str] = set()
        # the dedicated probe first: on the CPU the host-bandwidth probe and the device-bandwidth probe both
        # measure host memory under one label; the row shows the host-bandwidth (STREAM) figure once
        for r in sorted(results, key=lambda r: (r.probe != "host-bandwidth", r.probe)):
            when = f" · {fmt_date(r.started_at)}" if r.started_at else ""
            when += f" · {run_mode(r.params)} run"
            shown = [(name, k) for name, k in r.results.items()
                     if is_measured(k.best) and kernel_label(r.probe, name, device) not in labelled][:4]
            for name, k in shown:
                label = kernel_label(r.probe, name, device)
                labelled.add(label)
                frac = f" ({100 * k.fraction_of_peak:.0f} % of peak)" if k.fraction_of_peak else ""
                card.add_row(label, f"{kernel_value(k.best, k.unit)}{frac}{when}",
                             f"measured on {device}: the best of the per-trial medians of {k.repetitions} "
                             "repetition(s); the date of the run; quick or full")
            missing = [name for name, k in r.results.items() if not is_measured(k.best)]
            if missing or not (shown or r.results):
                card.add_row(kernel_label(r.probe, ", ".join(missing) or "all", device), "not measured",
                             "the probe ran but produced no figure for these on this device")

    @Slot(object)
    def _on_ctx_gpu_events(self, events) -> None:
        """A GPU lost, asleep or back (the monitor's events): its card's title says so."""
        for e in events:
            entry = self._gpu_cards.get(e.gpu_index)
            if e.kind != "state" or entry is None:
                continue
            card, title = entry
            suffix = {"lost": f" — lost at {e.clock[:5]}", "suspended": "" if "asleep" in title else " — asleep",
                      "not-responding": f" — not responding since {e.clock[:5]}"}.get(e.state, "")
            card.set_title(title + suffix)
            card.setProperty("gpu_state", e.state)

    @Slot(object)
    def _on_ctx_probe_result(self, _result) -> None:
        if self.ctx.machine is not None:
            self._build(self.ctx.machine)

    # ------------------------------------------------------------ live readings
    @Slot()
    def _on_timer_timeout(self) -> None:
        if not self.isVisible():  # hidden labels changing size would re-lay out the whole window
            return
        sampler = self.ctx.sampler
        sample = sampler.latest() if sampler is not None else None
        if sample is None:
            return
        host = self._live.get(-1)
        if host:
            # A screenshot's demo sampler simulates the host too; this card describes the real one.
            h = sample.host if sampler.host is self.ctx.host or self.ctx.host is None else self.ctx.host.sample()
            host["cpu"].setText("—" if h.cpu_util_pct is None else f"{h.cpu_util_pct:.0f} %")
            host["ram"].setText("—" if h.mem_used_bytes is None else fmt_mem(h.mem_used_bytes))
        for g in sample.gpus:
            labels = self._live.get(g.index)
            if not labels:
                continue
            if not g.available:
                labels["util"].setText({"suspended": "asleep (power saving): not polled, so not woken",
                                        "lost": "lost: the GPU fell off the bus or the driver lost it"}
                                       .get(g.state, f"{g.state}: no readings"))
                labels["mem"].setText("—")
                labels["power"].setText("—")
                continue
            labels["util"].setText("—" if g.util_pct is None else f"{g.util_pct:.0f} %")
            if g.mem_used_bytes is not None and g.mem_total_bytes:
                labels["mem"].setText(f"{fmt_mem(g.mem_used_bytes)} of {fmt_mem(g.mem_total_bytes)}")
            p = "—" if g.power_w is None else f"{g.power_w:,.0f} W"
            tc = "—" if g.temp_c is None else f"{g.temp_c:.0f} °C"
            labels["power"].setText(f"{p} · {tc}")

    def on_shown(self) -> None:
        self.ctx.start_hardware()
        self._on_timer_timeout()
        if getattr(self, "_job_line_due", False) and self.ctx.has_plan_model:
            self._write_job_line()

    def is_ready(self) -> bool:
        return (self.ctx.machine is not None and self.ctx.local_known and self._fits_worker is None) \
            or self.ctx.hardware_error is not None

    def shutdown(self) -> None:
        self._timer.stop()
        if self._fits_worker is not None:
            self._fits_worker.stop()
