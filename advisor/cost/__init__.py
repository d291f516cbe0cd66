"""Total job cost: home rig, on-prem and cloud (pure functions, no I/O).

The public names are re-exported here: ``from advisor.cost import CostAssumptions, cloud_job_cost, ...``.
"""

from advisor.cost.assumptions import Assumption, CostAssumptions
from advisor.cost.breakdown import CostBreakdown
from advisor.cost.breakeven import BreakEven, break_even_device_hours, breakeven_days, cheapest_offer, months_of_use
from advisor.cost.compare import (
                                    SensitivitySeries,
                                    assumption_sensitivity,
                                    pareto_front,
                                    rank_by_cost,
                                    requests_per_s,
                                    scaled_grid,
                                    sensitivity,
                                    usd_per_million_requests,
                                    usd_per_million_tokens,
)
from advisor.cost.jobs import CloudQuote, OwnedQuote, can_own, cloud_job_cost
from advisor.cost.options import DeviceJob, job_points, quote_job
from advisor.cost.ownership import (
                                    Holding,
                                    Use,
                                    Utilisation,
                                    home_job_cost,
                                    job_cost,
                                    onprem_job_cost,
                                    owned_job_cost,
                                    payback,
)

__all__ = [
    "Assumption", "BreakEven", "CloudQuote", "CostAssumptions", "CostBreakdown", "DeviceJob", "Holding",
    "OwnedQuote", "SensitivitySeries", "Use", "Utilisation", "assumption_sensitivity", "job_cost", "owned_job_cost",
    "payback",
    "break_even_device_hours", "breakeven_days", "can_own", "cheapest_offer", "cloud_job_cost", "home_job_cost",
    "job_points", "months_of_use", "onprem_job_cost", "pareto_front", "quote_job", "rank_by_cost",
    "requests_per_s", "scaled_grid", "sensitivity", "usd_per_million_requests",
    "usd_per_million_tokens",
]
