"""The app starts with a wrongly shaped user catalog and shows the warning (escaped, as text)."""

from __future__ import annotations


def test_the_app_shows_a_bad_user_catalog_warning(make_window):
    from advisor import paths

    user = paths.user_catalog_file()
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('accelerators = 5\n[models."<b>x</b>"]\nlayers = 2\n')
    window = make_window()
    assert "2 catalog warning(s)" in window.statusBar().currentMessage()
    page = window.page("catalog")
    text = page.note.text()
    assert "[accelerators]" in text and "&lt;b&gt;x&lt;/b&gt;" in text and "<b>x</b>" not in text
