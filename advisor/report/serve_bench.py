"""A runnable command that measures a sized serving plan on the user's own box: ``advisor serve --bench``.

The command runs the plan's length mix at a ladder of concurrencies around the option's predicted knee (a
quarter, half, one and two times the users one replica serves within the target, and one user alone), with
the target as the tool's goodput option where it has one; each rung saves a result that ``advisor runs import``
reads back, so the plan learns from the box (``estimate.learned``). Flags are each tool's documented ones:

* vLLM: ``vllm bench serve`` (vllm-project/vllm, ``vllm/benchmarks/serve.py``): ``--dataset-name random``,
  ``--random-input-len``, ``--random-output-len``, ``--random-range-ratio``, ``--num-prompts``,
  ``--max-concurrency``, ``--request-rate``, ``--goodput ttft:MS tpot:MS``, ``--save-result``, ``--result-filename``.
* SGLang: ``python -m sglang.bench_serving`` (sgl-project/sglang, ``python/sglang/bench_serving.py``): the same
  random-dataset flags with ``--output-file``, its range ratio read its own way (``random_lengths``); it has no
  goodput option, so the target is a comment.
* GuideLLM: ``guidellm benchmark`` (vllm-project/guidellm, "Run a Benchmark"): ``--target``, ``--rate-type
  concurrent`` with ``--rate`` the ladder, ``--data prompt_tokens=N,output_tokens=N``, ``--max-requests``,
  ``--output-path``.
* llama-server: ``vllm bench serve`` against llama-server's OpenAI-compatible ``/v1/completions`` (llama.cpp
  ``tools/server/README.md``) at the server's slots.

Every word is quoted with ``shlex.quote``; comments keep printable characters only.
"""

from __future__ import annotations

import math
import shlex

from advisor.report.launch_text import LaunchError, comment_text
from advisor.report.serve_launch import PORTS, model_repo, pick_option

BENCH_KINDS = ("vllm", "sglang", "guidellm", "llama-server")
LADDER = (0.25, 0.5, 1.0, 2.0)  # rungs as multiples of the predicted knee, with one user alone
PROMPTS_PER_USER = 10  # requests per rung: ten per concurrent user, at least MIN_PROMPTS
MIN_PROMPTS = 50


def ladder(knee: float) -> list[int]:
    """Concurrencies around the predicted knee: 1, then ``LADDER`` x knee rounded up, distinct and increasing."""
    k = max(1.0, float(knee))
    return sorted({1, *(max(1, math.ceil(f * k)) for f in LADDER)})


def _knee(doc: dict, o: dict) -> float:
    """The users one replica serves within the target (the plan's knee), else the load asked for per replica."""
    for key in ("max_users_per_replica", "in_service_per_replica"):
        v = o.get(key)
        if isinstance(v, (int, float)) and v > 0:
            return float(v)
    users = (doc.get("load") or {}).get("users")
    return float(users or 1) / max(1, int(o.get("replicas") or 1))


def _lengths(doc: dict) -> tuple[int, int, float]:
    n = doc.get("lengths") or {}
    prompt = max(1, round(float(n.get("prompt_tokens_mean") or 512)))
    output = max(1, round(float(n.get("output_tokens_mean") or 256)))
    spread = min(0.99, max(0.0, float(n.get("prompt_spread") or 0.0)))
    return prompt, output, spread


def random_lengths(kind: str, prompt: int, output: int, spread: float) -> list[str]:
    """The random dataset's flags that draw the plan's mean lengths at its spread (a coefficient of variation),
    uniform as both tools draw them. ``vllm bench serve`` draws from ``[L (1 - r), L (1 + r)]`` with ``r`` below 1
    (vllm-project/vllm ``vllm/benchmarks/datasets.py``, ``RandomDataset``): mean ``L``, spread ``r / sqrt 3``.
    SGLang's ``bench_serving`` draws from ``[max(L r, 1), L]`` (``sample_random_requests``): ``r`` 1 is the
    length exactly, 0 uniform up to it, so ``L`` is set above the mean, ``L = 2 m / (1 + r)`` with
    ``r = (1 - s sqrt 3) / (1 + s sqrt 3)`` (mean ``m``, spread ``s``; at most 0.577, where ``r`` is 0)."""
    root3 = math.sqrt(3.0)
    if kind == "sglang":
        r = max(0.0, (1.0 - spread * root3) / (1.0 + spread * root3))
        top = 2.0 / (1.0 + r)
        words = [round(prompt * top), round(output * top), f"{r:.3g}"]
    else:
        words = [prompt, output, f"{min(0.99, spread * root3):.3g}"]
    return ["--random-input-len", str(words[0]), "--random-output-len", str(words[1]), "--random-range-ratio", words[2]]


