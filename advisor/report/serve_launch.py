"""Launch lines for a sized serving option: ``vllm serve``, ``llama-server``, SGLang's ``launch_server``, and a
SkyPilot service (``sky serve up``) for cloud options.

Works on the ``advisor.serve/1`` document (a dict), like ``report.launch`` works on plans. Every value is
quoted for its target: shell words with ``shlex.quote``, the SkyPilot YAML by the YAML emitter, comments
keep printable characters only. Flags are those of each runtime's documentation:

* vLLM: ``vllm serve`` engine arguments (docs.vllm.ai, "Engine Arguments"): ``--tensor-parallel-size``,
  ``--max-num-seqs``, ``--max-model-len``, ``--gpu-memory-utilization``, ``--kv-cache-dtype``.
* llama.cpp: ``llama-server`` (``tools/server/README.md``): ``-ngl``, ``-c`` (shared by the slots), ``-np``,
  ``--flash-attn`` (``-fa``; needed for a quantised V cache), ``-ctk``/``-ctv``.
* SGLang: ``python -m sglang.launch_server`` (``sglang/srt/server_args.py``): ``--tp-size``,
  ``--max-running-requests``, ``--context-length``, ``--mem-fraction-static``, ``--kv-cache-dtype``,
  ``--chunked-prefill-size``.
* SkyPilot: a service YAML (docs.skypilot.co, "SkyServe"): ``service:`` with ``readiness_probe`` and
  ``replicas``, the resources and the run command.
"""

from __future__ import annotations

import re
import shlex

from advisor.report.launch_text import SKYPILOT_ACCELERATORS, SKYPILOT_CLOUDS, LaunchError, comment_text, path_word, yaml_text

SERVE_KINDS = ("vllm", "llama-server", "sglang", "skypilot")
RUNTIME_OF = {"vllm": "vllm", "llama-server": "llama.cpp", "sglang": "sglang"}
PORTS = {"vllm": 8000, "llama-server": 8080, "sglang": 30000}
_HF = re.compile(r"(?:huggingface\.co/)?([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:\s|\)|$| \(config)")


def model_repo(doc: dict) -> str:
    """The model to pass to a server: a Hugging Face repository named by the model's source, else the name."""
    m = doc.get("model") or {}
    source = str(m.get("source") or "")
    hit = _HF.search(source)
    if hit and "/" in hit.group(1):
        return hit.group(1)
    return str(m.get("name") or "MODEL")


def pick_option(doc: dict, kind: str, option_id: str | None = None) -> dict:
    """The option to launch: the one named, else (SkyPilot) the cheapest cloud option meeting the target, else
    the first owned option that fits and meets it, else the cheapest meeting it, else the first that fits.

    Raises:
        LaunchError: an unknown id, or no option that fits.
    """
    options = [o for o in doc.get("options") or [] if isinstance(o, dict)]
    if option_id is not None:
        for o in options:
            if o.get("id") == option_id:
                if not o.get("fits"):
                    raise LaunchError(f"launch: option {option_id!r} does not fit the model; choose one that fits")
                return o
        raise LaunchError(f"launch: no option {option_id!r} (see the ids in 'advisor serve --json')")
    fitting = [o for o in options if o.get("fits")]
    if kind == "skypilot":
        fitting = [o for o in fitting if o.get("kind") == "cloud"]
    ranked = ([o for o in fitting if o.get("kind") == "owned" and o.get("meets_target")]
              + sorted((o for o in fitting if o.get("meets_target") and o.get("usd_per_million_requests")),
                       key=lambda o: o["usd_per_million_requests"]) + fitting)
    if not ranked:
        raise LaunchError("launch: no option fits the model, nothing to launch")
    return ranked[0]


