"""What a quantised file costs in quality (``resources/quant_quality.csv``): the perplexity each llama.cpp type adds
to Llama-3-8B as ``llama-quantize`` prints it, and the usual ladder of files people step down when one does not
fit. Read once and validated at the border."""

from __future__ import annotations

import csv
import functools
import io
import math
from dataclasses import dataclass

from advisor.catalog.load import _resource_text

# The files people step down through when one does not fit (the k-quants llama.cpp's README recommends, then the
# 3- and 2-bit ones), largest first.
LADDER = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_k_s", "iq4_xs", "q3_k_m", "iq3_m", "q2_k")


class QualityDataError(ValueError):
    """A malformed quality table (one line naming the row)."""


@dataclass(frozen=True)
class Quality:
    format: str
    ppl_delta: float
    model: str
    source: str


def parse_quality(text: str) -> dict[str, Quality]:
    rows = csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))))
    out = {}
    for i, row in enumerate(rows, start=1):
        try:
            delta = float(row["ppl_delta"])
        except (KeyError, TypeError, ValueError):
            raise QualityDataError(f"quant_quality.csv row {i}: ppl_delta is not a number") from None
        if not math.isfinite(delta) or not -1 < delta < 100 or not row.get("format") or not row.get("source"):
            raise QualityDataError(f"quant_quality.csv row {i}: a format, a finite ppl_delta and a source are needed")
        out[row["format"].strip().lower()] = Quality(row["format"].strip().lower(), delta, row.get("model", ""),
                                                     row["source"].strip())
    return out


@functools.cache
def quality_table() -> dict[str, Quality]:
    return parse_quality(_resource_text("quant_quality.csv"))


def quality(fmt: str) -> Quality | None:
    """The published perplexity cost of a format, None where none is published."""
    return quality_table().get(fmt.lower())


def next_smaller(fmt: str) -> str | None:
    """The next file down the usual ladder, None at its end or for a format not on it."""
    f = fmt.lower()
    return LADDER[LADDER.index(f) + 1] if f in LADDER and LADDER.index(f) + 1 < len(LADDER) else None
