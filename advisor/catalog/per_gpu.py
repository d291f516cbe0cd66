"""How many GPUs one machine holds for rates sold per GPU (RunPod, CoreWeave, Azure "per GPU" rows).

A per-GPU rate rents GPUs of one machine: tensor parallelism spans at most that machine, never GPUs rented
separately. The limit is read from the catalog itself: the largest instance the same provider rents whole
(RunPod's largest rows, ``8x_A100-80GB_SECURE`` and ``8x_A100-80GB-SXM_SECURE``, hold 8; from
skypilot-org/skypilot-catalog ``catalogs/v7/runpod/vms.csv``). A provider with no whole-instance row is taken
as one HGX baseboard of 8 GPUs (NVIDIA HGX H100/H200/B200 baseboards carry 8 SXM GPUs; NVIDIA HGX platform
page), and says it is an assumption.
"""

from __future__ import annotations

import functools

HGX_GPUS = 8
HGX_SOURCE = "assumption: one HGX baseboard of 8 GPUs (NVIDIA HGX platform)"


def per_unit(instance: str) -> bool:
    """Whether an offer is a rate per GPU or per chip rather than a whole instance."""
    low = instance.lower()
    return "per gpu" in low or "per chip" in low


@functools.lru_cache(maxsize=64)
def per_gpu_machine(provider: str) -> tuple[int, str]:
    """(GPUs one machine of ``provider`` holds, where that comes from) for its per-GPU rates.

    The largest whole instance of the provider in the bundled catalog, named by its catalog id (whose row
    gives its source); 8 GPUs (an HGX board) as a stated assumption when the provider has none.
    """
    from advisor.catalog.load import bundled_catalog

    rows = [o for o in bundled_catalog().offers
            if o.provider == provider and not per_unit(o.instance) and not o.is_price_index]
    if not rows:
        return HGX_GPUS, HGX_SOURCE
    best = max(rows, key=lambda o: (o.accelerator_count, o.id))
    return best.accelerator_count, (f"{provider} rents at most {best.accelerator_count} GPUs in one machine: its "
                                    f"largest instance in the catalog is {best.id}")
