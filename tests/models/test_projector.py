"""A multimodal GGUF's projector (``mmproj-*.gguf``) counts in its memory (issue 36, item 2)."""

from __future__ import annotations

import pytest

from advisor.catalog.load import bundled_catalog
from advisor.models import ModelSpecError, resolve_model
from advisor.models.gguf_file import pick_projector
from tests.models.conftest import write_gguf
from tests.models.gguf_bytes import STRING, gguf_bytes, llama_kv

CAT = bundled_catalog()
PATCH = (14, 14, 3, 64)  # a patch embedding of 14 x 14 pixels, 3 colours, 64 wide: 37,632 F32 values
PATCH_BYTES = 14 * 14 * 3 * 64 * 4


def clip_gguf(*tensors) -> bytes:
    """A projector as llama.cpp's converter writes one: general.architecture "clip", F32 tensors."""
    return gguf_bytes([("general.architecture", STRING, "clip")], tensors or (("v.patch_embd.weight", PATCH),))


def test_projector_beside_a_gguf_counts_in_its_memory(tmp_path):
    model = tmp_path / "Tiny-Q8_0.gguf"
    expected = write_gguf(model)
    (tmp_path / "mmproj-Tiny-F16.gguf").write_bytes(clip_gguf())
    (tmp_path / "mmproj-Tiny-F32.gguf").write_bytes(clip_gguf(("v.patch_embd.weight", PATCH), ("v.big", (4096,))))
    rm = resolve_model(str(model), CAT)
    assert rm.weight_bytes == expected["bytes"]  # the model's own tensors are unchanged
    assert rm.projector_bytes == PATCH_BYTES  # the 16-bit projector is the one engines load by default
    assert rm.loaded_bytes == expected["bytes"] + PATCH_BYTES
    assert rm.projector.endswith("mmproj-Tiny-F16.gguf") and any("mmproj-Tiny-F16.gguf" in n for n in rm.notes)
    assert rm.to_json()["projector_bytes"] == PATCH_BYTES
    # a directory holding one model GGUF and its projector is the same model
    assert resolve_model(str(tmp_path), CAT).projector_bytes == PATCH_BYTES


def test_plan_weights_include_the_projector(tmp_path):
    from advisor.planner import PlanRequest
    from advisor.planner.request import resolve_job_model

    model = tmp_path / "Tiny-Q8_0.gguf"
    expected = write_gguf(model)
    req = PlanRequest.from_mapping(dict(model=str(model), workload="inference"))
    assert resolve_job_model(req, CAT).weight_bytes == expected["bytes"]
    (tmp_path / "mmproj-F16.gguf").write_bytes(clip_gguf())
    assert resolve_job_model(req, CAT).weight_bytes == expected["bytes"] + PATCH_BYTES


def test_a_text_gguf_alone_has_no_projector(tmp_path):
    model = tmp_path / "Tiny-Q8_0.gguf"
    expected = write_gguf(model)
    rm = resolve_model(str(model), CAT)
    assert (rm.projector_bytes, rm.loaded_bytes) == (0, expected["bytes"])


def test_bad_projectors_are_one_line(tmp_path):
    model = tmp_path / "Tiny-Q8_0.gguf"
    write_gguf(model)
    bad = tmp_path / "mmproj-F16.gguf"
    bad.write_bytes(b"GGUF")
    with pytest.raises(ModelSpecError, match="mmproj-F16.gguf") as err:
        resolve_model(str(model), CAT)
    assert "\n" not in str(err.value)
    bad.write_bytes(gguf_bytes(llama_kv()))  # a GGUF, but a language model's
    with pytest.raises(ModelSpecError, match="not a multimodal projector"):
        resolve_model(str(model), CAT)
    bad.write_bytes(clip_gguf())
    with pytest.raises(ModelSpecError, match="a multimodal projector, not a model"):
        resolve_model(str(bad), CAT)


def test_pick_prefers_sixteen_bits_then_the_smallest():
    assert pick_projector([("mmproj-F32.gguf", 9), ("mmproj-BF16.gguf", 5), ("mmproj-Q8_0.gguf", 3)]) == \
        ("mmproj-BF16.gguf", 5)
    assert pick_projector([("mmproj-F32.gguf", 9), ("mmproj-Q8_0.gguf", 3)]) == ("mmproj-Q8_0.gguf", 3)
    assert pick_projector([("mmproj-model-f16.gguf", 7)]) == ("mmproj-model-f16.gguf", 7)
    assert pick_projector([("model-F16.gguf", 7)]) is None


def test_lmstudio_model_carries_its_projector(tmp_path, monkeypatch):
    folder = tmp_path / "lms" / "lmstudio-community" / "gemma-3-27b-it-GGUF"
    folder.mkdir(parents=True)
    expected = write_gguf(folder / "gemma-3-27b-it-Q4_K_M.gguf")
    (folder / "mmproj-model-f16.gguf").write_bytes(clip_gguf())
    monkeypatch.setenv("ADVISOR_LMSTUDIO_MODELS", str(tmp_path / "lms"))
    rm = resolve_model("lmstudio:lmstudio-community/gemma-3-27b-it-GGUF", CAT)
    assert rm.loaded_bytes == expected["bytes"] + PATCH_BYTES


