"""Hostile names and where they come from: one set, put into every source the advisor shows names from.

``HOSTILE_NAMES`` (``advisor.hw.fake``) are what a GPU neighbour, a model file or a price list can hold:
rich markup, terminal escapes (window title, clear screen), HTML (``<img src="/dev/zero">``), NUL,
undecodable bytes, a right-to-left override, 100 kB. ``--fake-gpu hostile-names`` puts them into the GPU
names, the driver version and other users' command lines; ``plant_everywhere`` puts them into the model
stores (LM Studio folders, a Hugging Face cache repository, an Ollama manifest), the user catalog (an
accelerator's name, an offer's provider, region and notes) and a GGUF file's ``general.name``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from advisor.hw.fake import HOSTILE_NAMES

SHORT = HOSTILE_NAMES[:-1]  # all but the 100 kB one
MARKUP = ("[/data/shards]", "[link=file:///etc/passwd]x[/link]")
HTML_TAGS = ("<img", "<font", "<a href")  # unescaped, any of these in rich text is a failure
RAW_CONTROLS = ("\x1b", "\x07", "\x00", "\u202e")


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string (\\uXXXX escapes for controls)


def user_catalog_text() -> str:
    """A user catalog whose names, regions and notes are hostile (each field at most 2000 characters)."""
    joined = " ".join(n for n in SHORT if "\udcff" not in n)  # TOML holds Unicode scalars only
    return (f"[accelerators.hostile-gpu]\nvendor = {_toml_string(joined[:200])}\nname = {_toml_string(joined)}\n"
            f"kind = \"consumer\"\nmemory_gb = 24\nbf16_tflops = 100\nmem_bandwidth_gbs = 1000\ntdp_w = 300\n"
            f"street_price_usd = 999\nstreet_price_date = \"2026-11\"\nnotes = {_toml_string(joined)}\n"
            f"source = {_toml_string(joined)}\n\n"
            f"[cloud_offers.\"evil:box\"]\nprovider = {_toml_string(joined[:300])}\ninstance = \"box\"\n"
            f"accelerator_id = \"rtx-4090\"\naccelerator_count = 1\nregion = {_toml_string(joined[:300])}\n"
            f"on_demand_usd_per_hour = 0.01\nprice_date = \"2026-11-29\"\nnotes = {_toml_string(joined)}\n"
            f"source = {_toml_string(joined)}\n")


def write_gguf_named(path: Path, name: str) -> None:
    """A small real GGUF model (``tests.models.conftest.write_gguf``) whose ``general.name`` is ``name``."""
    import gguf

    from tests.models.conftest import write_gguf

    original = gguf.GGUFWriter.add_name
    raw = name.encode("utf-8", "surrogateescape")  # undecodable bytes as they would be in a file
    gguf.GGUFWriter.add_name = lambda self, _n: original(self, raw)
    try:
        write_gguf(path)
    finally:
        gguf.GGUFWriter.add_name = original


def plant_everywhere(tmp_path: Path) -> dict[str, Path]:
    """Hostile names in every store under ``tmp_path`` and ADVISOR_HOME (the test's environment points there).

    Returns:
        {"gguf": a GGUF file named hostilely inside}.
    """
    from advisor import paths
    from tests.models.configs import LLAMA31_8B
    from tests.models.conftest import add_to_hf_cache, config_bytes

    lm = Path(os.environ["ADVISOR_LMSTUDIO_MODELS"])
    one = tmp_path / "one.gguf"
    # general.name: all but the undecodable one (the reader falls back to the file name on bad UTF-8)
    write_gguf_named(one, " ".join(n for n in HOSTILE_NAMES if "\udcff" not in n))
    data = one.read_bytes()
    for k, name in enumerate(SHORT):  # a path of folders: a '/' in a name is a folder boundary
        folder = lm / f"pub{k}" / name.replace("\x00", "NUL").strip("/")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.gguf").write_bytes(data)
    hf = Path(os.environ["HF_HUB_CACHE"])
    add_to_hf_cache(hf, "org/<font size=7>big \x1b]0;pwned\x07 [link=x]", {"config.json": config_bytes(LLAMA31_8B)})
    ol = Path(os.environ["OLLAMA_MODELS"])
    digest = "sha256:" + "ab" * 32
    manifest = ol / "manifests" / "registry.ollama.ai" / "library" / "<img src=x>\x1b[2J" / "latest"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model", "digest": digest,
                                                "size": len(data)}]}))
    (ol / "blobs").mkdir()
    (ol / "blobs" / digest.replace(":", "-")).write_bytes(data)
    cat = paths.user_catalog_file()
    cat.parent.mkdir(parents=True, exist_ok=True)
    cat.write_text(user_catalog_text(), encoding="utf-8")
    return {"gguf": one}


def inert(text: str) -> bool:
    """No raw control or bidi character (what a terminal or a layout would act on)."""
    return not any(c in text for c in RAW_CONTROLS) and not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
