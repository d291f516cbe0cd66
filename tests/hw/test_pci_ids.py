"""A sleeping GPU is named from sysfs and the PCI ID database, with no driver call."""

from __future__ import annotations

from advisor.hw import pcipower
from advisor.hw.match import match_catalog_id

PCI_IDS = """\
# excerpt in the layout of pci.ids (https://pci-ids.ucw.cz)
1002  Advanced Micro Devices, Inc. [AMD/ATI]
\t744c  Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]
10de  NVIDIA Corporation
\t2684  AD102 [GeForce RTX 4090]
\t28a0  AD107M [GeForce RTX 4060 Max-Q / Mobile]
\t\t1043 1234  a subsystem line, never a device
\t28e0  AD107M
8086  Intel Corporation
\t28a0  not the NVIDIA part
"""


def _tree(tmp_path, bdf="0000:01:00.0", vendor="0x10de", device="0x28a0"):
    dev = tmp_path / "devices" / bdf
    dev.mkdir(parents=True)
    (dev / "vendor").write_text(vendor + "\n")
    (dev / "device").write_text(device + "\n")
    ids = tmp_path / "pci.ids"
    ids.write_text(PCI_IDS)
    return tmp_path / "devices", ids


def test_ids_from_sysfs_and_name_from_the_database(tmp_path):
    root, ids = _tree(tmp_path)
    assert pcipower.pci_ids("00000000:01:00.0", root) == ("0x10de", "0x28a0")  # NVML's bus id form too
    assert pcipower.pci_db_name("0x10de", "0x28a0", (ids,)) == "GeForce RTX 4060 Max-Q / Mobile"
    assert pcipower.pci_db_name("10de", "28e0", (ids,)) == "AD107M"  # no marketing name: the chip
    assert pcipower.pci_db_name("0x10de", "0x1234", (ids,)) is None
    assert pcipower.pci_db_name("0x8086", "0x28a0", (ids,)) == "not the NVIDIA part"  # per vendor
    assert pcipower.pci_db_name("0x10de", "0x28a0", (tmp_path / "missing.ids",)) is None
    assert pcipower.pci_ids("0000:02:00.0", root) is None and pcipower.pci_ids(None, root) is None


def test_database_names_match_the_catalog():
    assert match_catalog_id("GeForce RTX 4060 Max-Q / Mobile") == "rtx-4060-laptop"
    assert match_catalog_id("GeForce RTX 4090") == "rtx-4090"
