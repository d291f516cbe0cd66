"""Macs one can buy: each row's chip in its configuration, and bad rows as one line."""

from __future__ import annotations

import pytest

from advisor.catalog import CatalogError, load_catalog
from advisor.catalog.machines import COLUMNS, load_machines, parse_machines_csv


@pytest.fixture(scope="module")
def cat():
    return load_catalog(use_user_file=False)


def test_bundled_macs_with_price_power_and_source(cat):
    machines = {m.id: m for m in load_machines(cat.accelerators)}
    m2max = machines["mac-studio-m2-max-32gb"]
    assert m2max.price_usd == 1999 and m2max.power_w == 145 and "support.apple.com/102027" in m2max.source
    acc = m2max.accelerator(cat.accelerators["m2-max"])
    # 32 GiB of unified memory, 0.75 of it for the GPU (the catalog row's share); 30 of the 38 GPU cores
    assert acc.memory_bytes == int(32 * 2**30 * 0.75) and acc.gpu_memory_share is None
    assert acc.fp16_flops == pytest.approx(cat.accelerators["m2-max"].fp16_flops * 30 / 38)
    assert acc.mem_bandwidth_bps == cat.accelerators["m2-max"].mem_bandwidth_bps
    assert acc.tdp_w == 145 and acc.price_usd == 1999 and acc.kind == "apple"
    ultra = machines["mac-studio-m2-ultra-192gb"].accelerator(cat.accelerators["m2-ultra"])
    assert ultra.memory_bytes == int(192 * 2**30 * 0.75) and ultra.tdp_w == 295


@pytest.mark.parametrize(("change", "message"), [
    (("m2-max", "no-such-chip"), "unknown accelerator"),
    (("1999", "-1"), "price_usd must be a positive number"),
    (("1999", "abc"), "price_usd must be a number"),
    ((",30,38,", ",40,38,"), "gpu_cores exceeds"),
])
def test_bad_rows_are_one_line(cat, change, message):
    row = 'x,"X",m2-max,32,30,38,1999,2023-06,145,src,'
    text = ",".join(COLUMNS) + "\n" + row.replace(*change, 1) + "\n"
    with pytest.raises(CatalogError, match=message) as exc:
        parse_machines_csv(text, cat.accelerators)
    assert "row 2" in str(exc.value) and "\n" not in str(exc.value)
    with pytest.raises(CatalogError, match="missing columns"):
        parse_machines_csv("id,name\nx,y\n", cat.accelerators)
