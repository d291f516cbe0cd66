"""Buy page: what to buy within a budget for the user's jobs, against renting them.

The ranking is ``advisor.planner.buy.buy_advice`` (the same as ``advisor buy``): this machine's GPUs are the
owned hardware, the jobs are the defaults, the Planner's job or scenario files, and every figure is read
from the one :class:`~advisor.planner.buy.BuyResult`. It plans each job a few times (tens of milliseconds), so
it runs on the GUI thread when an input changes.
"""

from __future__ import annotations

import logging
import math

from PySide6.QtCore import Qt, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
)

from advisor.cost.price_dates import price_summary
from advisor.gui import theme as themes
from advisor.gui.pages.base import Page
from advisor.gui.safe_text import plain, rich, set_plain
from advisor.gui.widgets.tables import Column, RecordTableModel, fit_columns, make_proxy, make_view
from advisor.units import fmt_count, fmt_hours, fmt_usd, upper_first

log = logging.getLogger(__name__)


def _usd(x: float | None) -> str:
    return "$0" if x == 0 else fmt_usd(x)


BASE_CHOICES = (("", "what this machine is (detected)"), ("desktop", "my desktop"), ("laptop", "a PC (I have a laptop)"),
                ("none", "a PC (I have none)"))
GROUP_WORDS = {"own": "yours", "upgrade": "add to your PC", "new": "new PC or Mac", "server": "server (team)"}


class _Months(float):
    """Months to break-even as a number to sort by (never: infinity), with its words."""

    text: str = ""


def _months(o) -> _Months:
    from advisor.cost.buy import break_even_text

    m = _Months(math.inf if o.break_even_months is None or not o.pays_back else o.break_even_months)
    m.text = break_even_text(o)
    return m


def _use(o) -> _Months:
    """The runs a month from which it pays back, to sort by (never: infinity), with ``use_text``'s words."""
    from advisor.cost.buy import use_text

    m = _Months(math.inf if o.pays_back_from is None else o.pays_back_from)
    m.text = use_text(o)
    return m


def buy_columns(job_names: list[str]) -> list[Column]:
    """Columns of the ranking: one time column per job (also used by tests)."""
    good, bad = themes.current().good, themes.current().bad

    def verdict_color(o) -> str:
        return good if o.verdict in ("buy", "use what you own") and o.stack_ok else bad

    cols = [
        Column("what", lambda o: GROUP_WORDS.get(o.purchase.group, o.purchase.group),
               tip="Yours (as it is), cards added to this machine (no new PC), a new rig or machine, or a server "
                   "for a team (on-prem costs)", cell_tip=lambda o: o.purchase.note or ""),
        Column("hardware", lambda o: o.purchase.hardware, tip="What to buy (or the GPUs you own, as they are)",
               cell_tip=lambda o: o.purchase.note or ""),
        Column("price", lambda o: o.purchase.price_basis, tip="The price it is counted at: the launch price, the "
               "street price of that date (used or new, see the source), or the machine's price",
               cell_tip=lambda o: f"source: {o.purchase.price_source or 'owned'}"),
        Column("upfront", lambda o: o.purchase.upfront_usd, _usd, align_right=True,
               tip="Cards plus the rest of the system (a new rig, or what more GPUs in your rig need)"),
        Column("monthly", lambda o: o.monthly_usd + o.holding_monthly_usd, fmt_usd, align_right=True,
               tip="A month of owning it at the runs a month given: electricity of the jobs it runs, plus its "
                   "holding costs (price less resale over its life, idle power; a server's capex, colocation and "
                   "support)"),
        Column("per job", lambda o: o.usd_per_job, fmt_usd, align_right=True,
               tip="The month's cost plus the rent of the jobs it cannot run, over the jobs a month"),
        Column("use", lambda o: o.utilisation, lambda u: f"{u:.0%}", align_right=True,
               tip="Busy hours a month over the hours it is available (hours per day; servers around the clock)"),
    ]
    cols += [
        Column("verdict", lambda o: o.verdict + ("" if o.stack_ok else " (other stack)"), color=verdict_color,
               tip="Keep renting when renting costs less per job; overbooked: the jobs need more hours a month than "
                   "the hours a day assumed; other stack: a job's code needs another software stack on it "
                   "(ranked after those that run it)", cell_tip=lambda o: "; ".join(o.stack_notes)),
        Column("break-even", _months, lambda m: m.text, align_right=True,
               tip="Months until the upfront is repaid by what it saves against renting the same jobs; beyond its "
                   "life, it does not pay back"),
        Column("pays back from", _use, lambda m: m.text, align_right=True,
               tip="Runs of each job a month from which it pays back within its life, and the hours of work a day "
                   "they take (!: more than the hours a day assumed)"),
    ]
    for name in job_names:
        cols.append(Column(name, lambda o, n=name: o.hours_per_job.get(n) or math.inf,
                           lambda h: "does not fit" if h == math.inf else fmt_hours(h), align_right=True,
                           color=lambda o, n=name: None if o.fits.get(n) else bad,
                           tip=f"Time of one run of {name} (wall clock, the planner's estimate)"))
    return cols


