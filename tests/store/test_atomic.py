"""Atomic writes: the old file survives a failed save; permissions follow the old file or the umask."""

from __future__ import annotations

import os
import stat

import pytest

from advisor.store.atomic import keep_aside, write_atomic


def test_writes_text_and_bytes(tmp_path):
    f = tmp_path / "sub" / "a.toml"
    write_atomic(f, "héllo")
    assert f.read_text(encoding="utf-8") == "héllo"
    write_atomic(f, b"\x00\x01")
    assert f.read_bytes() == b"\x00\x01"
    assert [p.name for p in f.parent.iterdir()] == ["a.toml"]  # no temp file left behind


def test_failed_replace_keeps_the_old_file(tmp_path, monkeypatch):
    f = tmp_path / "a.txt"
    f.write_text("old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(f, "new")
    assert f.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_new_files_follow_the_umask_and_replaced_files_keep_their_mode(tmp_path):
    old = os.umask(0o022)
    try:
        f = write_atomic(tmp_path / "new.txt", "x")
        assert stat.S_IMODE(f.stat().st_mode) == 0o644
        os.chmod(f, 0o640)
        write_atomic(f, "y")
        assert stat.S_IMODE(f.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_keep_aside_moves_the_broken_file(tmp_path):
    f = tmp_path / "settings.json"
    f.write_text("{broken")
    first = keep_aside(f)
    f.write_text("{broken again")
    second = keep_aside(f)
    assert not f.exists()
    assert first != second and first.read_text() == "{broken" and second.read_text() == "{broken again"
    assert first.name.startswith("settings.json.broken-")
