"""Decode bandwidth efficiency per weight format and runtime, from published decode speeds.

A published single-stream decode speed ``r`` (tokens/s) of a model whose weights take ``W`` bytes on a device
of peak bandwidth ``BW`` reads the weights at ``eta = r * W / BW`` of peak
(docs/method.md, "Decode by format and runtime"). Low-bit formats spend time dequantising, so they reach
less of the peak: on llama.cpp's Metal backend an M2 Ultra reads about 70 % of its 800 GB/s at F16, 55 % at
Q8_0 and 42 % at Q4_0.

Where no figure was published for a format or runtime, the stated assumption says which measured figure
stands in. Every efficiency is at most 1, so a decode estimate never exceeds ``BW / weight_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
RUNTIMES = ("llama.cpp", "vllm", "exllama", "mlc")
FORMATS = ("f16", "fp8", "q8_0", "q6_k", "q4_k_m", "q4_0", "nf4", "gptq4", "q4f16_1")


@dataclass(frozen=True)
class DecodePoint:
    """One published decode speed and what it was measured on."""

    runtime: str
    weight_format: str
    tokens_per_s: float
    weight_bytes: float
    bandwidth_bps: float
    source: str
    derived: str = ""  # how a value that is not printed in the source was worked out

    @property
    def eta_mem(self) -> float:
        """Achieved over peak bandwidth: ``tokens/s * weight bytes / peak bandwidth``."""
        return self.tokens_per_s * self.weight_bytes / self.bandwidth_bps


# Llama-2 7B (6.74e9 parameters). M2 Ultra: 800 GB/s (Apple, M2 Ultra press release, June 2023).
# RTX 4090: 1008 GB/s (NVIDIA Ada whitepaper).
PUBLISHED = (
    DecodePoint("llama.cpp", "f16", 41.35, 12.55 * GIB, 800e9,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra Metal, llama2 7B F16 12.55 GiB, tg 64; "
                "discussion #4167 lists 41.4 t/s"),
    DecodePoint("llama.cpp", "q8_0", 61.53, 6.67 * GIB, 800e9,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra Metal, llama2 7B Q8_0 6.67 GiB, tg 64; discussion #4167: 61.5"),
    DecodePoint("llama.cpp", "q6_k", 67.42, 5.15 * GIB, 800e9,
                "llama.cpp PR #2891 (2023-09-01), M2 Ultra Metal, llama2 7B Q6_K 5.15 GiB, tg 64"),
    DecodePoint("llama.cpp", "q4_0", 88.54, 3.56 * GIB, 800e9,
                "llama.cpp PR #2917 (2023-08-30), M2 Ultra Metal, LLaMA 7B Q4_0 3.56 GiB, tg 128; discussion #4167: 88.5"),
    DecodePoint("mlc", "q4f16_1", 89.0, 6.74e9 * 4.5 / 8, 800e9,
                "apache/tvm PR #15985 (2023-10-26), MLC on M2 Ultra, Llama2 7B q4f16_1: 89 tok/s",
                derived="weight bytes = 6.74e9 weights x 4.5 bits (4-bit values + one fp16 scale per 32)"),
    DecodePoint("exllama", "gptq4", 195.0, 6.478e9 * 4.16 / 8 + 0.131e9 * 2, 1008e9,
                "turboderp/exllamav2 README, Performance table: Llama 7B GPTQ 4-bit group 128, V2 on RTX 4090: 195 t/s",
                derived="bytes read per token = 6.478e9 linear weights x 4.16 bits (4-bit + fp16 scale and packed zero "
                        "per 128) + the 0.131e9-weight fp16 output head; the input embedding is not read in full"),
)

# Formats without a published figure here, and the measured figure that stands in (an assumption).
STAND_INS = {
    ("llama.cpp", "q4_k_m"): ("llama.cpp", "q4_0", "assumed equal to Q4_0 (same 4-bit family; no decode figure cited)"),
    ("llama.cpp", "nf4"): ("llama.cpp", "q4_0", "NF4 is not a llama.cpp format: the 4-bit Q4_0 figure stands in"),
    ("llama.cpp", "fp8"): ("llama.cpp", "q8_0", "no fp8 decode figure cited: the 8-bit Q8_0 figure stands in"),
    ("llama.cpp", "gptq4"): ("llama.cpp", "q4_0", "the 4-bit Q4_0 figure stands in"),
    ("llama.cpp", "q4f16_1"): ("llama.cpp", "q4_0", "the 4-bit Q4_0 figure stands in"),
}
_BITS_CLASS = {"f16": "f16", "fp8": "q8_0", "q8_0": "q8_0", "q6_k": "q6_k", "q4_k_m": "q4_0", "q4_0": "q4_0",
               "nf4": "q4_0", "gptq4": "q4_0", "q4f16_1": "q4_0"}


@dataclass(frozen=True)
class DecodeEfficiency:
    """The bandwidth efficiency used for decoding, with where it comes from."""

    eta_mem: float
    origin: str
    measured: bool  # True when a published figure for this very runtime and format exists


def format_key(precision: str, quant: str | None = None) -> str:
    """The decode format of a plan's precision and quantisation (``bf16``/``fp16`` -> ``f16``)."""
    if quant:
        q = quant.lower()
        if q not in FORMATS:
            raise ValueError(f"unknown weight format {quant!r}; known: {', '.join(FORMATS)}")
        return q
    if precision in ("bf16", "fp16", "fp32", "tf32"):
        return "f16"
    if precision in ("fp8", "int8"):
        return "fp8" if precision == "fp8" else "q8_0"
    if precision == "int4":
        return "q4_0"
    raise ValueError(f"no decode format for precision {precision!r}")