def describe_job(job) -> str:
    """``qlora of llama-3.1-8b, 100M tokens`` (the planner's default budget when none is given)."""
    r = job.request
    model = r.model or f"a {r.params:.3g}-parameter model"
    budget = (f"{fmt_count(r.tokens)} tokens" if r.tokens is not None else f"{r.hours:g} hours" if r.hours is not None
              else f"{r.epochs:g} epochs" if r.epochs is not None else "the planner's default budget")
    return f"{r.workload} of {model}, {budget}"


class BuyPage(Page):
    """What to buy for the jobs and how often they run, within a budget, against renting."""

    page_id = "buy"
    title = "Buy"

    def __init__(self, ctx, parent=None) -> None:
        super().__init__(ctx, parent)
        from advisor.planner.buy import default_jobs
        from advisor.store.calibration import load_planner_calibration

        self.jobs = default_jobs()
        self._default_jobs = True  # until a job is added or removed: the defaults follow the budget
        self.result = None
        self._calibration = load_planner_calibration()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 12, 16, 12)
        layout.addWidget(QLabel("<h2 style='margin:0'>What to buy</h2>"))

        inputs = QHBoxLayout()
        inputs.addWidget(QLabel("Budget"))
        self.budget = QDoubleSpinBox()
        self.budget.setObjectName("buyBudget")
        self.budget.setRange(0, 1e6)
        self.budget.setDecimals(0)
        self.budget.setSingleStep(250)
        self.budget.setPrefix("$")
        self.budget.setValue(2500)
        self.budget.setToolTip("The most to spend upfront")
        inputs.addWidget(self.budget)
        inputs.addSpacing(12)
        inputs.addWidget(QLabel("Runs of each job a month"))
        self.per_month = QDoubleSpinBox()
        self.per_month.setObjectName("buyPerMonth")
        self.per_month.setRange(0.1, 1000)
        self.per_month.setDecimals(1)
        self.per_month.setValue(4)
        inputs.addWidget(self.per_month)
        inputs.addSpacing(12)
        self.own = QCheckBox("Count this machine's GPUs as owned")
        self.own.setObjectName("buyOwn")
        self.own.setChecked(True)
        self.own.setToolTip("Owned GPUs cost only their power; upgrades add cards to them")
        inputs.addWidget(self.own)
        inputs.addStretch(1)
        layout.addLayout(inputs)

        base_row = QHBoxLayout()
        base_row.addWidget(QLabel("Cards go into"))
        self.base = QComboBox()
        self.base.setObjectName("buyBase")
        for key, words in BASE_CHOICES:
            self.base.addItem(words, key)
        self.base.setToolTip("What you have to put cards in: a desktop gets cards added to it; with a laptop or "
                             "nothing, a card needs a PC (a basic PC or a new rig)")
        base_row.addWidget(self.base)
        base_row.addSpacing(12)
        base_row.addWidget(QLabel("Power supply"))
        self.psu = QSpinBox()
        self.psu.setObjectName("buyPsu")
        self.psu.setRange(0, 5000)
        self.psu.setSingleStep(50)
        self.psu.setSuffix(" W")
        self.psu.setSpecialValueText("not given")
        self.psu.setToolTip("Your desktop's power supply: a short one is replaced and counted")
        base_row.addWidget(self.psu)
        base_row.addSpacing(12)
        base_row.addWidget(QLabel("Free x16 slots"))
        self.slots = QSpinBox()
        self.slots.setObjectName("buySlots")
        self.slots.setRange(-1, 8)
        self.slots.setValue(-1)
        self.slots.setSpecialValueText("not given")
        self.slots.setToolTip("Free PCIe x16 slots in your desktop: at most that many cards are added")
        base_row.addWidget(self.slots)
        base_row.addStretch(1)
        layout.addLayout(base_row)

        jobs_row = QHBoxLayout()
        self.job_list = QListWidget()
        self.job_list.setObjectName("buyJobs")
        self.job_list.setMaximumHeight(64)
        jobs_row.addWidget(self.job_list, 1)
        buttons = QVBoxLayout()
        self.add_plan_button = QPushButton("Add the Planner's job")
        self.add_plan_button.setToolTip("The job on the Planner page, as it is now")
        self.add_plan_button.clicked.connect(self._on_add_plan_clicked)
        self.add_file_button = QPushButton("Add a scenario file…")
        self.add_file_button.clicked.connect(self._on_add_file_clicked)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._on_remove_clicked)
        for b in (self.add_plan_button, self.add_file_button, self.remove_button):
            buttons.addWidget(b)
        jobs_row.addLayout(buttons)
        layout.addLayout(jobs_row)

        self.headline = QLabel()
        self.headline.setObjectName("buyHeadline")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.headline)
        self.table_model = RecordTableModel(buy_columns([]), [], self)
        self.proxy = make_proxy(self.table_model, self)
        self.table = make_view(self.proxy)
        self.table.setObjectName("buyTable")
        layout.addWidget(self.table, 1)
        self.rent = QLabel()
        self.rent.setObjectName("buyRent")
        self.rent.setWordWrap(True)
        self.rent.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.rent)

        self.budget.valueChanged.connect(self._on_input_changed)
        self.per_month.valueChanged.connect(self._on_input_changed)
        self.own.toggled.connect(self._on_input_changed)
        self.base.currentIndexChanged.connect(self._on_input_changed)
        self.psu.valueChanged.connect(self._on_input_changed)
        self.slots.valueChanged.connect(self._on_input_changed)
        ctx.machine_ready.connect(self._on_ctx_machine_ready)
        ctx.assumptions_changed.connect(self._on_ctx_assumptions_changed)
        ctx.calibration_changed.connect(self._on_ctx_calibration_changed)
        self._show_jobs()

    # ------------------------------------------------------------ inputs
    def owned(self) -> list:
        """This machine's GPUs as ``(accelerator, count)``, when they count as owned: every GPU the planner
        counts (``planner.owned.owned_from_profile``, as ``advisor buy`` does), however many, priced or not."""
        return [(hw.accelerator, hw.count) for hw in self._owned_hardware()]

    def _owned_hardware(self) -> list:
        from advisor.planner.owned import owned_from_profile

        m = self.ctx.machine
        if m is None or not self.own.isChecked():
            return []
        return owned_from_profile(m)

    def base_system(self):
        """The base system of the inputs (None: inferred from this machine's GPUs, as ``advisor buy`` does).

        Raises:
            ValueError: a power supply or slots given for a laptop or none (one line).
        """
        from advisor.cost.buy import BaseSystem

        kind = self.base.currentData()
        psu = self.psu.value() or None
        slots = None if self.slots.value() < 0 else self.slots.value()
        if not kind and psu is None and slots is None:
            return None
        return BaseSystem(kind or "desktop", None if psu is None else float(psu), slots, origin="--base")

    def _show_jobs(self) -> None:
        self.job_list.clear()
        for j in self.jobs:
            self.job_list.addItem(plain(f"{j.name}: {describe_job(j)}", None))
        self.remove_button.setEnabled(len(self.jobs) > 1)

    def add_job(self, job) -> None:
        """Add a job (a name already taken gets a number) and rank again."""
        from dataclasses import replace

        names = {j.name for j in self.jobs}
        name, i = job.name, 2
        while name in names:
            name, i = f"{job.name} ({i})", i + 1
        self.jobs.append(replace(job, name=name))
        self._default_jobs = False
        self._show_jobs()
        self.refresh()

    @Slot()
    def _on_add_plan_clicked(self) -> None:
        from advisor.planner.buy import BuyJob

        req = self.ctx.last_request
        if req is None:
            self.headline.setText("Plan a job on the Planner page first.")
            return
        label = req.model or f"{req.params:.3g} parameters"
        self.add_job(BuyJob(f"{req.workload} {label}", req))

    @Slot()
    def _on_add_file_clicked(self) -> None:
        from advisor.planner import PlanInputError
        from advisor.planner.buy import load_job

        path, _chosen = QFileDialog.getOpenFileName(self, "Add a scenario file", "", "Scenario files (*.toml)")
        if not path:
            return
        try:
            self.add_job(load_job(path))
        except PlanInputError as exc:
            self.headline.setText(f"<span style='color:{themes.current().bad}'>{rich(exc, None)}</span>")

    @Slot()
    def _on_remove_clicked(self) -> None:
        row = self.job_list.currentRow()
        if len(self.jobs) > 1:
            del self.jobs[row if 0 <= row < len(self.jobs) else -1]
            self._default_jobs = False
            self._show_jobs()
            self.refresh()

    @Slot()
    def _on_input_changed(self, *_args) -> None:
        self.refresh()

    @Slot(object)
    def _on_ctx_machine_ready(self, _profile) -> None:
        self.refresh()

    @Slot(dict)
    def _on_ctx_assumptions_changed(self, _overrides) -> None:
        self.refresh()

    @Slot()
    def _on_ctx_calibration_changed(self) -> None:
        from advisor.store.calibration import load_planner_calibration

        self._calibration = load_planner_calibration()
        self.refresh()

    # ------------------------------------------------------------ ranking
    def refresh(self) -> None:
        """Rank again from the inputs and show the result (a bad job shows its one line instead)."""
        from advisor.cost.assumptions import CostAssumptions
        from advisor.planner import PlanInputError
        from advisor.planner.buy import buy_advice, combine_text, default_jobs, defaults_text, summary_parts

        try:
            a = CostAssumptions().with_overrides(**dict(self.ctx.assumptions or {}))
            if self._default_jobs:  # a hobbyist's or a team's month, by the budget (``default_jobs``)
                self.jobs = default_jobs(self.budget.value())
                self._show_jobs()
            power = {hw.accelerator.id: hw.gpu_power_w for hw in self._owned_hardware() if hw.gpu_power_w}
            m = self.ctx.machine
            ram = getattr(getattr(getattr(m, "host", None), "memory", None), "total_bytes", None) \
                if self.own.isChecked() else None
            self.result = buy_advice(self.jobs, self.budget.value(), self.per_month.value(), self.owned(),
                                     catalog=self.ctx.catalog, calibration=self._calibration, assumptions=a,
                                     owned_power_w=power, default_jobs=self._default_jobs, host_memory_bytes=ram,
                                     base=self.base_system())
        except (PlanInputError, TypeError, ValueError) as exc:
            log.info("buy: %s", exc)
            self.result = None
            self.headline.setText(f"<span style='color:{themes.current().bad}'>{rich(exc, None)}</span>")
            return
        r = self.result
        names = [j.name for j in r.jobs]
        self.table_model = RecordTableModel(buy_columns(names), r.options, self)
        self.proxy.setSourceModel(self.table_model)
        fit_columns(self.table, max_width=320)
        color = (themes.current().good if r.options and r.options[0].verdict in ("buy", "use what you own")
                 else themes.current().text)
        head, detail = summary_parts(r)
        self.headline.setText(f"<b style='font-size:12pt; color:{color}'>{rich(head, 500)}.</b>"  # catalog names
                              + (f"<br><span style='color:{themes.current().muted}'>{rich(detail[:1].upper() + detail[1:], 1000)}.</span>"
                                 if detail else ""))
        rent = "; ".join(f"{n}: " + ("no cloud option fits" if x is None else
                                     f"{x.option_id} {fmt_usd(x.cost_usd)} in {fmt_hours(x.hours)}")
                         for n, x in r.rent.items())
        left = r.considered - len(r.options)
        a = r.assumptions
        cat = self.ctx.catalog
        jobs = (f"The jobs are the defaults, {defaults_text(r.budget_usd)}: add the Planner's job or a scenario file "
                "to use yours. " if r.default_jobs else "")
        owned = f"Your GPUs: {combine_text(list(r.owned))}. " if r.owned else ""
        owned += f"Cards go into {r.base.text()}. "
        used = "".join(f"Used price of {u.accelerator_id}: {fmt_usd(u.price_usd)}, {u.price_date}, {u.source}. "
                       for u in r.used)
        set_plain(self.rent,  # GPU and catalog names
            jobs + owned + f"The last columns are the time of one run of each job. Rent, the cheapest cloud option "
            f"that fits each job: {rent}. "
            + (f"{left} more within the budget fit none of the jobs. " if left else "") + used
            + f"Monthly: electricity at ${a.electricity_usd_per_kwh:g}/kWh plus a rig's price less "
            f"{a.resale_fraction:.0%} resale over {a.lifetime_years:g} years and its idle power, or a server's capex "
            f"over {a.onprem_amortisation_years:g} years, colocation and support; {a.hours_per_day:g} h a day "
            f"available. {upper_first(price_summary(cat.offers, cat.date, r.prices_as_of))}; hover a row for its "
            "price source and what to check before adding cards.")

    # ------------------------------------------------------------ page hooks
    def on_shown(self) -> None:
        if self.result is None:
            self.refresh()

    def is_ready(self) -> bool:
        return self.result is not None

    def prepare_screenshot(self) -> None:
        self.refresh()

    def save_state(self, s) -> None:
        s.setValue("buy/budget_usd", self.budget.value())
        s.setValue("buy/jobs_per_month", self.per_month.value())
        s.setValue("buy/own", self.own.isChecked())
        s.setValue("buy/base", self.base.currentData() or "")
        s.setValue("buy/psu_w", self.psu.value())
        s.setValue("buy/free_slots", self.slots.value())

    def restore_state(self, s) -> None:
        from advisor.gui.context import _float

        self.budget.setValue(_float(s.value("buy/budget_usd"), 2500.0, 0.0, 1e6))
        self.per_month.setValue(_float(s.value("buy/jobs_per_month"), 4.0, 0.1, 1000.0))
        own = s.value("buy/own")
        self.own.setChecked(own not in (False, "false", "0"))
        i = self.base.findData(str(s.value("buy/base") or ""))
        self.base.setCurrentIndex(max(i, 0))
        self.psu.setValue(int(_float(s.value("buy/psu_w"), 0.0, 0.0, 5000.0)))
        self.slots.setValue(int(_float(s.value("buy/free_slots"), -1.0, -1.0, 8.0)))
