"""Import cloud prices into the user catalog: preview a diff, then apply it atomically.

Sources:

* a skypilot-catalog ``vms.csv`` (columns ``InstanceType, AcceleratorName, AcceleratorCount, vCPUs,
  MemoryGiB, Price, SpotPrice, Region``); the provider comes from the caller or the file's folder name
  (``catalogs/v7/aws/vms.csv`` -> ``aws``); rows without an accelerator (CPU instances) or with one the
  catalog does not know are skipped and listed;
* the advisor's own CSV (the columns of the bundled ``cloud_offers.csv``) or TOML
  (``[cloud_offers."<provider>:<instance>"]`` tables, as in the user catalog file).

Every row is validated first; one bad row (a message naming the row and field) means nothing is applied.
Applying merges the offers into ``paths.user_catalog_file()`` (written atomically; a broken existing file
is kept aside). ``export_offers_csv`` writes the advisor's CSV, which imports back unchanged.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from advisor.catalog.load import CatalogError, load_catalog, offer_from_row, offer_row
from advisor.catalog.records import CloudOffer
from advisor.store.atomic import keep_aside, write_atomic
from advisor.units import FORMULA_START, csv_safe

# The largest price list read (a file or a download, store/download.py): real ones are a few MiB at most.
MAX_PRICE_LIST_BYTES = 32 * 2**20

# Column order of the advisor's own offers CSV (the bundled cloud_offers.csv).
OFFER_COLUMNS = ("id", "provider", "instance", "accelerator_id", "accelerator_count", "vcpus", "memory_gib",
                 "region", "on_demand_usd_per_hour", "spot_usd_per_hour", "reserved_1y_usd_per_hour",
                 "price_date", "source", "notes", "inter_node_gbps", "inter_node_source")
SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price",
                    "SpotPrice", "Region")
_ADVISOR_REQUIRED = ("provider", "instance", "accelerator_id", "accelerator_count")
_PRICE_FIELDS = ("on_demand_usd_per_h", "spot_usd_per_h", "reserved_1y_usd_per_h")
_COMPARED = ("accelerator_id", "accelerator_count", "vcpus", "memory_gib", "region", *_PRICE_FIELDS, "price_date")

# SkyPilot accelerator names (normalised: upper case, no spaces/underscores) -> catalog ids.
SKYPILOT_NAMES = {
    "H100": "h100-sxm", "H100SXM": "h100-sxm", "H100-SXM": "h100-sxm", "H100-MEGA": "h100-sxm",
    "H100PCIE": "h100-pcie", "H100-PCIE": "h100-pcie", "H100NVL": "h100-nvl", "H100-NVL": "h100-nvl",
    "H200": "h200", "GH200": "gh200-96gb", "B200": "b200",
    "A100": "a100-40gb-sxm", "A100-40GB": "a100-40gb-sxm", "A100-80GB": "a100-80gb-sxm",
    "A100-80GB-SXM": "a100-80gb-sxm", "A100-80GB-PCIE": "a100-80gb-pcie", "A100-PCIE-80GB": "a100-80gb-pcie",
    "V100": "v100-sxm2-16gb", "V100-16GB": "v100-sxm2-16gb", "V100-32GB": "v100-sxm2-32gb",
    "T4": "t4", "L4": "l4", "L40S": "l40s", "A10G": "a10g", "A10": "a10",
    "A6000": "rtx-a6000", "RTXA6000": "rtx-a6000", "RTX6000-ADA": "rtx-6000-ada", "RTX6000ADA": "rtx-6000-ada",
    "RTXPRO6000": "rtx-pro-6000-blackwell", "RTX3090": "rtx-3090", "RTX4090": "rtx-4090", "RTX5090": "rtx-5090",
    "RTX4080": "rtx-4080-super", "RTX3060": "rtx-3060-12gb",
    "MI300X": "mi300x", "MI325X": "mi325x", "MI250X": "mi250x", "GAUDI2": "gaudi2", "GAUDI3": "gaudi3",
    "TRAINIUM": "trainium1", "TRAINIUM1": "trainium1", "TRAINIUM2": "trainium2", "INFERENTIA2": "inferentia2",
}


@dataclass(frozen=True)
class PriceChange:
    """One offer whose catalog entry an import changes; ``fields`` names what differs."""

    old: CloudOffer
    new: CloudOffer
    fields: tuple[str, ...]


@dataclass(frozen=True)
class CatalogDiff:
    """What applying an import would change in the effective catalog."""

    added: tuple[CloudOffer, ...] = ()
    changed: tuple[PriceChange, ...] = ()
    removed: tuple[CloudOffer, ...] = ()
    unchanged: int = 0

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)


@dataclass(frozen=True)
class ImportResult:
    """Offers read from a file, with the rows skipped on purpose (not errors) and why."""

    offers: tuple[CloudOffer, ...]
    source: str
    format: str  # "skypilot" | "advisor-csv" | "advisor-toml"
    skipped: tuple[str, ...] = field(default_factory=tuple)


# ------------------------------------------------------------------------------------------ name mapping
def skypilot_accelerator_id(name: str, known_ids=()) -> str | None:
    """Catalog id of a SkyPilot ``AcceleratorName`` (``"H100"``, ``"A100-80GB"``, ``"RTX4090"``), or None."""
    key = re.sub(r"[\s_]+", "", name.strip().upper())
    if key in SKYPILOT_NAMES:
        return SKYPILOT_NAMES[key]
    lowered = re.sub(r"[\s_]+", "-", name.strip().lower())
    return lowered if lowered in known_ids else None


# ---------------------------------------------------------------------------------------------- reading
def _decode(raw: bytes, where: str) -> str:
    if b"\x00" in raw:
        raise CatalogError(f"{where}: not a text file (binary data)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"{where}: not UTF-8 text (byte {exc.start})") from None


def _csv_rows(text: str, where: str) -> tuple[list[str], list[dict]]:
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
        rows = []
        for row in reader:
            if None in row:
                raise CatalogError(f"{where} row {reader.line_num}: more cells than columns")
            rows.append({(k or "").strip(): _uncell(v) for k, v in row.items()})
    except csv.Error as exc:
        raise CatalogError(f"{where}: not a valid CSV file: {exc}") from None
    if not header:
        raise CatalogError(f"{where}: empty file (no header row)")
    return header, rows


def _check_row_complete(row: dict, header: list[str], where: str) -> None:
    missing = [h for h in header if row.get(h) is None]
    if missing:  # a short row, e.g. a file cut off mid-write
        raise CatalogError(f"{where}: field {missing[0]!r} is missing (row cut short)")


def _today() -> str:
    return _dt.datetime.now(_dt.UTC).date().isoformat()


def _number(raw, where: str, name: str, *, required: bool = False) -> float | None:
    if raw is None or str(raw).strip() == "":
        if required:
            raise CatalogError(f"{where}: field {name!r} is required")
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise CatalogError(f"{where}: field {name!r} is not a number: {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise CatalogError(f"{where}: field {name!r} must be zero or more, got {raw!r}")
    return value


def parse_skypilot_csv(text: str, provider: str, *, where: str = "skypilot csv", price_date: str | None = None,
                       region: str | None = None, accelerators: dict | None = None) -> ImportResult:
    """Offers from a skypilot-catalog ``vms.csv``.

    One offer per instance type: the rows of ``region`` when given, else of the region with the lowest
    on-demand price; within that region the lowest on-demand and spot prices.

    Args:
        provider: cloud name (``aws``, ``gcp``, ``lambda`` ...); offer ids are ``<provider>:<instance>``.
        price_date: ISO date recorded on every row (the file carries none); today (UTC) by default.
        accelerators: known accelerators (ids); the current catalog's by default.
    Raises:
        CatalogError: for a missing column or a bad row (naming the row and field).
    """
    if not provider:
        raise CatalogError(f"{where}: the cloud provider is needed (e.g. --provider aws)")
    header, rows = _csv_rows(text, where)
    missing = [c for c in SKYPILOT_COLUMNS if c not in header]
    if missing:
        raise CatalogError(f"{where}: missing column(s) {', '.join(missing)}")
    catalog = load_catalog()
    known = accelerators if accelerators is not None else catalog.accelerators
    spelling = {o.provider.lower(): o.provider for o in catalog.offers}
    provider = spelling.get(provider.lower(), provider)  # "aws" -> "AWS", as the catalog writes it
    if price_date:
        try:
            _dt.date.fromisoformat(price_date)
        except ValueError:
            raise CatalogError(f"price date: expected YYYY-MM-DD, got {price_date!r}") from None
    price_date = price_date or _today()
    skipped: list[str] = []
    by_instance: dict[str, list[tuple[str, dict, str]]] = {}
    for i, row in enumerate(rows, start=2):
        at = f"{where} row {i}"
        _check_row_complete(row, header, at)
        instance = (row["InstanceType"] or "").strip()
        if not instance:
            raise CatalogError(f"{at}: field 'InstanceType' is required")
        name = (row["AcceleratorName"] or "").strip()
        count = _number(row["AcceleratorCount"], at, "AcceleratorCount")
        price = _number(row["Price"], at, "Price")
        spot = _number(row["SpotPrice"], at, "SpotPrice")
        _number(row["vCPUs"], at, "vCPUs")
        _number(row["MemoryGiB"], at, "MemoryGiB")
        if not name:
            continue  # a CPU-only instance
        accel = skypilot_accelerator_id(name, known)
        if accel is None or accel not in known:
            skipped.append(f"row {i} {instance}: accelerator {name!r} is not in the catalog")
            continue
        if not count or not float(count).is_integer():
            skipped.append(f"row {i} {instance}: fractional accelerator count {row['AcceleratorCount']!r}")
            continue
        if price is None and spot is None:
            skipped.append(f"row {i} {instance}: no price")
            continue
        by_instance.setdefault(instance, []).append((at, row, accel))
    offers = []
    for instance, entries in by_instance.items():
        regions = sorted({(r["Region"] or "").strip() for _, r, _ in entries})
        if region is not None:
            if region not in regions:
                continue
            chosen = region
        else:
            def cheapest(reg, entries=entries):
                ps = [float(r["Price"]) for _, r, _ in entries if (r["Region"] or "").strip() == reg
                      and (r["Price"] or "").strip()]
                return (min(ps) if ps else math.inf, reg)
            chosen = min(regions, key=cheapest)
        rows_in = [(at, r, a) for at, r, a in entries if (r["Region"] or "").strip() == chosen]
        at, first, accel = rows_in[0]
        ods = [float(r["Price"]) for _, r, _ in rows_in if (r["Price"] or "").strip()]
        spots = [float(r["SpotPrice"]) for _, r, _ in rows_in if (r["SpotPrice"] or "").strip()]
        row = {"provider": provider, "instance": instance, "accelerator_id": accel,
               "accelerator_count": first["AcceleratorCount"], "vcpus": first["vCPUs"],
               "memory_gib": first["MemoryGiB"], "region": chosen,
               "on_demand_usd_per_hour": min(ods) if ods else None, "spot_usd_per_hour": min(spots) if spots else None,
               "price_date": price_date, "source": f"skypilot-catalog {where}"}
        offers.append(offer_from_row(row, at, known))
    return ImportResult(offers=tuple(offers), source=where, format="skypilot", skipped=tuple(skipped))


def parse_advisor_csv(text: str, *, where: str = "offers csv", accelerators: dict | None = None) -> ImportResult:
    """Offers from the advisor's own CSV (the columns of ``OFFER_COLUMNS``).

    Raises:
        CatalogError: for a missing column, a bad row or a repeated id (naming the row and field).
    """
    header, rows = _csv_rows(text, where)
    missing = [c for c in _ADVISOR_REQUIRED if c not in header]
    if not any(c in header for c in ("on_demand_usd_per_hour", "spot_usd_per_hour")):
        missing.append("on_demand_usd_per_hour")
    if missing:
        raise CatalogError(f"{where}: missing column(s) {', '.join(missing)}")
    known = accelerators if accelerators is not None else load_catalog().accelerators
    offers: list[CloudOffer] = []
    seen: dict[str, int] = {}
    for i, row in enumerate(rows, start=2):
        at = f"{where} row {i}"
        _check_row_complete(row, header, at)
        offer = offer_from_row(row, at, known)
        if offer.id in seen:
            raise CatalogError(f"{at}: field 'id' repeats {offer.id!r} of row {seen[offer.id]}")
        seen[offer.id] = i
        offers.append(offer)
    return ImportResult(offers=tuple(offers), source=where, format="advisor-csv")


def parse_advisor_toml(text: str, *, where: str = "offers toml", accelerators: dict | None = None) -> ImportResult:
    """Offers from ``[cloud_offers."<provider>:<instance>"]`` tables (other tables are not prices: skipped)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(f"{where}: not valid TOML: {' '.join(str(exc).split())}") from None
    except RecursionError:
        raise CatalogError(f"{where}: not a price list (values nested too deeply)") from None
    table = doc.get("cloud_offers")
    if not isinstance(table, dict) or not table:
        raise CatalogError(f"{where}: no [cloud_offers] tables")
    known = accelerators if accelerators is not None else load_catalog().accelerators
    offers = []
    for offer_id, row in table.items():
        at = f"{where} [cloud_offers.{offer_id!r}]"
        if not isinstance(row, dict):
            raise CatalogError(f"{at}: expected a table")
        for key in ("provider", "instance"):
            row.setdefault(key, offer_id.split(":", 1)[0 if key == "provider" else -1])
        offers.append(offer_from_row(row | {"id": offer_id}, at, known))
    skipped = tuple(f"table [{k}] is not a price table" for k in doc if k != "cloud_offers")
    return ImportResult(offers=tuple(offers), source=where, format="advisor-toml", skipped=skipped)


