"""Placeholder."""
from PySide6.QtWidgets import QLabel, QVBoxLayout
from advisor.gui.pages.base import Page


class ProbesPage(Page):
    page_id = "probes"

    def __init__(self, ctx, parent=None):
        super().__init__(ctx, parent)
        QVBoxLayout(self).addWidget(QLabel("probes"))
