"""The catalog: accelerators, cloud offers and model presets, bundled and user-edited."""

from advisor.catalog.load import Catalog, CatalogError, load_catalog
from advisor.catalog.records import PRECISIONS, Accelerator, CloudOffer

__all__ = ["Accelerator", "Catalog", "CatalogError", "CloudOffer", "PRECISIONS", "load_catalog"]