def read_offers_file(path: str | os.PathLike, *, provider: str | None = None, price_date: str | None = None,
                     region: str | None = None, accelerators: dict | None = None) -> ImportResult:
    """Read an offers file of any supported format (TOML by suffix; CSV by its header).

    Raises:
        CatalogError: one line naming the file, row and field; nothing is returned in part.
    """
    from advisor.catalog.readfile import read_regular_file

    path = Path(path)
    where = path.name
    try:
        raw = read_regular_file(path, MAX_PRICE_LIST_BYTES)
    except OSError as exc:
        raise CatalogError(f"{where}: cannot read: {exc.strerror or exc}") from None
    text = _decode(raw, where)
    if path.suffix.lower() == ".toml":
        return parse_advisor_toml(text, where=where, accelerators=accelerators)
    first = text.splitlines()[0] if text.strip() else ""
    if "InstanceType" in first:
        provider = provider or provider_from_path(path)
        return parse_skypilot_csv(text, provider or "", where=where, price_date=price_date, region=region,
                                  accelerators=accelerators)
    return parse_advisor_csv(text, where=where, accelerators=accelerators)


def provider_from_path(path: Path, resolve: bool = True) -> str | None:
    """The provider folder of a skypilot-catalog path (``catalogs/v7/aws/vms.csv`` -> ``aws``), or None."""
    parent = (path.resolve() if resolve else path).parent.name.lower()
    if not parent or parent in ("tmp", "catalogs", "cache") or re.fullmatch(r"v\d+", parent):
        return None
    return parent


