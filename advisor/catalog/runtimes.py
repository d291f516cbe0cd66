"""Inference runtimes and weight formats as data: ``resources/runtimes.toml`` loaded into frozen records.

A runtime profile (``--runtime NAME``) says which weight formats the runtime loads, what ``--precision``
means on it (``int4`` is llama.cpp's Q4_K_M, vLLM's AWQ, ExLlamaV2's EXL2 at 4.0 bits, MLC's q4f16_1,
MLX's 4-bit), its KV-cache formats, how it batches, the memory rules a server follows, and per backend
(cuda, rocm, metal, vulkan, cpu) the behaviours the estimate reads: the decode's bandwidth efficiency by
format class, the per-layer overhead of a decode step, the tensor-core peak and efficiency of prefill.
Each weight format's effective bits per weight is declared once, with its source.

The file is validated at the border (``RuntimeDataError`` names the entry); the planner resolves a
request's runtime, format and backend into a :class:`RuntimeChoice`, and the estimate modules take the
numbers of its :class:`BackendProfile`, never a runtime's name
(docs/method.md, "Runtimes, weight formats and backends").
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass

from advisor.catalog.load import _resource_text
from advisor.catalog.stacks import STACKS
from advisor.estimate.step_cost import StepFit, parse_step_fit

FILE_NAME = "runtimes.toml"
CLASSES = ("f16", "q8", "q6", "q5", "q4", "q3", "q2")
SCOPES = ("all", "linear", "experts")  # the weights a format quantises (WeightFormat.scope)
BACKENDS = ("cuda", "rocm", "metal", "vulkan", "cpu")
BATCHING = ("continuous", "slots", "static")
MULTI_DEVICE = ("tensor", "layer")
PEAKS = ("fp32", "fp16", "bf16", "fp8", "fp4", "int8", "fp16acc")
PREFILL_KERNELS = ("mmq", "cublas")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4")
KV_BITS = (16, 8, 4)


class RuntimeDataError(ValueError):
    """``runtimes.toml`` is invalid; the message names the entry and field."""


@dataclass(frozen=True)
class WeightFormat:
    """One weight format: its effective bits per weight (scales and zero points included) and class.

    Attributes:
        id: the name ``--quant`` takes (``q4_k_m``, ``awq``, ``exl2``, ``mxfp4``...).
        bits_per_weight: average stored bits per weight.
        cls: the efficiency class a backend reads it at (one of ``CLASSES``).
        family: gguf, awq, gptq, exl2, fp8, int8, mx, nvfp4, mlc, mlx, bitsandbytes or float.
        native: the tensor-core type the format multiplies in natively (``fp8``, ``int8``; ``fp4``: NVFP4, on parts
            with FP4 units, ``planner.serve_spec.product_precision``), "" when dequantised.
        source: where the bits come from.
        scope: which weights take ``bits_per_weight`` (``SCOPES``): ``all`` of them (GGUF, whose named quants
            are priced per tensor by ``estimate.gguf_mix``; MLX, MLC), the ``linear`` layers with the embedding
            and output matrices kept at 16 bits (AWQ, GPTQ, FP8, bitsandbytes, NVFP4, EXL2), or the routed
            ``experts`` only (gpt-oss's MXFP4 checkpoints).
    """

    id: str
    bits_per_weight: float
    cls: str
    family: str
    native: str
    source: str
    scope: str = "all"

    @property
    def quantised(self) -> bool:
        """Whether the weights are stored below 16 bits (the prefill then uses the quantised kernel)."""
        return self.family != "float" and self.cls != "f16"


@dataclass(frozen=True)
class BackendProfile:
    """A runtime's behaviour on one backend (the numbers the estimate reads).

    Attributes:
        backend: cuda, rocm, metal, vulkan or cpu.
        decode_eta: bandwidth efficiency of a decode by format class, ``((cls, eta), ...)``; each in (0, 1].
        overhead_per_layer_s: time a decode step spends per layer beyond reading (kernel launches, host work).
        prefill_peak_quantized: the peak a quantised prefill multiplies at (``int8``: llama.cpp's MMQ on NVIDIA).
        prefill_eta: share of the 16-bit peak a prompt's matrix multiplies reach with 16-bit weights.
        prefill_eta_quantized: share of ``prefill_peak_quantized`` they reach with quantised weights.
        attention_eta: share of the fp16 peak the prompt's attention reaches.
        source: where the numbers come from (a fit on named figures, or "assumption").
        prefill_vector_flops, prefill_vector_flops_quantized: FLOPs of vector-unit work (fp32 CUDA cores) a
            prompt's matrix multiplies cost per tensor-core FLOP, with 16-bit and with quantised weights, done in
            series with the tensor-core work (``prefill_matmul_flops``); 0 where the backend has no such split.
        prefill_peak: the peak a prompt of 16-bit weights multiplies at (``fp16acc``: llama.cpp's cuBLAS GEMM
            with fp16 accumulation, ``catalog.records.Accelerator.peak_flops``); "" for the request's precision.
    """

    backend: str
    decode_eta: tuple[tuple[str, float], ...]
    overhead_per_layer_s: float
    prefill_peak_quantized: str
    prefill_eta: float
    prefill_eta_quantized: float
    attention_eta: float
    source: str
    prefill_vector_flops: float = 0.0
    prefill_vector_flops_quantized: float = 0.0
    prefill_peak: str = ""

    def eta_for(self, cls: str) -> float:
        """The decode bandwidth efficiency of a format class."""
        return dict(self.decode_eta)[cls]

    def prefill_matmul_flops(self, quantised: bool, kernel_peak_flops: float, vector_peak_flops: float | None
                             ) -> float:
        """The FLOP/s a prompt's matrix multiplies reach (docs/method.md, "Inference speed").

        ``1 / (1 / (peak * eta) + v / vector_peak)``: the tensor-core time at the kernel's share of its peak, plus
        the vector-unit work the kernel does in series with it (``v`` FLOPs per matrix FLOP: llama.cpp's MMQ
        unpacks each block of quantised weights and applies its scale on the CUDA cores). On a part whose tensor
        cores outrun its vector units most (A100, H100: int8 at 30 times the fp32 rate; a GeForce card 8 times)
        the vector work takes the larger share, so the same kernel reaches a smaller share of the tensor peak.

        Args:
            quantised: the weights are stored below 16 bits (the quantised kernel and its figures).
            kernel_peak_flops: the dense peak of the kernel's type (int8 for MMQ, fp16/bf16 otherwise).
            vector_peak_flops: the part's fp32 vector peak, or None where unknown (the term is then left out).
        Returns:
            The achieved FLOP/s of the matrix multiplies.
        """
        eta = self.prefill_eta_quantized if quantised else self.prefill_eta
        v = self.prefill_vector_flops_quantized if quantised else self.prefill_vector_flops
        t = 1.0 / (kernel_peak_flops * eta)
        if v > 0 and vector_peak_flops:
            t += v / vector_peak_flops
        return 1.0 / t


@dataclass(frozen=True)
class RuntimeProfile:
    """One inference runtime.

    Attributes:
        id: the canonical name (``llama.cpp``, ``vllm``, ``exllamav2``...); ``aliases`` also resolve to it.
        name: the name people read.
        stacks: the software stacks it runs on (``advisor.catalog.stacks``).
        weight_formats: the format ids it loads.
        precision_formats: ``((precision, format id), ...)``: what ``--precision`` means on it.
        kv_formats: ``((bits, name), ...)``: the KV-cache formats by bits per value.
        batching: continuous, slots or static.
        gpu_memory_utilization: the share of device memory a server takes (vLLM's 0.9), or None.
        kv_free_memory_fraction: the share of the memory left after the weights given to the KV cache, or None.
        slots_share_context: llama.cpp's ``-np`` slots divide one ``-c`` context between them.
        offloads_layers: it can keep some layers on the CPU (llama.cpp's ``-ngl N``).
        multi_device: how it spreads a model over several devices by default: ``tensor`` (each layer split,
            the devices read in parallel) or ``layer`` (whole layers per device, run one after the other, so a
            step reads at one device's bandwidth: llama.cpp's ``--split-mode layer``).
        backends: one :class:`BackendProfile` per backend it runs on, most used first.
        source: the documentation the behaviours come from.
        usual_format: the format an inference job naming none takes (llama.cpp's Q4_K_M, MLX 4-bit), None for
            the checkpoint's own dtype.
    """

    id: str
    name: str
    aliases: tuple[str, ...]
    stacks: tuple[str, ...]
    weight_formats: tuple[str, ...]
    precision_formats: tuple[tuple[str, str], ...]
    kv_formats: tuple[tuple[int, str], ...]
    batching: str
    gpu_memory_utilization: float | None
    kv_free_memory_fraction: float | None
    slots_share_context: bool
    offloads_layers: bool
    multi_device: str
    backends: tuple[BackendProfile, ...]
    source: str
    usual_format: str | None = None

    def format_for(self, precision: str) -> str:
        """The weight format ``--precision`` means on this runtime (``int4`` -> its 4-bit format)."""
        return dict(self.precision_formats)[precision]

    def kv_format(self, bits: int) -> str | None:
        """The runtime's name of a KV cache at ``bits`` per value, None when it has none."""
        return dict(self.kv_formats).get(bits)

    def backend(self, name: str) -> BackendProfile | None:
        """Its profile on one backend, None when it does not run there."""
        return next((b for b in self.backends if b.backend == name), None)


@dataclass(frozen=True)
class RuntimeData:
    """Every weight format and runtime profile, with the aliases resolved."""

    formats: dict[str, WeightFormat]
    runtimes: dict[str, RuntimeProfile]
    aliases: dict[str, str]  # every accepted name (ids and aliases, lower case) -> runtime id

    def runtime(self, name: str) -> RuntimeProfile:
        """The profile of a runtime id or alias (case-insensitive). Raises KeyError with the known names."""
        rid = self.aliases.get(name.strip().lower())
        if rid is None:
            raise KeyError(f"unknown runtime {name!r}; known: {', '.join(self.runtimes)} "
                           f"(also {', '.join(a for a in self.aliases if a not in self.runtimes)})")
        return self.runtimes[rid]

    def weight_format(self, name: str) -> WeightFormat:
        """A weight format by id (case-insensitive). Raises KeyError with the known ids."""
        fmt = self.formats.get(name.strip().lower())
        if fmt is None:
            raise KeyError(f"unknown weight format {name!r}; known: {', '.join(self.formats)}")
        return fmt


def _need(table: dict, key: str, where: str, kind: type | tuple[type, ...]):
    value = table.get(key)
    if value is None or isinstance(value, bool) and kind is not bool or not isinstance(value, kind):
        raise RuntimeDataError(f"{where}: {key} missing or not {getattr(kind, '__name__', kind)}")
    return value


def _fraction(value, where: str, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not (0 <= value <= 1 if allow_zero else 0 < value <= 1):
        raise RuntimeDataError(f"{where}: must be a fraction in {'[0' if allow_zero else '(0'}, 1], got {value!r}")
    return float(value)


def _format(fid: str, t: dict) -> WeightFormat:
    where = f"formats.{fid}"
    bits = _need(t, "bits_per_weight", where, (int, float))
    if not (1.0 <= bits <= 32.0):
        raise RuntimeDataError(f"{where}: bits_per_weight must be between 1 and 32, got {bits!r}")
    cls = _need(t, "class", where, str)
    if cls not in CLASSES:
        raise RuntimeDataError(f"{where}: class must be one of {', '.join(CLASSES)}, got {cls!r}")
    native = t.get("native", "")
    if native and native not in PEAKS:
        raise RuntimeDataError(f"{where}: native must be one of {', '.join(PEAKS)}, got {native!r}")
    scope = t.get("scope", "all")
    if scope not in SCOPES:
        raise RuntimeDataError(f"{where}: scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    return WeightFormat(fid, float(bits), cls, _need(t, "family", where, str), native, _need(t, "source", where, str),
                        scope)


def _backend(rid: str, name: str, t: dict, classes: set[str]) -> BackendProfile:
    where = f"runtimes.{rid}.backends.{name}"
    if name not in BACKENDS:
        raise RuntimeDataError(f"{where}: backend must be one of {', '.join(BACKENDS)}")
    etas = _need(t, "decode_eta", where, dict)
    missing = sorted(classes - set(etas))
    if missing:
        raise RuntimeDataError(f"{where}: decode_eta lacks the classes of its formats: {', '.join(missing)}")
    unknown = sorted(set(etas) - set(CLASSES))
    if unknown:
        raise RuntimeDataError(f"{where}: decode_eta has unknown classes {', '.join(unknown)}")
    decode_eta = tuple((c, _fraction(etas[c], f"{where}.decode_eta.{c}")) for c in CLASSES if c in etas)
    overhead = _need(t, "overhead_per_layer_us", where, (int, float))
    if not (math.isfinite(overhead) and 0 <= overhead <= 100_000):
        raise RuntimeDataError(f"{where}: overhead_per_layer_us must be between 0 and 100000, got {overhead!r}")
    peak = _need(t, "prefill_peak_quantized", where, str)
    if peak not in PEAKS:
        raise RuntimeDataError(f"{where}: prefill_peak_quantized must be one of {', '.join(PEAKS)}, got {peak!r}")
    prefill = _fraction(t.get("prefill_eta"), f"{where}.prefill_eta")
    vector = _share(t.get("prefill_vector_flops", 0.0), f"{where}.prefill_vector_flops")
    peak16 = t.get("prefill_peak", "")
    if peak16 and peak16 not in PEAKS:
        raise RuntimeDataError(f"{where}: prefill_peak must be one of {', '.join(PEAKS)}, got {peak16!r}")
    return BackendProfile(name, decode_eta, overhead * 1e-6, peak, prefill,
                          _fraction(t.get("prefill_eta_quantized", prefill), f"{where}.prefill_eta_quantized"),
                          _fraction(t.get("attention_eta"), f"{where}.attention_eta"), _need(t, "source", where, str),
                          vector, _share(t.get("prefill_vector_flops_quantized", vector),
                                         f"{where}.prefill_vector_flops_quantized"), peak16)


def _share(value, where: str) -> float:
    """A non-negative finite number of at most 10 (FLOPs per FLOP)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= 10:
        raise RuntimeDataError(f"{where} must be a number between 0 and 10, got {value!r}")
    return float(value)


def _runtime(rid: str, t: dict, formats: dict[str, WeightFormat]) -> RuntimeProfile:
    where = f"runtimes.{rid}"
    fmts = tuple(_need(t, "weight_formats", where, list))
    unknown = [f for f in fmts if f not in formats]
    if unknown or not fmts:
        raise RuntimeDataError(f"{where}: weight_formats unknown or empty: {', '.join(unknown) or '(none)'}")
    pf = _need(t, "precision_formats", where, dict)
    if set(pf) != set(PRECISIONS) or any(v not in fmts for v in pf.values()):
        raise RuntimeDataError(f"{where}: precision_formats must map each of {', '.join(PRECISIONS)} to one of "
                               "its weight_formats")
    kv = _need(t, "kv_formats", where, dict)
    try:
        kv_formats = tuple(sorted(((int(b), str(n)) for b, n in kv.items()), reverse=True))
    except ValueError:
        raise RuntimeDataError(f"{where}: kv_formats keys must be bits ({', '.join(map(str, KV_BITS))})") from None
    if not kv_formats or any(b not in KV_BITS for b, _ in kv_formats) or 16 not in dict(kv_formats):
        raise RuntimeDataError(f"{where}: kv_formats must give 16 and only bits among {', '.join(map(str, KV_BITS))}")
    multi = _need(t, "multi_device", where, str)
    if multi not in MULTI_DEVICE:
        raise RuntimeDataError(f"{where}: multi_device must be one of {', '.join(MULTI_DEVICE)}, got {multi!r}")
    batching = _need(t, "batching", where, str)
    if batching not in BATCHING:
        raise RuntimeDataError(f"{where}: batching must be one of {', '.join(BATCHING)}, got {batching!r}")
    stacks = tuple(_need(t, "stacks", where, list))
    if not stacks or any(s not in STACKS for s in stacks):
        raise RuntimeDataError(f"{where}: stacks must be among {', '.join(STACKS)}")
    classes = {formats[f].cls for f in fmts}
    bt = _need(t, "backends", where, dict)
    if not bt:
        raise RuntimeDataError(f"{where}: no backends")
    backends = tuple(_backend(rid, name, b, classes) for name, b in bt.items())
    gmu = t.get("gpu_memory_utilization")
    kvf = t.get("kv_free_memory_fraction")
    usual = t.get("usual_format")
    if usual is not None and usual not in fmts:
        raise RuntimeDataError(f"{where}: usual_format {usual!r} is not one of its weight_formats")
    return RuntimeProfile(
        id=rid, name=_need(t, "name", where, str), aliases=tuple(a.lower() for a in t.get("aliases", ())),
        stacks=stacks, weight_formats=fmts, precision_formats=tuple((p, pf[p]) for p in PRECISIONS),
        kv_formats=kv_formats, batching=batching,
        gpu_memory_utilization=None if gmu is None else _fraction(gmu, f"{where}.gpu_memory_utilization"),
        kv_free_memory_fraction=None if kvf is None else _fraction(kvf, f"{where}.kv_free_memory_fraction"),
        slots_share_context=bool(t.get("slots_share_context", False)),
        offloads_layers=bool(t.get("offloads_layers", False)), multi_device=multi, backends=backends,
        source=_need(t, "source", where, str), usual_format=usual)


def parse_runtimes_toml(text: str) -> RuntimeData:
    """Parse and validate ``runtimes.toml``.

    Raises:
        RuntimeDataError: a malformed file or entry, naming it.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuntimeDataError(f"{FILE_NAME}: {exc}") from None
    if data.get("schema") != 1:
        raise RuntimeDataError(f"{FILE_NAME}: schema must be 1")
    formats = {fid.lower(): _format(fid.lower(), t) for fid, t in _need(data, "formats", FILE_NAME, dict).items()}
    runtimes = {rid: _runtime(rid, t, formats) for rid, t in _need(data, "runtimes", FILE_NAME, dict).items()}
    aliases: dict[str, str] = {}
    for rid, rt in runtimes.items():
        for name in (rid.lower(), *rt.aliases):
            if aliases.setdefault(name, rid) != rid:
                raise RuntimeDataError(f"runtimes.{rid}: name {name!r} already names {aliases[name]}")
    return RuntimeData(formats, runtimes, aliases)


@functools.cache
def runtime_data() -> RuntimeData:
    """The bundled runtimes and formats (read once)."""
    return parse_runtimes_toml(_resource_text(FILE_NAME))


STEP_FIT_FILE = "serving_step_fit.csv"
_STEP_FIT: contextvars.ContextVar[StepFit | None] = contextvars.ContextVar("step_fit", default=None)


@functools.cache
def bundled_step_fit() -> StepFit:
    """A served step's per-layer costs fitted on the published serving runs (``estimate.step_cost``; stored by
    ``benchmarks/bench_truth.py --write``), validated when read (``step_cost.StepFitError`` names the line)."""
    return parse_step_fit(_resource_text(STEP_FIT_FILE), STEP_FIT_FILE)


def step_fit() -> StepFit:
    """The step costs in force: the bundled fit, or one set by ``step_fit_in_force`` in this context."""
    fit = _STEP_FIT.get()
    return bundled_step_fit() if fit is None else fit


@contextlib.contextmanager
def step_fit_in_force(fit: StepFit) -> Iterator[None]:
    """Plan with ``fit``'s step costs in this context (bench_truth plans a source's rows at the constants fitted
    without it, and each row at the value it implies)."""
    token = _STEP_FIT.set(fit)
    try:
        yield
    finally:
        _STEP_FIT.reset(token)


def backend_of(vendor: str, kind: str) -> str | None:
    """The backend an inference runtime uses on an accelerator: cuda (NVIDIA), rocm (AMD), metal (Apple),
    vulkan (Intel Arc), cpu (this machine's CPU); None for parts no runtime here targets (TPU, Trainium, Gaudi)."""
    v, k = vendor.strip().lower(), kind.strip().lower()
    if k == "cpu":
        return "cpu"
    if k == "apple" or v == "apple":
        return "metal"
    if v == "nvidia":
        return "cuda"
    if v == "amd":
        return "rocm"
    if v == "intel" and k != "datacenter":
        return "vulkan"
    return None


@dataclass(frozen=True)
class RuntimeChoice:
    """What a serving plan assumes on one accelerator: the runtime, its weight and KV formats and backend.

    ``profile`` is the runtime's profile on the backend; where the runtime does not run on the accelerator's
    backend (vLLM on Apple Silicon) its first backend stands in and ``backend_supported`` is False.
    """

    runtime: RuntimeProfile
    weight_format: WeightFormat
    kv_format: str
    backend: str
    profile: BackendProfile
    backend_supported: bool
    # how a quantised prompt is multiplied: "mmq" (the profile's quantised kernel, the default) or "cublas"
    # (dequantised to 16 bits and multiplied as 16-bit weights are: llama.cpp built with GGML_CUDA_FORCE_CUBLAS,
    # or any build before June 2024, when llama.cpp PR #8075 made its int8 MMQ kernels the default on NVIDIA)
    prefill_kernel: str = "mmq"

    @property
    def dequantised_prefill(self) -> bool:
        """Whether a quantised prompt is dequantised to 16 bits first and multiplied by the 16-bit kernel."""
        return self.weight_format.quantised and self.prefill_kernel == "cublas" \
            and self.profile.prefill_peak_quantized == "int8"

    def to_json(self) -> dict:
        """The plan's ``"software"`` key (same shape as a training framework's, kind ``runtime``)."""
        return {"kind": "runtime", "id": self.runtime.id, "name": self.runtime.name,
                "weight_format": self.weight_format.id, "bits_per_weight": self.weight_format.bits_per_weight,
                "kv_format": self.kv_format, "backend": self.backend, "batching": self.runtime.batching,
                "multi_device": self.runtime.multi_device,
                "backend_supported": self.backend_supported, "source": self.profile.source}


def choose(runtime: str, precision: str, quant: str | None, kv_bits: int, vendor: str, kind: str) -> RuntimeChoice:
    """Resolve a request's runtime, weight format, KV format and backend on one accelerator.

    Args:
        runtime: a runtime id or alias.
        precision: the request's precision (what ``--precision`` means on the runtime when ``quant`` is None).
        quant: a weight format id, or None.
        kv_bits: bits per KV-cache value (16, 8 or 4).
        vendor, kind: the accelerator's, for the backend.
    Raises:
        KeyError: an unknown runtime or format, a format or KV cache the runtime does not load (one line
            listing what it does).
    """
    data = runtime_data()
    rt = data.runtime(runtime)
    fid = data.weight_format(quant).id if quant else rt.format_for(precision)
    if fid not in rt.weight_formats:
        raise KeyError(f"{rt.id} does not load {fid}; it loads {', '.join(rt.weight_formats)}")
    kv = rt.kv_format(kv_bits)
    if kv is None:
        raise KeyError(f"{rt.id} has no {kv_bits}-bit KV cache; its KV caches: "
                       + ", ".join(f"{n} ({b} bits)" for b, n in rt.kv_formats))
    backend = backend_of(vendor, kind)
    prof = rt.backend(backend) if backend else None
    supported = prof is not None
    if prof is None:
        prof = rt.backends[0]
    return RuntimeChoice(rt, data.formats[fid], kv, backend or prof.backend, prof, supported)


def runtime_for_format(quant: str) -> str | None:
    """The first runtime (file order) that loads a weight format, for a request naming a format but no runtime."""
    fid = quant.strip().lower()
    return next((rid for rid, rt in runtime_data().runtimes.items() if fid in rt.weight_formats), None)