def test_ollama_vision_model_counts_its_projector_layer(tmp_path, monkeypatch):
    """An Ollama vision model (llava) lists its projector as a layer of mediaType
    application/vnd.ollama.image.projector beside the weights (ollama/ollama, server/images.go)."""
    import hashlib
    import json

    from tests.models.test_gguf_and_stores import _ollama_store

    weights = tmp_path / "w.gguf"
    expected = write_gguf(weights)
    root = tmp_path / "ollama"
    _ollama_store(root, "llava", "7b", weights.read_bytes())
    monkeypatch.setenv("OLLAMA_MODELS", str(root))
    assert resolve_model("ollama:llava:7b", CAT).projector_bytes == 0
    proj = clip_gguf()
    digest = hashlib.sha256(proj).hexdigest()
    (root / "blobs" / f"sha256-{digest}").write_bytes(proj)
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / "llava" / "7b"
    doc = json.loads(manifest.read_text())
    doc["layers"].append({"mediaType": "application/vnd.ollama.image.projector", "digest": f"sha256:{digest}",
                          "size": len(proj)})
    manifest.write_text(json.dumps(doc))
    rm = resolve_model("ollama:llava:7b", CAT)
    assert (rm.weight_bytes, rm.projector_bytes) == (expected["bytes"], PATCH_BYTES)
    doc["layers"][-1]["digest"] = "sha256:xyz"
    manifest.write_text(json.dumps(doc))
    with pytest.raises(ModelSpecError, match="digest"):
        resolve_model("ollama:llava:7b", CAT)


def test_projector_counts_in_memory_not_in_the_decode(tmp_path):
    """Issue 36: the projector loads with the model (memory) but runs once per image, so a decode step reads the
    language model alone: the plan of a GGUF with its mmproj decodes as fast as the GGUF alone, on the same
    accelerator, and its memory is larger by the projector's bytes (14 x 14 x 3 x 64 F32 values: 150,528)."""
    from advisor.planner import PlanRequest, plan

    model = tmp_path / "Tiny-Q8_0.gguf"
    write_gguf(model)
    req = PlanRequest.from_mapping(dict(model=str(model), workload="inference", accelerator=["h100-sxm"],
                                        runtime="llama.cpp"))
    alone = plan(req, CAT, advise=False)
    (tmp_path / "mmproj-F16.gguf").write_bytes(clip_gguf())
    both = plan(req, CAT, advise=False)
    a, b = alone.options[0], both.options[0]
    assert (a.accelerator, a.devices) == (b.accelerator, b.devices) == ("h100-sxm", 1)
    assert b.tokens_per_s == pytest.approx(a.tokens_per_s, rel=1e-12)
    assert b.memory.weights_bytes - a.memory.weights_bytes == PATCH_BYTES
    assert b.memory.total_bytes > a.memory.total_bytes


def test_projector_on_the_first_device_not_split():
    """llama.cpp's mtmd loads the vision encoder on one backend: with 2 devices the first holds half the language
    model and all of the projector."""
    from advisor.estimate import memory

    arch = CAT.model("llama-3.1-8b")
    m = memory.inference_memory(arch, 8e9, precision="bf16", devices=2, context=1024, batch=1,
                                weight_bytes=16e9 + 1e9, projector_bytes=1e9)
    assert m.weights_bytes == int(16e9 / 2 + 1e9)


@pytest.mark.parametrize("users", [1, 8])
def test_serve_reads_the_language_model_alone_too(tmp_path, users):
    """What ``advisor serve`` sizes reads per step what the plan's request reads: a GGUF with its projector serves
    as fast as the GGUF alone, at one user (the plan's request) and at load (the step model), while its
    replica's memory holds the projector's bytes (one question, one answer: tests/consistency)."""
    from advisor.job.serve import ServeJob
    from advisor.planner.serve import serve_plan

    model = tmp_path / "Tiny-Q8_0.gguf"
    write_gguf(model)
    job = ServeJob.from_mapping(dict(model=str(model), runtime="llama.cpp", accelerator=["h100-sxm"], users=users,
                                     prompt_tokens=200, output_tokens=100))
    alone = serve_plan(job, CAT).options[0]
    (tmp_path / "mmproj-F16.gguf").write_bytes(clip_gguf())
    both = serve_plan(job, CAT).options[0]
    assert both.spec.weight_bytes - alone.spec.weight_bytes == PATCH_BYTES
    assert both.spec.unread_bytes == PATCH_BYTES and alone.spec.unread_bytes == 0
    assert both.point.tpot_p50_s == pytest.approx(alone.point.tpot_p50_s, rel=1e-9)
    assert both.point.output_tokens_per_s == pytest.approx(alone.point.output_tokens_per_s, rel=1e-9)
