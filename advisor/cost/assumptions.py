"""Editable cost assumptions, each with a default, a unit and the place the default comes from.

Defaults follow the cost model of ``docs/method.md`` ("Cost of a job"), each citing its primary source.
A default marked "assumption" is a round figure chosen
for this tool, not a published one: change it to your own figure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from typing import Any

METHOD = "docs/method.md, Cost of a job"
EPOCH = "Cottier et al. 2024, The rising costs of training frontier AI models (Epoch AI)"
_RESERVED_NAME = re.compile(r"reserved_discount_(?P<provider>[a-z0-9.\-]+)_(?P<years>[13])y")


@dataclass(frozen=True)
class Assumption:
    """One assumption as shown to people: its value, unit, where the value comes from, and what it means."""

    value: float | bool
    origin: str
    unit: str
    help: str


def _a(default: Any, unit: str, origin: str, help: str, check: str = "nonneg") -> Any:
    """A dataclass field carrying the assumption's unit, origin, help text and validation rule."""
    return field(default=default, metadata={"unit": unit, "origin": origin, "help": help, "check": check})


# Reserved/committed-use discounts (fraction off on-demand) for 1 and 3 years, per provider (lower case).
DEFAULT_RESERVED_DISCOUNTS: tuple[tuple[str, float, float], ...] = (
    ("aws", 0.41, 0.64),
    ("gcp", 0.37, 0.56),
    ("azure", 0.25, 0.49),
    ("lambda", 0.34, 0.56),
)