def result_files(kind: str, rungs: list[int]) -> list[str]:
    """The files the rungs save (``--save-result``/``--output-file``/``--output-path``), one per rung but GuideLLM's."""
    if kind == "guidellm":
        return ["guidellm-benchmarks.json"]
    return [f"sglang-c{c}.jsonl" if kind == "sglang" else f"{kind}-c{c}.json" for c in rungs]


def import_line(kind: str, doc: dict, option: dict, rungs: list[int]) -> str:
    """The ``advisor runs import`` command that reads the rungs' results back as this option's runs: the model as the
    plan named it (SGLang's lines name none), the option's accelerator and devices a replica, and for llama-server
    the runtime (``vllm bench serve`` saves the client's backend, not the server's)."""
    model = (doc.get("model") or {}).get("id") or (doc.get("model") or {}).get("name") or "MODEL"
    words = ["advisor", "runs", "import", *result_files(kind, rungs), "--model", str(model)]
    if option.get("accelerator"):
        words += ["--accelerator", str(option["accelerator"])]
    if isinstance(option.get("devices_per_replica"), int) and option["devices_per_replica"] >= 1:
        words += ["--devices", str(option["devices_per_replica"])]
    if kind == "llama-server":
        words += ["--software", "llama.cpp"]
    return _line(words)


def _goodput(doc: dict) -> list[str]:
    t = doc.get("targets") or {}
    words = [f"{name}:{float(t[key]) * 1000:g}" for name, key in (("ttft", "ttft_p95_s"), ("tpot", "tpot_p95_s"))
             if isinstance(t.get(key), (int, float)) and t[key] > 0]
    return ["--goodput", *words] if words else []


def _line(words: list[str]) -> str:
    return " ".join(shlex.quote(w) for w in words)


def render_serve_bench(kind: str, doc: dict, option_id: str | None = None) -> str:
    """Shell lines that measure one option of an ``advisor.serve/1`` document with ``kind``'s benchmark tool.

    Raises:
        LaunchError: an unknown tool or option, or a document that is not ``advisor.serve/1``.
    """
    if not isinstance(doc, dict) or doc.get("schema") != "advisor.serve/1":
        raise LaunchError("bench: the document is not an advisor.serve/1 serving plan")
    if kind not in BENCH_KINDS:
        raise LaunchError(f"bench: unknown tool {kind!r} (one of {', '.join(BENCH_KINDS)})")
    o = pick_option(doc, "vllm" if kind == "guidellm" else kind, option_id)
    repo = model_repo(doc)
    prompt, output, spread = _lengths(doc)
    rungs = ladder(_knee(doc, o))
    server = "llama-server" if kind == "llama-server" else ("sglang" if kind == "sglang" else "vllm")
    port = PORTS[server]
    t = doc.get("targets") or {}
    target = ", ".join(f"{k} {float(v):g} s" for k, v in t.items() if isinstance(v, (int, float))) or "none given"
    lines = [f"# measures {comment_text(o.get('id'))} ({comment_text(o.get('accelerator_name'))}) served by {server} on port "
             f"{port}: {prompt} prompt / {output} output tokens (spread {spread:g}), concurrency "
             f"{', '.join(map(str, rungs))} around the predicted knee of {_knee(doc, o):.0f}; target {comment_text(target)}",
             f"# then, to learn from your box: {comment_text(import_line(kind, doc, o, rungs))}"]
    if kind == "guidellm":
        lines.append(_line(["guidellm", "benchmark", "--target", f"http://127.0.0.1:{port}", "--model", repo,
                            "--rate-type", "concurrent", "--rate", ",".join(map(str, rungs)),
                            "--data", f"prompt_tokens={prompt},output_tokens={output}",
                            "--max-requests", str(max(MIN_PROMPTS, PROMPTS_PER_USER * rungs[-1])),
                            "--output-path", result_files(kind, rungs)[0]]))
        return "\n".join(lines) + "\n"
    if kind == "sglang":
        lines.append("# sglang.bench_serving has no goodput option: compare its p95 first-token and per-token "
                     "times with the target above")
    for c in rungs:
        n = str(max(MIN_PROMPTS, PROMPTS_PER_USER * c))
        random = ["--dataset-name", "random", *random_lengths(kind, prompt, output, spread), "--num-prompts", n,
                  "--max-concurrency", str(c), "--request-rate", "inf"]
        if kind == "sglang":
            words = ["python", "-m", "sglang.bench_serving", "--backend", "sglang", "--host", "127.0.0.1",
                     "--port", str(port), "--model", repo, *random, "--output-file", f"sglang-c{c}.jsonl"]  # result_files
        else:
            backend = ["--backend", "vllm"] if kind == "vllm" else ["--backend", "openai", "--endpoint",
                                                                   "/v1/completions"]
            words = ["vllm", "bench", "serve", *backend, "--base-url", f"http://127.0.0.1:{port}", "--model", repo,
                     *random, *_goodput(doc), "--save-result", "--result-filename", f"{kind}-c{c}.json"]
        lines.append(_line(words))
    return "\n".join(lines) + "\n"
