"""Disk and capacity probes on the host."""

from __future__ import annotations

from advisor.probes import drive, open_probe


def test_disk_reads_one_and_several_and_cleans_up(tmp_path):
    r = drive(open_probe("disk", directory=str(tmp_path), file_bytes=8 << 20, readers=3, passes=2))
    assert r.skipped is None
    assert set(r.results) == {"read_1", "read_3"}
    for k in r.results.values():
        assert k.unit == "GB/s" and k.repetitions == 2 and k.best >= k.median > 0
    assert r.params["block_bytes"] == 1 << 20 and isinstance(r.params["direct_io"], bool)
    assert list(tmp_path.iterdir()) == []
    if not r.params["direct_io"]:
        assert any("page cache" in n for n in r.notes)


def test_disk_default_directory_is_the_cache_dir(advisor_home):
    r = drive(open_probe("disk", file_bytes=2 << 20, readers=1, passes=1))
    assert r.params["directory"].startswith(str(advisor_home)) and set(r.results) == {"read_1"}


def test_host_capacity_reports_os_figures_without_filling_ram():
    r = drive(open_probe("capacity"))
    usable, total = r.results["usable"], r.results["total"]
    assert usable.unit == "GB" and 0 < usable.best <= total.best
    assert r.params["method"] == "os-report"
