"""Training step of a small decoder-only transformer: tokens/s, achieved TFLOP/s, MFU and peak memory.

The model is built in code (``_transformer.TinyGpt``, no downloads), trained on preallocated random
tokens with AdamW at the chosen precision (fp32, or bf16/fp16 mixed precision with autocast).
Achieved FLOP/s = 6 * P * tokens/s (Kaplan et al. 2020; attention score FLOPs are not counted, as in
the planner); MFU = achieved / dense peak of the device at that precision (the catalog's figure for a
GPU). A CPU has no catalog peak: its MFU is relative to the fp32 matmul rate measured on the spot at the
step's own matrix shapes (or ``peak_tflops`` when given), and the result says so. An MFU above 1 cannot be
true and is not shown (``_types.refuse_impossible``, applied to every probe's result).
"""

from __future__ import annotations

import contextlib
import resource
import sys

from advisor.probes._common import (
    TFLOP,
    headline_time,
    physical_cores,
    probe,
    require_torch,
    resolve_device,
    time_reps,
    torch_threads,
)
from advisor.probes._transformer import TinyGptConfig, build_model
from advisor.probes._types import CancelToken, KernelResult, ProbeResult, ProbeSkipped, Progress

NAME = "train-step"
PRECISIONS = ("fp32", "bf16", "fp16")


def default_config(kind: str, quick: bool) -> tuple[TinyGptConfig, int]:
    """(model shape, batch) sized so a step takes tens of milliseconds on a GPU and well under a second on a CPU."""
    if kind == "cuda":
        return TinyGptConfig(vocab=32768, hidden=2048, layers=4 if quick else 8, heads=16, seq_len=1024), 8
    if quick:
        return TinyGptConfig(vocab=4096, hidden=256, layers=2, heads=4, seq_len=128), 4
    return TinyGptConfig(vocab=8192, hidden=256, layers=4, heads=4, seq_len=256), 2


def model_flops_per_token(params: int, cfg: TinyGptConfig | None = None) -> float:
    """The FLOPs of a trained token as the planner counts them (one definition of utilisation for the probe and
    the plan): 6 * P (forward 2P, backward 4P) and, given the model, its attention, 6 * L * s * h
    (``estimate.compute.attention_flops_per_token``)."""
    from advisor.estimate.compute import attention_flops_per_token

    extra = attention_flops_per_token(cfg.layers, cfg.seq_len, cfg.hidden) if cfg is not None else 0.0
    return 6.0 * params + extra


def step_matmul_shapes(cfg: TinyGptConfig, batch: int) -> tuple[tuple[int, int, int], ...]:
    """The (M, K, N) of the step's matrix products: every token through the attention projections, the MLP
    and the tied output head (``_transformer.TinyGpt``)."""
    m, h = batch * cfg.seq_len, cfg.hidden
    return ((m, h, 3 * h), (m, h, h), (m, h, cfg.ffn), (m, cfg.ffn, h), (m, h, cfg.vocab))


def _cpu_matmul_peak_tflops(torch, cancel: CancelToken, shapes: tuple[tuple[int, int, int], ...]) -> float:
    """This CPU's fp32 matmul rate at the step's own shapes (``step_matmul_shapes``): the fastest call over
    them, so the MFU against it is conservative (a step's products cannot beat their own best rate)."""
    best = 0.0
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        out = torch.empty(m, n)
        try:
            ts = time_reps(lambda: torch.mm(a, b, out=out), reps=20, warmup_s=0.1, cancel=cancel, budget_s=0.4)
        finally:
            del a, b, out
        best = max(best, 2.0 * m * k * n / min(ts) / TFLOP)
    return best


def _rss_peak_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