# ------------------------------------------------------------------------------------------------- diff
def diff_offers(current, imported, *, replace_providers: bool = False) -> CatalogDiff:
    """What changes when ``imported`` offers are merged over ``current`` ones.

    Args:
        replace_providers: treat the import as the full price list of its providers, so their current
            offers missing from it are listed as removed.
    """
    now = {o.id: o for o in current}
    added, changed, same = [], [], 0
    for new in imported:
        old = now.get(new.id)
        if old is None:
            added.append(new)
            continue
        differs = tuple(f for f in _COMPARED if getattr(old, f) != getattr(new, f))
        if differs:
            changed.append(PriceChange(old, new, differs))
        else:
            same += 1
    removed = []
    if replace_providers:
        ids = {o.id for o in imported}
        providers = {o.provider.lower() for o in imported}
        removed = [o for o in current if o.provider.lower() in providers and o.id not in ids]
    return CatalogDiff(tuple(added), tuple(changed), tuple(removed), same)


def format_diff(diff: CatalogDiff) -> list[str]:
    """Readable lines: ``+ id  price``, ``~ id  field old -> new``, ``- id``."""
    def price(o: CloudOffer) -> str:
        od = "-" if o.on_demand_usd_per_h is None else f"${o.on_demand_usd_per_h:g}/h"
        sp = "" if o.spot_usd_per_h is None else f", spot ${o.spot_usd_per_h:g}/h"
        return f"{o.accelerator_count}x {o.accelerator_id} {od}{sp} ({o.price_date or 'undated'})"

    lines = [f"+ {o.id}  {price(o)}" for o in diff.added]
    for c in diff.changed:
        parts = [f"{f.replace('_usd_per_h', '')} {_show(getattr(c.old, f))} -> {_show(getattr(c.new, f))}"
                 for f in c.fields]
        lines.append(f"~ {c.new.id}  " + "; ".join(parts))
    lines += [f"- {o.id}  {price(o)}" for o in diff.removed]
    lines.append(f"{len(diff.added)} added, {len(diff.changed)} changed, {len(diff.removed)} removed, "
                 f"{diff.unchanged} unchanged")
    return lines