@dataclass(frozen=True)
class CostAssumptions:
    """Every knob of the cost model. Build variants with :meth:`with_overrides`, which validates.

    Home rig: a rig holds up to ``home_gpus_per_rig`` GPUs; a job on more devices needs more rigs. The rest of the
    system costs ``home_system_price_usd`` per rig plus ``home_system_extra_gpu_usd`` per GPU beyond the first
    in the rig, and draws ``home_system_power_w`` per rig. ``hours_per_day`` counts hours the rig is available
    for jobs and ``utilisation`` the fraction of them it actually runs, so the hours of use over the lifetime are
    ``lifetime_years * 365 * hours_per_day * utilisation``.

    On-prem: capex per GPU = price * ``onprem_server_overhead`` / (1 - ``onprem_interconnect_share``), amortised
    over ``onprem_amortisation_years * 365 * onprem_hours_per_day * onprem_utilisation`` hours of use.
    """

    # ---- shared
    electricity_usd_per_kwh: float = _a(
        0.17, "USD/kWh", "US residential average, about 17 US cents per kWh in 2025 (EIA); assumption for home use",
        "price of electricity at home")
    # ---- home rig
    home_load_factor: float = _a(
        0.9, "fraction of TDP", "assumption: training keeps a card near its power limit",
        "GPU power while a job runs, as a fraction of the board power (TDP)", "fraction")
    home_system_price_usd: float = _a(
        1500.0, "USD per rig", "assumption: CPU, board, RAM, PSU, case and SSD for a one-GPU rig",
        "rest-of-system price of one rig")
    home_system_extra_gpu_usd: float = _a(
        500.0, "USD per extra GPU", "assumption: bigger PSU, board with more PCIe lanes, cooling",
        "extra rest-of-system price for each GPU beyond the first in a rig")
    home_system_power_w: float = _a(
        150.0, "W per rig", "assumption: CPU, board, drives and fans under a training load",
        "power the rest of a rig draws while a job runs")
    basic_system_price_usd: float = _a(
        500.0, "USD", "mylocalai.org/blog/best-budget-ai-pc-build (2026): Ryzen 5 5600, B550 board, 32 GB DDR4, "
        "850 W 80+ Gold supply, 1 TB NVMe SSD and a mid-tower for $430-565 around a used RTX 3090",
        "price of a basic one-GPU PC (new budget parts) for a single card whose power fits its supply")
    basic_system_psu_w: float = _a(
        850.0, "W", "the same build's 850 W 80+ Gold power supply",
        "power supply of the basic PC: a card whose need (card + system, 25 % headroom) exceeds it needs the rig")
    psu_upgrade_usd: float = _a(
        100.0, "USD", "the same build: an 850 W 80+ Gold power supply for $90-110 (larger units cost more)",
        "price of a new power supply when the one in the desktop is short for the cards added")
    home_gpus_per_rig: int = _a(
        4, "GPUs", "assumption: four cards is the practical limit of one desktop board and PSU",
        "most GPUs in one home rig", "count")
    lifetime_years: float = _a(
        3.0, "years", METHOD + ": straight-line depreciation over a lifetime",
        "years a home rig is used before it is sold or retired", "years")
    resale_fraction: float = _a(
        0.3, "fraction of price", "assumption: used consumer cards sell for about a third of their price after 3 years",
        "what the hardware sells for at the end of its lifetime, as a fraction of its price", "fraction")
    hours_per_day: float = _a(
        8.0, "hours/day", "assumption: a home rig is available about a working day",
        "hours per day the home rig is available for jobs", "hours_per_day")
    utilisation: float = _a(
        1.0, "fraction", "assumption: hours_per_day already counts only hours of use",
        "fraction of the available home hours actually running jobs (Dettmers' utilisation is "
        "hours_per_day * utilisation / 24)", "positive_fraction")
    home_idle_power_w: float = _a(
        50.0, "W per rig", "assumption: a desktop with its cards in their lowest power state draws about 40 to 70 W",
        "power a rig draws while it is on (within the hours per day) but not running a job")
    financing_rate_per_year: float = _a(
        0.0, "fraction per year", "assumption: bought outright (set a loan or lease rate to add financing)",
        "interest rate of a loan or lease for the hardware, repaid in equal payments over its life (home) or "
        "amortisation (on-prem)", "share")
    # ---- owned hardware (GPUs already bought: only what running the job costs)
    owned_wear_usd_per_gpu_hour: float = _a(
        0.0, "USD per GPU-hour", "assumption: not counted unless set (the purchase is sunk; set a figure "
        "if running the card shortens its life or lowers its resale value)",
        "wear of an owned GPU per hour of use; 0 leaves wear out of the owned price")
    # ---- on-prem
    onprem_server_overhead: float = _a(
        1.6, "x GPU price", EPOCH + ": server overhead x1.54 to 1.69 over GPU cost for 8-GPU servers (midpoint)",
        "server price over the price of its GPUs", "at_least_one")
    onprem_interconnect_share: float = _a(
        0.19, "fraction of capex", EPOCH + ": cluster interconnect about 19 percent of capex",
        "share of the total capex spent on the cluster network", "share")
    onprem_amortisation_years: float = _a(
        4.0, "years", EPOCH + ": straight line over 3 to 5 years (middle)",
        "years over which on-prem capex is written off", "years")
    onprem_power_factor: float = _a(
        1.9, "x TDP", EPOCH + ": server power 1.8 to 2.0 x GPU TDP (midpoint)",
        "server power per GPU (CPU, memory, network, fans included) over the GPU TDP", "positive")
    onprem_load: float = _a(
        0.75, "fraction", EPOCH + ": 0.75 load", "average power while running, as a fraction of the peak",
        "fraction")
    pue: float = _a(
        1.2, "ratio", "PUE 1.1 to 1.25 for modern facilities (Google Environmental Report 2024: fleet 1.10; "
        "Uptime Institute 2023 survey average 1.58)", "facility power over IT power (power usage effectiveness)",
        "at_least_one")
    onprem_electricity_usd_per_kwh: float = _a(
        0.10, "USD/kWh", "assumption: between the US industrial (~0.08) and commercial (~0.13) averages (EIA, 2024-25)",
        "price of electricity for the on-prem servers")
    colocation_usd_per_kw_month: float = _a(
        150.0, "USD per kW-month", "assumption: a round figure for space, cooling and network per kW of IT load;"
        " power is billed separately", "colocation fee per kW of server power per month")
    staff_usd_per_gpu_year: float = _a(
        1000.0, "USD per GPU-year", "assumption: about one engineer (~USD 150-200k a year) per 150-200 GPUs",
        "staff and support cost per GPU per year")
    onprem_idle_power_fraction: float = _a(
        0.3, "fraction of server power", "assumption: an idle GPU server draws about a quarter to a third of its "
        "peak (fans, CPUs, memory and GPUs at idle clocks)",
        "power of an on-prem server while on but not running jobs, as a fraction of its power (TDP x power factor)",
        "fraction")
    onprem_hours_per_day: float = _a(
        24.0, "hours/day", "assumption: servers stay on around the clock",
        "hours per day the on-prem servers are available", "hours_per_day")
    onprem_utilisation: float = _a(
        0.8, "fraction", "assumption: a busy shared cluster",
        "fraction of the available on-prem hours running jobs", "positive_fraction")
    # ---- cloud
    spot: bool = _a(
        False, "on/off", "assumption: on-demand prices rank the options; spot options are listed as well",
        "rank options with spot (preemptible) prices", "bool")
    spot_rework_factor: float = _a(
        0.1, "fraction of hours", METHOD + ": spot price times (1 + expected rework); 0.1 is an assumption",
        "extra hours paid on spot instances to redo work lost to preemption")
    reserved_years: int = _a(
        0, "years (0, 1 or 3)", "assumption: no commitment", "reserved or committed-use term for cloud prices",
        "reserved_years")
    reserved_discounts: tuple[tuple[str, float, float], ...] = _a(
        DEFAULT_RESERVED_DISCOUNTS, "fraction off on-demand",
        "provider pricing pages, 1- and 3-year commitments: AWS 41/64 percent, GCP 37/56, Azure 25/49, Lambda 34/56 for 1/3 years",
        "reserved/committed-use discounts per provider, (provider, 1 year, 3 years)", "discounts")
    storage_usd_per_h: float = _a(
        0.0, "USD/hour", "assumption: not priced unless given", "storage billed per hour of the job, per instance")
    egress_usd: float = _a(
        0.0, "USD per job", "assumption: not priced unless given", "data transfer out, once per job")

    def __post_init__(self) -> None:
        # Scenario files give lists and whole-number floats; store the canonical forms.
        if isinstance(self.reserved_discounts, list):
            object.__setattr__(self, "reserved_discounts", tuple(
                tuple(r) if isinstance(r, list) else r for r in self.reserved_discounts))
        for f in fields(self):
            _check(f.name, getattr(self, f.name), f.metadata["check"])
        for name in ("home_gpus_per_rig", "reserved_years"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "reserved_discounts", tuple(
            (p.strip().lower(), float(one), float(three)) for p, one, three in self.reserved_discounts))

    def with_overrides(self, **overrides: Any) -> CostAssumptions:
        """A copy with some fields changed.

        Besides the field names, the flattened names of :meth:`describe` (``reserved_discount_aws_1y`` ...) are
        accepted, so a saved ``describe()`` table can be read back; a new provider name adds a row (its other term
        starts at 0).

        Raises:
            ValueError: for an unknown field or an invalid value; the message names the field.
        """
        known = {f.name for f in fields(self)}
        plain: dict[str, Any] = {}
        table = {p: [one, three] for p, one, three in self.reserved_discounts}
        touched = False
        for name, value in overrides.items():
            if name in known:
                plain[name] = value
                continue
            m = _RESERVED_NAME.fullmatch(name)
            if not m:
                raise ValueError(f"{name}: unknown cost assumption")
            _check(name, value, "share")
            table.setdefault(m["provider"], [0.0, 0.0])[0 if m["years"] == "1" else 1] = value
            touched = True
        if touched and "reserved_discounts" not in plain:
            plain["reserved_discounts"] = tuple((p, one, three) for p, (one, three) in table.items())
        return replace(self, **plain)

    def assumption(self, name: str) -> Assumption:
        """One field as an :class:`Assumption` (value with its unit, origin and help)."""
        meta = {f.name: f.metadata for f in fields(self)}
        if name not in meta:
            raise ValueError(f"{name}: unknown cost assumption")
        m = meta[name]
        return Assumption(getattr(self, name), m["origin"], m["unit"], m["help"])

    def describe(self, sources: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
        """Every assumption as ``{name: {"value", "unit", "origin", "help"}}`` for tables and JSON.

        The reserved discounts are flattened to ``reserved_discount_<provider>_<1|3>y`` entries.

        Args:
            sources: where changed values came from, by name (``"--set pue=1.4"``, ``"scenario x.toml"``).
                A value that differs from the default takes its source as ``origin`` ("changed from the
                default" without one) and keeps the default's in ``default_origin``.
        """
        out = self._describe()
        defaults = _default_description()
        sources = sources or {}
        for name, entry in out.items():
            default = defaults.get(name)
            if name in sources or default is None or entry["value"] != default["value"]:
                entry["default_origin"] = entry["origin"] if default is None else default["origin"]
                if default is not None:
                    entry["default_value"] = default["value"]
                entry["origin"] = sources.get(name, "changed from the default")
        return out

    def _describe(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for f in fields(self):
            m = f.metadata
            if f.name == "reserved_discounts":
                for provider, one, three in self.reserved_discounts:
                    for years, value in ((1, one), (3, three)):
                        out[f"reserved_discount_{provider}_{years}y"] = {
                            "value": value, "unit": m["unit"], "origin": m["origin"],
                            "help": f"{provider} {years}-year reserved/committed-use discount"}
                continue
            out[f.name] = {"value": getattr(self, f.name), "unit": m["unit"], "origin": m["origin"],
                           "help": m["help"]}
        return out

    def reserved_discount(self, provider: str, years: int) -> float | None:
        """The fraction off on-demand for a provider and term; 0.0 for no term, None when not published.

        Raises:
            ValueError: when ``years`` is not 0, 1 or 3.
        """
        _check("reserved_years", years, "reserved_years")
        if years == 0:
            return 0.0
        provider = provider.strip().lower()
        for name, one, three in self.reserved_discounts:
            if name == provider:
                return one if years == 1 else three
        return None


# The groups of the app's assumptions form, in order, and each assumption's group (every field of
# CostAssumptions in exactly one: ``tests/cost/test_assumption_groups.py``). "serving" holds the costs billed
# per job or per hour besides the rent, which enter the $ per million tokens and requests of a serving plan.
ASSUMPTION_GROUP_TITLES = {"home": "Home rig", "owned": "GPUs you own", "onprem": "On-prem servers",
                           "cloud": "Cloud", "serving": "Serving and data (storage, egress)"}
ASSUMPTION_GROUPS = {
    "home": ("electricity_usd_per_kwh", "home_load_factor", "home_system_price_usd", "home_system_extra_gpu_usd",
             "home_system_power_w", "basic_system_price_usd", "basic_system_psu_w", "psu_upgrade_usd",
             "home_gpus_per_rig", "lifetime_years", "resale_fraction", "hours_per_day",
             "utilisation", "home_idle_power_w", "financing_rate_per_year"),
    "owned": ("owned_wear_usd_per_gpu_hour",),
    "onprem": ("onprem_server_overhead", "onprem_interconnect_share", "onprem_amortisation_years",
               "onprem_power_factor", "onprem_load", "pue", "onprem_electricity_usd_per_kwh",
               "colocation_usd_per_kw_month", "staff_usd_per_gpu_year", "onprem_idle_power_fraction",
               "onprem_hours_per_day", "onprem_utilisation"),
    "cloud": ("spot", "spot_rework_factor", "reserved_years", "reserved_discounts"),
    "serving": ("storage_usd_per_h", "egress_usd"),
}


def assumption_group(name: str) -> str:
    """The form group of an assumption (a field name, or a flattened ``reserved_discount_<p>_<n>y``: cloud).

    Raises:
        KeyError: for a name that is no assumption.
    """
    if _RESERVED_NAME.fullmatch(name):
        return "cloud"
    for group, names in ASSUMPTION_GROUPS.items():
        if name in names:
            return group
    raise KeyError(name)


@cache
def _default_description() -> dict[str, dict[str, Any]]:
    return CostAssumptions()._describe()


def _check(name: str, value: Any, rule: str) -> None:
    """Raise ValueError naming ``name`` when ``value`` breaks ``rule``."""
    if rule == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{name}: must be true or false, got {value!r}")
        return
    if rule == "discounts":
        _check_discounts(name, value)
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name}: must be a finite number, got {value!r}")
    test, message = _RULES[rule]
    if not test(value):
        raise ValueError(f"{name}: {message}, got {value!r}")


# rule -> (what a good value passes, what the message says it must be); evaluated only for the rule asked
_RULES = {
    "nonneg": (lambda v: 0 <= v <= 1e9, "must be between 0 and 1e9"),
    "positive": (lambda v: 0 < v <= 1000, "must be more than zero and at most 1000"),
    "years": (lambda v: 0.01 <= v <= 100, "must be between 0.01 and 100 years"),
    "fraction": (lambda v: 0 <= v <= 1, "must be between 0 and 1"),
    "positive_fraction": (lambda v: 0 < v <= 1, "must be more than 0 and at most 1"),
    "share": (lambda v: 0 <= v < 1, "must be at least 0 and below 1"),
    "at_least_one": (lambda v: 1 <= v <= 100, "must be between 1 and 100"),
    "hours_per_day": (lambda v: 0 < v <= 24, "must be more than 0 and at most 24"),
    "count": (lambda v: 1 <= v <= 1024 and int(v) == v, "must be a whole number from 1 to 1024"),
    "reserved_years": (lambda v: v in (0, 1, 3), "must be 0, 1 or 3"),
}


def _check_discounts(name: str, value: Any) -> None:
    if not isinstance(value, (tuple, list)):
        raise ValueError(f"{name}: must be a tuple of (provider, 1-year, 3-year) discounts, got {value!r}")
    for row in value:
        if not (isinstance(row, (tuple, list)) and len(row) == 3 and isinstance(row[0], str)):
            raise ValueError(f"{name}: each entry must be (provider, 1-year, 3-year), got {row!r}")
        for d in row[1:]:
            if isinstance(d, bool) or not isinstance(d, (int, float)) or not (math.isfinite(d) and 0 <= d < 1):
                raise ValueError(f"{name}: {row[0]} discount must be at least 0 and below 1, got {d!r}")