@probe(NAME)
def run(device: str = "cpu", quick: bool = False, cancel: CancelToken | None = None, *,
        precision: str | None = None, batch: int | None = None, seq_len: int | None = None,
        hidden: int | None = None, layers: int | None = None, heads: int | None = None, vocab: int | None = None,
        steps: int | None = None, warmup_s: float | None = None, peak_tflops: float | None = None,
        peak_origin: str | None = None):
    """Time training steps of a small transformer.

    Args:
        precision: fp32, bf16 or fp16 (default bf16 on a GPU that has it, fp32 on a CPU).
        batch, seq_len, hidden, layers, heads, vocab: model and batch shape (defaults from ``default_config``).
        steps: timed steps (default 5 quick, 20 full).
        peak_tflops: the peak to compute MFU against (default: the catalog's dense peak on a GPU, a
            measured fp32 matmul rate on a CPU).
        peak_origin: where ``peak_tflops`` comes from, shown next to the MFU (default ``"given"``).
    Returns:
        ProbeResult with ``tokens_per_s`` (tokens/s), ``achieved`` (TFLOP/s) and ``mfu`` (fraction),
        ``details`` with the parameter count and peak memory, and an ``mfu`` calibration offer.
    """
    torch = require_torch()
    dev = resolve_device(torch, device)
    base, default_batch = default_config(dev.type, quick)
    cfg = TinyGptConfig(vocab=int(vocab or base.vocab), hidden=int(hidden or base.hidden),
                        layers=int(layers or base.layers), heads=int(heads or base.heads),
                        seq_len=int(seq_len or base.seq_len))
    batch = int(batch or default_batch)
    if precision is None:
        precision = "bf16" if dev.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if dev.type == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        raise ProbeSkipped(f"{device} has no bf16 support: use --precision fp16 or fp32")
    steps = int(steps or (5 if quick else (20 if dev.type == "cuda" else 10)))
    warmup_s = warmup_s if warmup_s is not None else (0.3 if quick else (2.0 if dev.type == "cuda" else 1.0))
    acc = facts = None
    if dev.type == "cuda":
        from advisor.probes._device_info import catalog_accelerator, cuda_facts

        facts = cuda_facts(torch, dev)
        acc = catalog_accelerator(facts.catalog_id)
        torch.cuda.reset_peak_memory_stats(dev)
    params = cfg.param_count()
    nthreads = physical_cores()
    yield Progress(0.0, f"building a {params / 1e6:.1f} M-parameter transformer ({cfg.layers} layers, "
                        f"hidden {cfg.hidden}) on {device}")
    with torch_threads(torch, nthreads):
        torch.manual_seed(0)
        model = build_model(torch, cfg).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **({"fused": True} if dev.type == "cuda" else {}))
        tokens = torch.randint(0, cfg.vocab, (batch, cfg.seq_len + 1), device=dev)
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        scaler = torch.amp.GradScaler(dev.type) if precision == "fp16" else None
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
        assert sum(p.numel() for p in model.parameters()) == params

        def check_cancel(*_args) -> None:
            cancel.check()

        # checked before every block's forward and between the step's phases, so a slow CPU step
        # still stops within a second
        hooks = [block.register_forward_pre_hook(check_cancel) for block in model.blocks]

        def step() -> None:
            cancel.check()
            opt.zero_grad(set_to_none=True)
            ctx = (torch.autocast(dev.type, dtype=amp_dtype) if amp_dtype is not None else contextlib.nullcontext())
            with ctx:
                logits = model(inputs)
                loss = torch.nn.functional.cross_entropy(logits.reshape(-1, cfg.vocab).float(),
                                                         targets.reshape(-1))
            cancel.check()
            if scaler is not None:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()

        try:
            yield Progress(0.1, f"warming up for {warmup_s:.1f} s")
            times = []
            time_reps(step, reps=1, warmup_s=warmup_s, cancel=cancel, sync=sync, min_reps=1)
            for i in range(steps):
                times += time_reps(step, reps=1, warmup_s=0.0, cancel=cancel, sync=sync, min_reps=1)
                yield Progress(0.1 + 0.8 * (i + 1) / steps,
                               f"step {i + 1}/{steps}: {batch * cfg.seq_len / times[-1]:,.0f} tokens/s",
                               point={"series": "tokens_per_s", "x": i + 1, "y": batch * cfg.seq_len / times[-1]})
            peak_mem = torch.cuda.max_memory_allocated(dev) if dev.type == "cuda" else None
        finally:
            for hook in hooks:
                hook.remove()
            del model, opt, tokens, inputs, targets
        if peak_tflops:
            peak_origin = peak_origin or "given"
        elif acc is not None and acc.peak_flops(precision):
            peak_tflops = acc.peak_flops(precision) / TFLOP
            peak_origin = f"catalog:{acc.id} dense {precision}"
        elif dev.type == "cpu":
            yield Progress(0.95, "measuring the CPU's fp32 matmul rate as its peak")
            peak_tflops = _cpu_matmul_peak_tflops(torch, cancel, step_matmul_shapes(cfg, batch))
            peak_origin = ("measured fp32 matmul on this CPU at the step's own shapes (MFU is relative to it, "
                           "not to a spec peak)")
    tokens_per_step = batch * cfg.seq_len
    ordered = sorted(times)
    # the headline: the best of per-trial medians (a lucky step on a busy machine does not make it)
    tps_best, tps_median = tokens_per_step / headline_time(times), tokens_per_step / ordered[len(ordered) // 2]
    tps_worst = tokens_per_step / ordered[-1]
    flops = model_flops_per_token(params, cfg)
    results = {
        "tokens_per_s": KernelResult(tps_best, tps_median, "tokens/s", tps_worst, len(times)),
        "achieved": KernelResult(tps_best * flops / TFLOP, tps_median * flops / TFLOP, "TFLOP/s",
                                 tps_worst * flops / TFLOP, len(times)),
    }
    calibration = peak = None
    if peak_tflops:
        mfu = KernelResult(tps_best * flops / TFLOP / peak_tflops, tps_median * flops / TFLOP / peak_tflops,
                           "fraction", tps_worst * flops / TFLOP / peak_tflops, len(times))
        results["mfu"] = mfu
        peak = {"TFLOP/s": peak_tflops, "precision": precision, "origin": peak_origin}
        # the median, not the best: the planner should expect a typical step, not the luckiest one
        # a CPU calibration is saved under the "cpu" device id so the planner's CPU target can use it
        calibration = {"mfu": min(1.0, mfu.median),
                       "accelerator_id": acc.id if acc else ("cpu" if dev.type == "cpu" else None),
                       "precision": precision, "peak_origin": peak_origin}
    notes = ["achieved = (6 * P + 6 * L * s * h) * tokens/s (the planner's FLOPs, attention counted); MFU against a "
             "dense peak"]
    if dev.type == "cpu":
        notes.append("peak memory is the process's resident high-water mark (includes the interpreter)")
    return ProbeResult(
        probe=NAME, device=device, results=results, peak=peak, calibration=calibration,
        params={"quick": quick, "precision": precision, "batch": batch, "seq_len": cfg.seq_len, "hidden": cfg.hidden,
                "layers": cfg.layers, "heads": cfg.heads, "vocab": cfg.vocab, "steps": steps, "warmup_s": warmup_s,
                "threads": nthreads},
        details={"sweep": {"tokens_per_s": [[i + 1, tokens_per_step / t] for i, t in enumerate(times)]},
                 "sweep_x": "step", "params": params, "tokens_per_step": tokens_per_step, "step_time_median_s": ordered[len(ordered) // 2],
                 "peak_memory_bytes": peak_mem if dev.type == "cuda" else _rss_peak_bytes(),
                 "peak_memory_kind": "torch.cuda.max_memory_allocated" if dev.type == "cuda" else "process max RSS",
                 "device": facts.to_dict() if facts else None},
        notes=tuple(notes))
