"""Hand-made catalog records, so the worked figures do not move when the bundled catalog is updated."""

from __future__ import annotations

import pytest

from advisor.catalog.records import Accelerator, CloudOffer


def make_accel(id="card", price=1600.0, tdp=450.0, **kw) -> Accelerator:
    return Accelerator(id=id, vendor="v", name=id, kind="consumer", memory_bytes=24 * 2**30, memory_type="GDDR6X",
                       mem_bandwidth_bps=1e12, fp32_flops=8e13, tf32_flops=None, bf16_flops=1.6e14,
                       fp16_flops=1.6e14, fp8_flops=None, int8_ops=None, tdp_w=tdp, street_price_usd=price, **kw)


def make_offer(id="aws:x", provider="AWS", accel="card", count=1, od=1.0, spot=None) -> CloudOffer:
    return CloudOffer(id=id, provider=provider, instance=id.split(":")[-1], accelerator_id=accel,
                      accelerator_count=count, vcpus=None, memory_gib=None, region="r", on_demand_usd_per_h=od,
                      spot_usd_per_h=spot, reserved_1y_usd_per_h=None, price_date="2026-01-01")


@pytest.fixture
def card() -> Accelerator:
    return make_accel()
