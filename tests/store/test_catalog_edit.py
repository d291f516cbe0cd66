"""The catalog editor against a concurrent ``catalog import --apply``, FIFOs and files that are not UTF-8
(issue 28). Before: the app's editor read with ``read_text`` (a FIFO hung it, a bad byte raised) and saved
with ``write_atomic`` alone, so an import applied while it was open was silently lost."""

from __future__ import annotations

import os
import threading
import time

import pytest

from advisor import paths
from advisor.catalog import importer as im
from advisor.catalog.load import load_catalog
from advisor.store import catalog_edit as ce
from advisor.store.atomic import locked

SKY = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n" \
      "box.4090,RTX4090,1,8,32,0.55,,us-east-1\n"


def test_an_import_applied_while_the_editor_is_open_is_not_lost():
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    user.write_text('[accelerators.rtx-4090]\nstreet_price_usd = 1799\n')
    opened = ce.open_for_edit(user)
    im.apply_import(im.parse_skypilot_csv(SKY, "aws", price_date="2026-11-30").offers)  # "applied"
    applied = user.read_bytes()
    with pytest.raises(ce.ChangedOnDisk, match="changed since the editor opened it"):
        ce.save_edited(opened, opened.text + "\n# my edit\n")
    assert user.read_bytes() == applied and "aws:box.4090" in {o.id for o in load_catalog().offers}
    reopened = ce.open_for_edit(user)  # the reload the app offers: the edit then saves over the new file
    saved = ce.save_edited(reopened, reopened.text + "# my edit\n")
    assert "# my edit" in user.read_text() and "box.4090" in user.read_text()
    ce.save_edited(saved, saved.text + "# again\n")  # a second save from the same editor is not a conflict


def test_the_save_waits_for_the_imports_lock():
    user = paths.user_catalog_file()
    opened = ce.open_for_edit(user, "# template\n")
    assert opened.digest is None and opened.text == "# template\n"
    held = threading.Event()
    release = threading.Event()

    def hold():
        with locked(user):
            held.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(5)
    with pytest.raises(ce.CatalogEditError, match="another advisor"):
        ce.save_edited(opened, "# mine\n", timeout_s=0.2)
    release.set()
    t.join()
    ce.save_edited(opened, "# mine\n")
    assert user.read_text() == "# mine\n"


def test_fifo_dev_zero_and_bad_utf8_are_messages(tmp_path):
    fifo = tmp_path / "catalog.toml"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(ce.CatalogEditError, match="FIFO"):
        ce.open_for_edit(fifo)
    with pytest.raises(ce.CatalogEditError, match="not a regular file"):
        ce.open_for_edit("/dev/zero")
    assert time.monotonic() - start < 2
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"# caf\xe9\n")
    with pytest.raises(ce.CatalogEditError, match="not UTF-8 text \\(byte 5\\)"):
        ce.open_for_edit(bad)
    ok = ce.open_for_edit(tmp_path / "new.toml")
    with pytest.raises(ce.CatalogEditError, match="not valid TOML"):
        ce.save_edited(ok, "[a\n")
    with pytest.raises(ce.CatalogEditError, match="not valid TOML"):
        ce.save_edited(ok, "x = " + "[" * 100_000)
