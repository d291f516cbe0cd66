"""Bundled catalog data and icons, installed as the ``advisor.resources`` package."""