def _words(kind: str, doc: dict, o: dict, port: int | None = None) -> list[str]:
    """The server's argument words. The model can never be read as an option: SGLang takes it as
    ``--model-path=NAME`` (argparse reads the rest of the word as the value), llama.cpp a GGUF path that
    starts ``./`` when the name starts with ``-``, and vLLM, which takes the model as its one positional
    argument, refuses such a name (a ``--trust-remote-code`` model would become that flag)."""
    launch = o.get("launch") or {}
    repo = model_repo(doc)
    tp = int(launch.get("tp") or 1)
    port = port or PORTS.get(kind, 8000)
    if kind == "vllm":
        if repo.startswith("-"):
            raise LaunchError(f"launch: the model name {comment_text(repo)!r} starts with '-': vllm serve would read it as "
                              "an option; name the model by its Hugging Face repository or a path")
        words = ["vllm", "serve", repo, "--tensor-parallel-size", str(tp),
                 "--max-num-seqs", str(launch.get("max_num_seqs", 256)),
                 "--max-model-len", str(launch.get("max_model_len", 4096)),
                 "--gpu-memory-utilization", f"{float(launch.get('gpu_memory_utilization', 0.9)):g}",
                 "--kv-cache-dtype", "fp8" if int(launch.get("kv_cache_bits") or 16) == 8 else "auto"]
        return words + ["--port", str(port)]
    if kind == "sglang":
        words = ["python", "-m", "sglang.launch_server", f"--model-path={repo}", "--tp-size", str(tp),
                 "--max-running-requests", str(launch.get("max_num_seqs", 256)),
                 "--context-length", str(launch.get("max_model_len", 4096)),
                 "--mem-fraction-static", f"{float(launch.get('gpu_memory_utilization', 0.88)):g}",
                 "--kv-cache-dtype", "fp8_e4m3" if int(launch.get("kv_cache_bits") or 16) == 8 else "auto",
                 "--chunked-prefill-size", str(launch.get("chunk_tokens", 8192))]
        return words + ["--port", str(port)]
    if kind == "llama-server":
        slots = int(launch.get("slots") or launch.get("max_num_seqs") or 1)
        ctx = int(launch.get("ctx_size") or slots * int(launch.get("max_model_len", 4096)))
        fmt = str(launch.get("weight_format") or (doc.get("model") or {}).get("weight_format") or "f16").upper()
        gguf = f"{doc.get('model', {}).get('name') or 'model'}-{fmt}.gguf".replace(" ", "-")
        words = ["llama-server", "-m", path_word(gguf), "-ngl", "999", "-c", str(ctx), "-np", str(slots),
                 "--flash-attn", "on"]
        split = launch.get("tensor_split")
        if isinstance(split, list) and len(split) > 1 and all(isinstance(x, (int, float)) for x in split):
            words += ["--split-mode", "layer", "--tensor-split", ",".join(f"{float(x):g}" for x in split)]
        bits = int(launch.get("kv_cache_bits") or 16)
        if bits < 16:
            cache = "q4_0" if bits == 4 else "q8_0"
            words += ["-ctk", cache, "-ctv", cache]
        return words + ["--port", str(port)]
    raise LaunchError(f"launch: unknown server {kind!r} (one of {', '.join(SERVE_KINDS)})")


def render_serve_launch(kind: str, doc: dict, option_id: str | None = None) -> str:
    """The launch text of one option: shell lines (one per replica on owned or bought hardware) or the
    SkyPilot service YAML.

    Raises:
        LaunchError: an unknown kind or option, or a document that is not ``advisor.serve/1``.
    """
    if not isinstance(doc, dict) or doc.get("schema") != "advisor.serve/1":
        raise LaunchError("launch: the document is not an advisor.serve/1 serving plan")
    if kind not in SERVE_KINDS:
        raise LaunchError(f"launch: unknown server {kind!r} (one of {', '.join(SERVE_KINDS)})")
    o = pick_option(doc, kind, option_id)
    head = [f"# {comment_text(o.get('id'))}: {comment_text(o.get('accelerator_name'))}, {o.get('replicas', 1)} replica(s) of "
            f"{o.get('devices_per_replica', 1)} device(s); sized by advisor serve for "
            f"{comment_text(_load_words(doc))}"]
    if kind == "skypilot":
        return "\n".join(head) + "\n" + _skypilot(doc, o)
    replicas = int(o.get("replicas") or 1)
    per = int(o.get("devices_per_replica") or 1)
    lines = list(head)
    for i in range(replicas):
        words = _words(kind, doc, o, PORTS[kind] + i)
        line = " ".join(shlex.quote(w) for w in words)
        if replicas > 1:
            gpus = ",".join(str(i * per + k) for k in range(per))
            line = f"CUDA_VISIBLE_DEVICES={shlex.quote(gpus)} {line} &"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _load_words(doc: dict) -> str:
    load = doc.get("load") or {}
    if load.get("users") is not None:
        return f"{load['users']} users"
    return f"{load.get('requests_per_s')} requests/s"


def _skypilot(doc: dict, o: dict) -> str:
    """A SkyServe service: replicas behind one endpoint, a readiness probe on the OpenAI-compatible API."""
    runtime = str((o.get("launch") or {}).get("runtime") or "vllm")
    kind = {"llama.cpp": "llama-server", "sglang": "sglang"}.get(runtime, "vllm")
    port = PORTS[kind]
    words = _words(kind, doc, o, port)
    acc = SKYPILOT_ACCELERATORS.get(str(o.get("accelerator")), str(o.get("accelerator")))
    resources = {"accelerators": f"{acc}:{int(o.get('devices_per_replica') or 1)}", "ports": port}
    provider = str(o.get("provider") or "").lower()
    if provider in SKYPILOT_CLOUDS:
        resources["cloud"] = SKYPILOT_CLOUDS[provider]
    if o.get("spot"):
        resources["use_spot"] = True
    spec = {
        "service": {"readiness_probe": {"path": "/health" if kind == "llama-server" else "/v1/models",
                                        "initial_delay_seconds": 1200},
                    "replicas": int(o.get("replicas") or 1)},
        "resources": resources,
        "run": " ".join(shlex.quote(w) for w in words[:-2]) + f" --host 0.0.0.0 --port {port}\n",
    }
    return yaml_text(spec)
