"""The Catalog page's "Edit overrides" editor: a FIFO or a file that is not UTF-8 is a message (before: the
dialog hung on the FIFO, raised on the bad byte); a file changed on disk while it is open is not overwritten,
and reloading it is offered (before: the save silently undid an applied import)."""

from __future__ import annotations

import os

from PySide6.QtWidgets import QDialog, QMessageBox

from advisor import paths
from advisor.gui.pages.catalog import OverridesDialog


def test_fifo_and_bad_utf8_catalog_file_are_a_message(qtbot, monkeypatch):
    shown = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append(text))
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    os.mkfifo(user)
    dialog = OverridesDialog()
    qtbot.addWidget(dialog)
    assert dialog.exec() == QDialog.DialogCode.Rejected and "FIFO" in shown[-1]
    user.unlink()
    user.write_bytes(b"# caf\xe9\n")
    dialog = OverridesDialog()
    qtbot.addWidget(dialog)
    assert dialog.exec() == QDialog.DialogCode.Rejected and "not UTF-8" in shown[-1]


def test_a_file_changed_while_open_is_not_overwritten_and_can_be_reloaded(qtbot, monkeypatch):
    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True)
    user.write_text("# mine\n")
    dialog = OverridesDialog()
    qtbot.addWidget(dialog)
    dialog.editor.setPlainText("# mine, edited\n")
    user.write_text('[accelerators.rtx-4090]\nstreet_price_usd = 1599\n')  # an import applied meanwhile
    answers = [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes]
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda parent, title, text, *a: (asked.append(text), answers.pop(0))[1])
    dialog._on_save_clicked()  # No: nothing written, the edit stays in the editor
    assert "changed since the editor opened it" in asked[0] and "1599" in user.read_text()
    assert dialog.editor.toPlainText() == "# mine, edited\n" and dialog.result() != QDialog.DialogCode.Accepted
    dialog._on_save_clicked()  # Yes: reloaded from disk
    assert "1599" in dialog.editor.toPlainText()
    dialog.editor.setPlainText(dialog.editor.toPlainText() + "# and mine\n")
    dialog._on_save_clicked()
    assert dialog.result() == QDialog.DialogCode.Accepted and "1599" in user.read_text() and "# and mine" in user.read_text()