def _point(runtime: str, weight_format: str) -> DecodePoint | None:
    return next((p for p in PUBLISHED if p.runtime == runtime and p.weight_format == weight_format), None)


def decode_efficiency(weight_format: str, runtime: str | None = None, *,
                      measured_eta_mem: float | None = None) -> DecodeEfficiency:
    """Bandwidth efficiency of decoding ``weight_format`` weights with ``runtime``.

    Args:
        weight_format: one of ``FORMATS`` (see ``format_key``).
        runtime: one of ``RUNTIMES``, or None when the user has not chosen one (llama.cpp's figures, the most
            complete published set, are used).
        measured_eta_mem: this machine's read-bandwidth efficiency from the device-bandwidth probe; it replaces
            the F16 figure and the format keeps its published ratio to F16.
    Returns:
        The efficiency (0, 1] and its origin.
    """
    if weight_format not in FORMATS:
        raise ValueError(f"unknown weight format {weight_format!r}")
    if runtime is not None and runtime not in RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}; known: {', '.join(RUNTIMES)}")
    rt = runtime or "llama.cpp"
    point = _point(rt, weight_format)
    measured = point is not None
    if point is not None:
        origin = point.source
    elif (rt, weight_format) in STAND_INS:
        srt, sfmt, why = STAND_INS[(rt, weight_format)]
        point, origin = _point(srt, sfmt), why
    else:
        point = _point("llama.cpp", _BITS_CLASS[weight_format])
        origin = (f"no published {rt} figure for {weight_format}: llama.cpp's {point.weight_format} figure stands in")
    eta = point.eta_mem
    if measured_eta_mem is not None:
        ratio = eta / _point("llama.cpp", "f16").eta_mem if point.runtime == "llama.cpp" else 1.0
        eta = measured_eta_mem * min(1.0, ratio)
        origin = f"measured bandwidth efficiency {measured_eta_mem:.2f} x format ratio {min(1.0, ratio):.2f} ({origin})"
    return DecodeEfficiency(min(1.0, eta), origin, measured)


def decode_bound_tokens_per_s(bandwidth_bps: float, weight_bytes: float) -> float:
    """The batch-1 bound ``BW / weight_bytes``: no decode estimate may exceed it."""
    return bandwidth_bps / weight_bytes
