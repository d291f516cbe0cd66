"""The schema of the user's catalog file, checked with pydantic v2 before anything of it is merged.

The user file is not trusted: each entry of ``[accelerators.<id>]``, ``[cloud_offers."<id>"]`` and
``[models.<id>]`` is validated on its own against the models below (types, finite numbers, ranges, no
unknown keys for accelerators and offers). A bad entry gives one warning naming the file, the key and why,
and is skipped; the rest of the file and the bundled catalog still load. An empty string for a number
clears a bundled value. A section that is not a table of
tables (``accelerators = 5``, ``cloud_offers = [1]``) is skipped the same way.

The accelerator and offer fields are the columns of the bundled ``accelerators.csv`` and
``cloud_offers.csv`` (a test checks they match); the model fields are generated from ``ModelArch``.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError, create_model

from advisor.estimate.model import ModelArch

SECTIONS = ("accelerators", "cloud_offers", "models")

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=1, le=1_000_000)]
Year = Annotated[int, Field(ge=1950, le=2200)]
Text = Annotated[StrictStr, Field(max_length=2000)]
Blank = Literal[""]  # TOML has no null: an empty string clears a bundled value (what imports write)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AcceleratorEntry(_Entry):
    """``[accelerators.<id>]``: the columns of ``accelerators.csv`` (memory in GB, figures in TFLOP/s)."""

    id: Text | None = None
    vendor: Text | None = None
    name: Text | None = None
    kind: Text | None = None
    memory_gb: Positive | Blank | None = None
    memory_type: Text | None = None
    mem_bandwidth_gbs: Positive | Blank | None = None
    fp32_tflops: NonNegative | Blank | None = None
    tf32_tflops: NonNegative | Blank | None = None
    bf16_tflops: NonNegative | Blank | None = None
    fp16_tflops: NonNegative | Blank | None = None
    fp8_tflops: NonNegative | Blank | None = None
    fp4_tflops: NonNegative | Blank | None = None
    int8_tops: NonNegative | Blank | None = None
    tdp_w: NonNegative | Blank | None = None
    interconnect: Text | None = None
    interconnect_gbs: NonNegative | Blank | None = None
    pcie_gen: Annotated[int, Field(ge=1, le=10)] | Blank | None = None
    launch_year: Year | Blank | None = None
    launch_price_usd: NonNegative | Blank | None = None
    street_price_usd: NonNegative | Blank | None = None
    street_price_date: Text | None = None
    data_date: Text | None = None
    source: Text | None = None
    notes: Text | None = None
    gpu_memory_share: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] | Blank | None = None


class OfferEntry(_Entry):
    """``[cloud_offers."<provider>:<instance>"]``: the columns of ``cloud_offers.csv``, plus ``withdrawn``."""

    id: Text | None = None
    provider: Text | None = None
    instance: Text | None = None
    accelerator_id: Text | None = None
    accelerator_count: Count | Blank | None = None
    vcpus: NonNegative | Blank | None = None
    memory_gib: NonNegative | Blank | None = None
    region: Text | None = None
    on_demand_usd_per_hour: NonNegative | Blank | None = None
    spot_usd_per_hour: NonNegative | Blank | None = None
    reserved_1y_usd_per_hour: NonNegative | Blank | None = None
    price_date: Text | None = None
    source: Text | None = None
    notes: Text | None = None
    inter_node_gbps: Positive | Blank | None = None
    inter_node_source: Text | None = None
    withdrawn: StrictBool | None = None


def _model_entry() -> type[BaseModel]:
    """A pydantic model of ``[models.<id>]`` generated from the fields of ``ModelArch`` (extra keys kept)."""
    kinds = {"int": Annotated[int, Field(ge=0, le=10**15)], "float": NonNegative, "bool": StrictBool, "str": Text}
    spec: dict[str, Any] = {}
    for f in dataclasses.fields(ModelArch):
        if f.name in ("id", "extra"):
            continue
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "str")
        spec[f.name] = (kinds.get(kind, Text) | None, None)
    return create_model("ModelEntry", __config__=ConfigDict(extra="allow", allow_inf_nan=False), **spec)


ModelEntry = _model_entry()
_ENTRY = {"accelerators": AcceleratorEntry, "cloud_offers": OfferEntry, "models": ModelEntry}


def _why(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = str(err["loc"][0]) if err.get("loc") else ""  # the key; union members add their own names after it
    got = err.get("input")
    shown = "" if isinstance(got, dict) else f" (got {got!r})"
    return f"field {where!r}: {err.get('msg', 'invalid')}{shown}" if where else f"{err.get('msg', 'invalid')}{shown}"


def validate_user_doc(doc: Any, file_name: str) -> tuple[dict[str, dict[str, dict]], list[str]]:
    """The entries of a parsed user catalog that pass the schema, and one warning per entry that does not.

    Args:
        doc: the parsed TOML document.
        file_name: the file's name, for the warnings.
    Returns:
        ``({"accelerators": {id: table}, "cloud_offers": {...}, "models": {...}}, warnings)``; each table
        holds only the keys the user wrote (``None`` values dropped), so it merges over a bundled entry.
    """
    out: dict[str, dict[str, dict]] = {name: {} for name in SECTIONS}
    warnings: list[str] = []
    if not isinstance(doc, dict):
        return out, [f"{file_name}: not a TOML table; file ignored"]
    for section in SECTIONS:
        tables = doc.get(section)
        if tables is None:
            continue
        if not isinstance(tables, dict):
            warnings.append(f"{file_name}: [{section}]: expected a table of entries, got {type(tables).__name__} "
                            f"{tables!r:.40}; section ignored")
            continue
        for key, table in tables.items():
            label = f"{file_name}: [{section}.{key!r}]"
            if not isinstance(table, dict):
                warnings.append(f"{label}: expected a table, got {type(table).__name__}; entry ignored")
                continue
            try:
                entry = _ENTRY[section].model_validate(table)
            except ValidationError as exc:
                warnings.append(f"{label}: {_why(exc)}; entry ignored")
                continue
            data = entry.model_dump(exclude_none=True)
            out[section][key] = {k: v for k, v in data.items() if k in table}
    return out, warnings
