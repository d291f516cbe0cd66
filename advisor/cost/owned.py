"""What a job costs on hardware the user already owns: the marginal cost of running it.

The purchase is sunk, so an owned option carries no purchase, depreciation or capex part: only the
electricity of the GPUs and of the rest of each machine for the job's hours, and wear when the user
sets a wear rate (``owned_wear_usd_per_gpu_hour``, zero by default). docs/method.md, "Owned hardware".
"""

from __future__ import annotations

import math

from advisor.catalog.records import Accelerator
from advisor.cost.assumptions import CostAssumptions
from advisor.cost.breakdown import CostBreakdown
from advisor.cost.jobs import OwnedQuote

OWNED = "owned"


def owned_option_id(accelerator_id: str) -> str:
    """The option id of owned hardware: ``owned:<accelerator id>``."""
    return f"{OWNED}:{accelerator_id}"


def owned_gpu_power_w(accel: Accelerator, a: CostAssumptions, gpu_power_w: float | None = None) -> float:
    """Power one owned GPU draws while the job runs: the given figure, else TDP x ``home_load_factor``.

    Raises:
        ValueError: no figure given and no TDP in the catalog (Apple Silicon rows have none: pass the
            measured or published package power).
    """
    if gpu_power_w is not None:
        if not math.isfinite(gpu_power_w) or gpu_power_w < 0:
            raise ValueError(f"gpu power must be a finite figure of zero or more, got {gpu_power_w!r}")
        return float(gpu_power_w)
    if not accel.tdp_w:
        raise ValueError(f"{accel.id}: no TDP in the catalog, give the GPU power to price its energy")
    return accel.tdp_w * a.home_load_factor


def owned_job_cost(accel: Accelerator, devices: int, hours: float, assumptions: CostAssumptions, *,
                   machines: int = 1, gpu_power_w: float | None = None) -> OwnedQuote:
    """The cost to its owner of running a job on owned GPUs.

    energy = (devices x GPU power + machines x ``home_system_power_w``) / 1000 x hours x
    ``electricity_usd_per_kwh``; wear = ``owned_wear_usd_per_gpu_hour`` x devices x hours, a part only
    when that rate is above zero. No purchase or depreciation part.

    Args:
        accel: the owned accelerator.
        devices: GPUs the job uses (at least 1).
        hours: wall-clock hours of the job (zero or more, finite).
        assumptions: electricity price, load factor, system power, wear rate.
        machines: machines the GPUs sit in (each adds its system power).
        gpu_power_w: power per GPU while running; TDP x load factor when None.
    Returns:
        An ``OwnedQuote`` with ``kind="owned"``, ``hardware_usd=0`` and ``fixed_usd_per_device=0``.
    Raises:
        ValueError: bad counts or hours, or no power figure.
    """
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ValueError(f"devices must be a whole number of 1 or more, got {devices!r}")
    if isinstance(machines, bool) or not isinstance(machines, int) or machines < 1:
        raise ValueError(f"machines must be a whole number of 1 or more, got {machines!r}")
    if not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours < 0:
        raise ValueError(f"hours must be a finite figure of zero or more, got {hours!r}")
    a = assumptions
    watts = owned_gpu_power_w(accel, a, gpu_power_w) * devices + a.home_system_power_w * machines
    kwh = watts / 1000.0 * hours
    parts = {"energy": kwh * a.electricity_usd_per_kwh}
    wear_rate = a.owned_wear_usd_per_gpu_hour
    if wear_rate > 0:
        parts["wear"] = wear_rate * devices * hours
    variable = (watts / 1000.0 * a.electricity_usd_per_kwh) / devices + wear_rate
    return OwnedQuote(kind=OWNED, accelerator_id=accel.id, devices=devices, hours=float(hours), hardware_usd=0.0,
                      fixed_usd_per_device=0.0, variable_usd_per_device_hour=variable, energy_kwh=kwh,
                      breakdown=CostBreakdown.of(**parts))
