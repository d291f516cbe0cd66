"""The calibration set: documented training runs (``resources/training_runs.csv``) as typed records.

Each row is one published run with the figure it is judged by (``target``): published GPU-hours,
a clean per-device throughput, a published MFU, or Megatron-LM's hardware TFLOP/s per GPU. Rows with
target ``none`` are documented runs kept for reference (FLOPs checks) but not fitted. The conversion
of each target to a model-FLOPs utilisation lives in ``advisor.estimate.utilisation`` (pure).
"""

from __future__ import annotations

import csv
import functools
import io
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from advisor.catalog.load import CatalogError, _resource_text

TARGETS = ("gpu_hours", "tokens_per_s", "mfu", "tflops_megatron", "none")
RECOMPUTE = ("full", "selective", "unknown")
FILE_NAME = "training_runs.csv"


@dataclass(frozen=True)
class TrainingRun:
    """One documented training run.

    Attributes:
        generation: accelerator generation year class (2018 Volta/TPUv3, 2020 Ampere/TPUv4, 2022 Hopper, 2024 Blackwell).
        devices: accelerator count, or None where the source does not give it.
        params, active_params: parameters (total, active per token).
        tokens: training tokens, or None (benchmarks not trained to a budget).
        target: which published figure the run is judged by (one of ``TARGETS``).
        gpu_hours, tokens_per_s_per_device, mfu, tflops_per_device: the published figure for ``target``.
        recompute: activation recomputation (``full`` costs one extra forward, 8PD instead of 6PD).
        mfu_convention: how a published MFU counts FLOPs: ``palm`` (PaLM's ``6N + 12*L*h*s`` per token, Chowdhery
            et al. 2022 appendix B) or ``6nd`` (``6N``).
    """

    run_id: str
    group: str
    model: str
    accelerator_id: str
    generation: int
    devices: int | None
    params: float
    active_params: float
    tokens: float | None
    seq_len: int
    layers: int
    hidden: int
    vocab: int | None
    precision: str
    framework: str
    interconnect: str
    moe: bool
    target: str
    gpu_hours: float | None
    tokens_per_s_per_device: float | None
    mfu: float | None
    tflops_per_device: float | None
    recompute: str
    source: str
    notes: str
    mfu_convention: str = ""  # for published MFUs: "palm" (6N + 12*L*h*s per token) or "6nd" (6N only)


def _opt(row: dict, key: str, where: str) -> float | None:
    text = (row.get(key) or "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise CatalogError(f"{where}: {key} is not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise CatalogError(f"{where}: {key} must be positive, got {text!r}")
    return value


def _req(row: dict, key: str, where: str) -> float:
    value = _opt(row, key, where)
    if value is None:
        raise CatalogError(f"{where}: {key} is required")
    return value


def run_from_row(row: dict, where: str) -> TrainingRun:
    """Validate one CSV row.

    Raises:
        CatalogError: naming the row and field when a value is missing or invalid.
    """
    target = (row.get("target") or "").strip()
    if target not in TARGETS:
        raise CatalogError(f"{where}: target must be one of {', '.join(TARGETS)}, not {target!r}")
    recompute = (row.get("recompute") or "unknown").strip()
    convention = (row.get("mfu_convention") or "").strip()
    if convention not in ("", "palm", "6nd") or (target == "mfu" and not convention):
        raise CatalogError(f"{where}: mfu_convention must be palm or 6nd for a published MFU")
    if recompute not in RECOMPUTE:
        raise CatalogError(f"{where}: recompute must be one of {', '.join(RECOMPUTE)}")
    field_of = {"gpu_hours": "gpu_hours", "tokens_per_s": "tokens_per_s_per_device", "mfu": "mfu",
                "tflops_megatron": "tflops_per_device"}
    if target in field_of:
        _req(row, field_of[target], where)
    if target == "gpu_hours":
        _req(row, "tokens", where)
    mfu = _opt(row, "mfu", where)
    if mfu is not None and mfu > 1:
        raise CatalogError(f"{where}: mfu must be a fraction")
    devices = _opt(row, "devices", where)
    vocab = _opt(row, "vocab", where)
    return TrainingRun(
        run_id=row["run_id"].strip(), group=row["group"].strip(), model=row["model"].strip(),
        accelerator_id=row["accelerator_id"].strip(), generation=int(_req(row, "generation", where)),
        devices=None if devices is None else int(devices), params=_req(row, "params", where),
        active_params=_req(row, "active_params", where), tokens=_opt(row, "tokens", where),
        seq_len=int(_req(row, "seq_len", where)), layers=int(_req(row, "layers", where)),
        hidden=int(_req(row, "hidden", where)), vocab=None if vocab is None else int(vocab),
        precision=row["precision"].strip(), framework=row["framework"].strip(),
        interconnect=row["interconnect"].strip(), moe=row["moe"].strip() == "1", target=target,
        gpu_hours=_opt(row, "gpu_hours", where), tokens_per_s_per_device=_opt(row, "tokens_per_s_per_device", where),
        mfu=mfu, tflops_per_device=_opt(row, "tflops_per_device", where), recompute=recompute,
        source=row["source"].strip(), notes=(row.get("notes") or "").strip(), mfu_convention=convention)


def parse_training_runs(text: str, where: str = FILE_NAME) -> tuple[TrainingRun, ...]:
    """Parse the calibration set; run ids must be unique."""
    runs = tuple(run_from_row(row, f"{where} row {i}") for i, row in enumerate(csv.DictReader(io.StringIO(text)), start=2))
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise CatalogError(f"{where}: duplicate run_id")
    return runs


def bundled_training_runs() -> tuple[TrainingRun, ...]:
    """The calibration set shipped with the package."""
    return parse_training_runs(_resource_text(FILE_NAME))


def catalog_peak(catalog):
    """``(accelerator_id, precision) -> dense peak FLOP/s`` from a catalog, None for ids it lacks."""
    def peak(accelerator_id: str, precision: str) -> float | None:
        acc = catalog.accelerators.get(accelerator_id)
        return acc.peak_flops(precision) if acc is not None else None
    return peak


def fitted_model_text() -> str:
    """The stored coefficients of the utilisation model (``resources/utilisation_fit.csv``)."""
    return _resource_text("utilisation_fit.csv")


_IN_FORCE: ContextVar = ContextVar("advisor_utilisation_model", default=None)


@functools.lru_cache(maxsize=1)
def stored_utilisation_model():
    """The stored utilisation model (``advisor.estimate.utilisation.UtilisationModel``), read once per process."""
    from advisor.estimate.utilisation import model_from_csv

    return model_from_csv(fitted_model_text())


def bundled_utilisation_model():
    """The utilisation model plans use: the stored one, or the one ``utilisation_model_in_force`` sets."""
    return _IN_FORCE.get() or stored_utilisation_model()


@contextmanager
def utilisation_model_in_force(model) -> Iterator[None]:
    """Plan with ``model`` inside this block (``benchmarks/bench_truth.py`` plans each documented run with the model
    fitted without its study, so the check is of runs the model has not seen)."""
    token = _IN_FORCE.set(model)
    try:
        yield
    finally:
        _IN_FORCE.reset(token)