def _show(v) -> str:
    return "-" if v is None or v == "" else (f"{v:g}" if isinstance(v, float) else str(v))


# ------------------------------------------------------------------------------------------------ apply
def apply_import(imported, *, path: str | os.PathLike | None = None, removed=()) -> tuple[Path, str | None]:
    """Merge offers into the user catalog file atomically.

    The previous file is kept beside it as ``<name>.prev`` (TOML comments do not survive the rewrite);
    one that cannot be read is moved aside (``<name>.broken-<time>``) instead.
    Offers named in ``removed`` are dropped from the user file; a bundled one is marked ``withdrawn = true``.

    The read-modify-write runs under a file lock (``<name>.lock``, see ``store.atomic.locked``), so two
    imports at once both land: the second reads what the first wrote.

    Returns:
        (the file written, the path a broken previous file was moved to, or None).
    Raises:
        OSError: when the file cannot be written (the old file is then untouched), or the lock is not
            free within its timeout.
    """
    from advisor import paths
    from advisor.store.atomic import locked

    path = Path(path) if path is not None else paths.user_catalog_file()
    with locked(path):
        return _apply_unlocked(path, imported, removed)


def _apply_unlocked(path: Path, imported, removed) -> tuple[Path, str | None]:
    import tomli_w

    doc: dict = {}
    kept_aside = None
    from advisor.catalog.readfile import read_regular_file

    old = read_regular_file(path) if path.exists() else None  # a FIFO or device here is refused, not read
    if old is not None:
        try:
            doc = tomllib.loads(old.decode("utf-8"))
            if not isinstance(doc.get("cloud_offers", {}), dict):
                raise ValueError("cloud_offers is not a table")
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError):
            kept_aside, old, doc = str(keep_aside(path)), None, {}
    table = doc.setdefault("cloud_offers", {})
    lower = {k.lower(): k for k in table}
    from advisor.catalog.load import bundled_catalog

    bundled = {o.id for o in bundled_catalog().offers}
    for offer in removed:
        table.pop(lower.get(offer.id, offer.id), None)
        if offer.id in bundled:
            table[offer.id] = {"withdrawn": True}
    for offer in imported:
        table.pop(lower.get(offer.id, offer.id), None)
        # "" (not omission) for a missing value, so it also clears a bundled value of the same offer
        table[offer.id] = {k: "" if v is None else v for k, v in offer_row(offer).items() if k != "id"}
    text = tomli_w.dumps(doc)
    if old is not None:
        write_atomic(path.with_name(path.name + ".prev"), old)
    write_atomic(path, text)
    return path, kept_aside


# ----------------------------------------------------------------------------------------------- export
def _cell(value) -> str:
    """A CSV cell; text a spreadsheet would run as a formula gets a leading ``'`` (removed again on import)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return csv_safe(str(value))


def _uncell(text):
    """The value of a cell ``_cell`` wrote: a ``'`` put before a formula character is taken off."""
    if isinstance(text, str) and text.startswith("'") and text[1:].startswith(FORMULA_START):
        return text[1:]
    return text


def export_offers_csv(offers) -> str:
    """The advisor's CSV of ``offers`` (header ``OFFER_COLUMNS``), which ``parse_advisor_csv`` reads back."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(OFFER_COLUMNS)
    for o in offers:
        row = offer_row(o)
        w.writerow([_cell(row[c]) for c in OFFER_COLUMNS])
    return out.getvalue()


def export_offers_toml(offers) -> str:
    """The offers as ``[cloud_offers."<id>"]`` tables (the user catalog format)."""
    import tomli_w

    return tomli_w.dumps({"cloud_offers": {o.id: {k: v for k, v in offer_row(o).items()
                                                  if k != "id" and v is not None and v != ""} for o in offers}})
