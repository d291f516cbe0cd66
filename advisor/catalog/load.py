"""Load the bundled catalog from ``advisor.resources`` and merge the user's catalog file over it.

The user file (``paths.user_catalog_file()``, TOML) has tables ``[accelerators.<id>]``,
``[cloud_offers."<provider>:<instance>"]`` and ``[models.<id>]`` with the same field names as the
bundled files. A field given for an existing id overrides the bundled value; a new id adds an entry;
``withdrawn = true`` in a cloud offer's table removes that offer.
A malformed file or entry is reported in ``Catalog.warnings`` and ignored; it never raises.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path

from advisor.catalog.records import Accelerator, CloudOffer, check_id
from advisor.estimate.model import ModelArch

BUNDLED_DATE = "2026-11-29"


class CatalogError(ValueError):
    """A catalog row or file is invalid; the message names the row and field."""


def csv_rows(text: str, where: str, columns) -> Iterator[tuple[str, dict]]:
    """The rows of a catalog CSV that must have ``columns``, each with where it is (``FILE row N``).

    Raises:
        CatalogError: a column is missing (names them).
    """
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in columns if c not in (reader.fieldnames or ())]
    if missing:
        raise CatalogError(f"{where}: missing columns {', '.join(missing)}")
    for i, row in enumerate(reader, start=2):
        yield f"{where} row {i}", row


@dataclass(frozen=True)
class Catalog:
    """Everything the planner prices against."""

    accelerators: dict[str, Accelerator]
    offers: tuple[CloudOffer, ...]
    models: dict[str, ModelArch]
    date: str = BUNDLED_DATE
    warnings: tuple[str, ...] = ()
    user_file: str | None = None
    user_ids: frozenset[str] = field(default_factory=frozenset)

    def accelerator(self, accel_id: str) -> Accelerator:
        try:
            return self.accelerators[accel_id]
        except KeyError:
            raise CatalogError(f"unknown accelerator {accel_id!r}") from None

    def model(self, model_id: str) -> ModelArch:
        try:
            return self.models[model_id]
        except KeyError:
            raise CatalogError(f"unknown model preset {model_id!r}") from None

    def offers_for(self, accel_id: str) -> list[CloudOffer]:
        return [o for o in self.offers if o.accelerator_id == accel_id]

    @property
    def prices_as_of(self) -> str:
        """The newest dated cloud price in the catalog (ISO date), the catalog date when none is dated."""
        dates = [o.price_date[:10] for o in self.offers if o.price_date[:4].isdigit()]
        return max(dates) if dates else self.date


# ---------------------------------------------------------------- row parsing
def _num(row: dict, key: str, where: str, *, required: bool = False, positive: bool = False) -> float | None:
    raw = row.get(key)
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        if required:
            raise CatalogError(f"{where}: field {key!r} is required")
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise CatalogError(f"{where}: field {key!r} is not a number: {raw!r}") from None
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise CatalogError(f"{where}: field {key!r} must be {'positive' if positive else 'zero or more'}, got {raw!r}")
    return value


def _int(row: dict, key: str, where: str, **kw) -> int | None:
    value = _num(row, key, where, **kw)
    return None if value is None else int(value)


def _str(row: dict, key: str) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _valid_id(value: str, what: str) -> str:
    try:
        return check_id(value, what)
    except ValueError as exc:
        raise CatalogError(str(exc)) from None


def _tera(value: float | None) -> float | None:
    return None if value is None else value * 1e12


def accelerator_from_row(row: dict, where: str = "accelerator") -> Accelerator:
    """Build an accelerator from a catalog row (memory in GB as the vendor prints it, figures in TFLOP/s).

    GPU vendors' "GB" of on-board memory are binary (a 24 GB card holds 24 GiB), so memory is stored
    as ``memory_gb * 2**30`` bytes. Raises CatalogError naming the field.
    """
    acc_id = _str(row, "id")
    if not acc_id:
        raise CatalogError(f"{where}: field 'id' is required")
    _valid_id(acc_id, f"{where}: field 'id'")
    where = f"{where} {acc_id!r}"
    return Accelerator(
        id=acc_id,
        vendor=_str(row, "vendor"),
        name=_str(row, "name") or acc_id,
        kind=_str(row, "kind") or "datacenter",
        memory_bytes=int(_num(row, "memory_gb", where, required=True, positive=True) * 2**30),
        memory_type=_str(row, "memory_type"),
        mem_bandwidth_bps=_num(row, "mem_bandwidth_gbs", where, required=True, positive=True) * 1e9,
        fp32_flops=_tera(_num(row, "fp32_tflops", where)),
        tf32_flops=_tera(_num(row, "tf32_tflops", where)),
        bf16_flops=_tera(_num(row, "bf16_tflops", where)),
        fp16_flops=_tera(_num(row, "fp16_tflops", where)),
        fp8_flops=_tera(_num(row, "fp8_tflops", where)),
        fp4_flops=_tera(_num(row, "fp4_tflops", where)),
        int8_ops=_tera(_num(row, "int8_tops", where)),
        tdp_w=_num(row, "tdp_w", where),
        interconnect=_str(row, "interconnect"),
        interconnect_bps=(lambda v: None if v is None else v * 1e9)(_num(row, "interconnect_gbs", where)),
        pcie_gen=_int(row, "pcie_gen", where),
        launch_year=_int(row, "launch_year", where),
        launch_price_usd=_num(row, "launch_price_usd", where),
        street_price_usd=_num(row, "street_price_usd", where),
        street_price_date=_str(row, "street_price_date"),
        data_date=_str(row, "data_date"),
        source=_str(row, "source"),
        notes=_str(row, "notes"),
        gpu_memory_share=_share(row, where),
    )


def _share(row: dict, where: str) -> float | None:
    value = _num(row, "gpu_memory_share", where)
    if value is not None and not 0 < value <= 1:
        raise CatalogError(f"{where}: field 'gpu_memory_share' must be in (0, 1], got {value!r}")
    return value


def offer_from_row(row: dict, where: str = "cloud offer", accelerators: dict | None = None) -> CloudOffer:
    """Build a cloud offer from a catalog row; prices are for the whole instance per hour."""
    provider, instance = _str(row, "provider"), _str(row, "instance")
    offer_id = _str(row, "id") or f"{provider}:{instance}".lower().replace(" ", "-")
    where = f"{where} {offer_id!r}"
    if not provider or not instance:
        raise CatalogError(f"{where}: fields 'provider' and 'instance' are required")
    _valid_id(offer_id, f"{where}: field 'id'")
    accel = _str(row, "accelerator_id")
    if not accel:
        raise CatalogError(f"{where}: field 'accelerator_id' is required")
    _valid_id(accel, f"{where}: field 'accelerator_id'")
    if accelerators is not None and accel not in accelerators:
        raise CatalogError(f"{where}: field 'accelerator_id' names an unknown accelerator {accel!r}")
    count = _int(row, "accelerator_count", where, required=True, positive=True)
    od = _num(row, "on_demand_usd_per_hour", where)
    spot = _num(row, "spot_usd_per_hour", where)
    if od is None and spot is None:
        raise CatalogError(f"{where}: needs an on-demand or a spot price")
    return CloudOffer(
        id=offer_id.lower(), provider=provider, instance=instance, accelerator_id=accel,
        accelerator_count=count, vcpus=_num(row, "vcpus", where), memory_gib=_num(row, "memory_gib", where),
        region=_str(row, "region"), on_demand_usd_per_h=od, spot_usd_per_h=spot,
        reserved_1y_usd_per_h=_num(row, "reserved_1y_usd_per_hour", where),
        price_date=_str(row, "price_date"), source=_str(row, "source"), notes=_str(row, "notes"),
        inter_node_gbps=_num(row, "inter_node_gbps", where, positive=True),
        inter_node_source=_str(row, "inter_node_source"),
    )


_MODEL_FIELDS = {f.name: f for f in fields(ModelArch)}


def model_from_table(model_id: str, table: dict, where: str = "model") -> ModelArch:
    """Build a model preset from a TOML table; unknown keys are kept in ``extra``."""
    _valid_id(model_id, f"{where}: id")
    where = f"{where} {model_id!r}"
    kwargs: dict = {"id": model_id, "name": str(table.get("name", model_id))}
    extra = {}
    for key, value in table.items():
        if key in ("id", "name"):
            continue
        f = _MODEL_FIELDS.get(key)
        if f is None:
            extra[key] = value
            continue
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        try:
            if kind == "int":
                if isinstance(value, bool) or float(value) != int(float(value)):
                    raise ValueError
                kwargs[key] = int(float(value))
            elif kind == "float":
                kwargs[key] = float(value)
            elif kind == "bool":
                if not isinstance(value, bool):
                    raise ValueError
                kwargs[key] = value
            else:
                kwargs[key] = str(value)
        except (TypeError, ValueError, OverflowError):
            raise CatalogError(f"{where}: field {key!r} has an invalid value {value!r}") from None
    for key in ("layers", "hidden", "heads", "vocab", "ffn"):
        if key not in kwargs:
            raise CatalogError(f"{where}: field {key!r} is required")
    kwargs.setdefault("kv_heads", kwargs["heads"])
    try:
        return ModelArch(**kwargs, extra=extra)
    except ValueError as exc:
        raise CatalogError(f"{where}: {exc}") from None


# ---------------------------------------------------------------- files
def _resource_text(name: str) -> str:
    """A bundled data file, read through ``importlib.resources`` from the installed package.

    Run from a source checkout that was never installed, ``advisor.resources`` does not exist (the
    top-level ``resources/`` folder is mapped into the package at install time): read the folder itself.
    """
    try:
        folder = resources.files("advisor.resources")
    except ModuleNotFoundError:
        folder = Path(__file__).resolve().parents[2] / "resources"
    return folder.joinpath(name).read_text(encoding="utf-8")


def parse_accelerators_csv(text: str, where: str = "accelerators.csv") -> dict[str, Accelerator]:
    out: dict[str, Accelerator] = {}
    for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2):
        acc = accelerator_from_row(row, f"{where} row {i}")
        out[acc.id] = acc
    return out


def parse_offers_csv(text: str, accelerators: dict, where: str = "cloud_offers.csv") -> list[CloudOffer]:
    return [offer_from_row(row, f"{where} row {i}", accelerators)
            for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2)]


def parse_models_toml(text: str, where: str = "models.toml") -> dict[str, ModelArch]:
    doc = tomllib.loads(text)
    return {mid: model_from_table(mid, table, where) for mid, table in doc.get("models", {}).items()}


@functools.lru_cache(maxsize=1)
def bundled_catalog() -> Catalog:
    """The catalog shipped inside the package (read once per process)."""
    accelerators = parse_accelerators_csv(_resource_text("accelerators.csv"))
    offers = tuple(parse_offers_csv(_resource_text("cloud_offers.csv"), accelerators))
    models = parse_models_toml(_resource_text("models.toml"))
    return Catalog(accelerators=accelerators, offers=offers, models=models)


def _merge_user(base: Catalog, path: Path) -> Catalog:
    from advisor.catalog.readfile import read_regular_file
    from advisor.catalog.user_schema import validate_user_doc

    try:
        raw = read_regular_file(path)
        doc = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else (
            getattr(exc, "strerror", None) or " ".join(str(exc).split()) or type(exc).__name__)
        return replace(base, warnings=(f"user catalog {path} ignored: {why}",), user_file=str(path))
    valid, warnings = validate_user_doc(doc, path.name)
    accelerators = dict(base.accelerators)
    user_ids: set[str] = set()
    bundled_rows = {a.id: a for a in base.accelerators.values()}
    for acc_id, table in valid["accelerators"].items():
        try:
            row = _accelerator_row(bundled_rows.get(acc_id)) | table | {"id": acc_id}
            accelerators[acc_id] = accelerator_from_row(row, "user accelerator")
            user_ids.add(acc_id)
        except CatalogError as exc:
            warnings.append(f"{path.name}: {exc}; entry ignored")
    offers = {o.id: o for o in base.offers}
    for offer_id, table in valid["cloud_offers"].items():
        try:
            if table.get("withdrawn") is True:  # the user removes an offer, bundled or not
                _valid_id(offer_id, f"cloud offer {offer_id!r}")
                offers.pop(offer_id.lower(), None)
                user_ids.add(offer_id.lower())
                continue
            old = offers.get(offer_id.lower())
            row = (_offer_row(old) if old else {}) | table | {"id": offer_id}
            offers[offer_id.lower()] = offer_from_row(row, "user cloud offer", accelerators)
            user_ids.add(offer_id.lower())
        except CatalogError as exc:
            warnings.append(f"{path.name}: {exc}; entry ignored")
    models = dict(base.models)
    for model_id, table in valid["models"].items():
        try:
            old = base.models.get(model_id)
            merged = (_model_table(old) if old else {}) | table
            models[model_id] = model_from_table(model_id, merged, "user model")
            user_ids.add(model_id)
        except CatalogError as exc:
            warnings.append(f"{path.name}: {exc}; entry ignored")
    return Catalog(accelerators=accelerators, offers=tuple(offers.values()), models=models, date=base.date,
                   warnings=tuple(" ".join(w.split()) for w in warnings), user_file=str(path),
                   user_ids=frozenset(user_ids))


def _accelerator_row(acc: Accelerator | None) -> dict:
    if acc is None:
        return {}

    def tf(v):
        return None if v is None else v / 1e12

    return {
        "id": acc.id, "vendor": acc.vendor, "name": acc.name, "kind": acc.kind,
        "memory_gb": acc.memory_bytes / 2**30, "memory_type": acc.memory_type,
        "mem_bandwidth_gbs": acc.mem_bandwidth_bps / 1e9, "fp32_tflops": tf(acc.fp32_flops),
        "tf32_tflops": tf(acc.tf32_flops), "bf16_tflops": tf(acc.bf16_flops), "fp16_tflops": tf(acc.fp16_flops),
        "fp8_tflops": tf(acc.fp8_flops), "fp4_tflops": tf(acc.fp4_flops), "int8_tops": tf(acc.int8_ops), "tdp_w": acc.tdp_w,
        "interconnect": acc.interconnect,
        "interconnect_gbs": None if acc.interconnect_bps is None else acc.interconnect_bps / 1e9,
        "pcie_gen": acc.pcie_gen, "launch_year": acc.launch_year, "launch_price_usd": acc.launch_price_usd,
        "street_price_usd": acc.street_price_usd, "street_price_date": acc.street_price_date,
        "data_date": acc.data_date, "source": acc.source, "notes": acc.notes,
        "gpu_memory_share": acc.gpu_memory_share,
    }


def _offer_row(o: CloudOffer) -> dict:
    return {
        "id": o.id, "provider": o.provider, "instance": o.instance, "accelerator_id": o.accelerator_id,
        "accelerator_count": o.accelerator_count, "vcpus": o.vcpus, "memory_gib": o.memory_gib,
        "region": o.region, "on_demand_usd_per_hour": o.on_demand_usd_per_h,
        "spot_usd_per_hour": o.spot_usd_per_h, "reserved_1y_usd_per_hour": o.reserved_1y_usd_per_h,
        "price_date": o.price_date, "source": o.source, "notes": o.notes,
        "inter_node_gbps": o.inter_node_gbps, "inter_node_source": o.inter_node_source,
    }


def _model_table(m: ModelArch) -> dict:
    return {f.name: getattr(m, f.name) for f in fields(ModelArch) if f.name not in ("id", "extra")}


accelerator_row = _accelerator_row
offer_row = _offer_row
model_table = _model_table


def load_catalog(user_file: Path | None = None, use_user_file: bool = True) -> Catalog:
    """The bundled catalog with the user's file merged over it (when it exists).

    Args:
        user_file: the file to merge; defaults to ``paths.user_catalog_file()``.
        use_user_file: False to get the bundled catalog alone.
    Returns:
        The catalog; problems with the user file are in ``warnings``.
    """
    base = bundled_catalog()
    if not use_user_file:
        return base
    if user_file is None:
        from advisor import paths

        user_file = paths.user_catalog_file()
    if not Path(user_file).exists():
        return base
    return _merge_user(base, Path(user_file))
