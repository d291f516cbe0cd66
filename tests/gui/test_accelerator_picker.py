"""The accelerator picker's search filters the list by name, id or memory and never changes the choice."""

from __future__ import annotations

from advisor.gui.widgets.accelerator_picker import AcceleratorPicker

ACCS = [("h100-sxm", "H100 SXM5 80GB", 80 * 2**30), ("rtx-4090", "GeForce RTX 4090", 24 * 2**30),
        ("mi300x", "Instinct MI300X", 192 * 2**30)]


def test_search_filters_by_name_id_and_memory(qtbot):
    picker = AcceleratorPicker(ACCS)
    qtbot.addWidget(picker)
    picker.set_selection(["rtx-4090"])
    picker.search.setText("mi300")
    assert picker.visible_ids() == ["mi300x"]
    picker.search.setText("RTX")
    assert picker.visible_ids() == ["rtx-4090"]
    picker.search.setText("25.8 gb")  # an RTX 4090's 24 GiB in GB, as the app writes memory
    assert picker.visible_ids() == ["rtx-4090"]
    picker.search.setText("80gb")
    assert picker.visible_ids() == ["h100-sxm"]
    picker.search.setText("nothing-like-this")
    assert picker.visible_ids() == []
    assert picker.selection() == ["rtx-4090"]  # filtering keeps what is checked
    picker.search.clear()
    assert picker.visible_ids() == ["h100-sxm", "rtx-4090", "mi300x"]
    assert picker.search.accessibleName() and picker.list.accessibleName() and picker.accessibleName()
