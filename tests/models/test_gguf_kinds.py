"""Layer kinds read from GGUF metadata (issue 36): llama.cpp's sliding-window patterns and recurrent layers."""

from __future__ import annotations

from advisor.models.gguf_file import read_gguf
from tests.models.gguf_bytes import ARRAY, STRING, U32, gguf_bytes


def _kv(arch: str, layers: int, extra: dict) -> list:
    base = {"general.architecture": (STRING, arch), f"{arch}.block_count": (U32, layers),
            f"{arch}.embedding_length": (U32, 64), f"{arch}.attention.head_count": (U32, 4),
            f"{arch}.attention.head_count_kv": (U32, 2), f"{arch}.feed_forward_length": (U32, 128),
            f"{arch}.context_length": (U32, 4096), f"{arch}.vocab_size": (U32, 100)}
    base.update({f"{arch}.{k}": v for k, v in extra.items()})
    return [(k, t, v) for k, (t, v) in base.items()]


def test_gemma3_gguf_takes_llama_cpps_pattern_of_six(tmp_path):
    """gemma3 GGUFs carry ``attention.sliding_window`` only; llama.cpp sets the pattern (set_swa_pattern(6))."""
    f = tmp_path / "g.gguf"
    f.write_bytes(gguf_bytes(_kv("gemma3", 12, {"attention.sliding_window": (U32, 1024)})))
    a = read_gguf(f).arch
    assert (a.sliding_window, a.count_of("sliding"), a.count_of("full")) == (1024, 10, 2)
    assert a.layer_kinds[5] == "full" and a.layer_kinds[11] == "full"


def test_gguf_per_layer_pattern_wins(tmp_path):
    f = tmp_path / "p.gguf"
    kv = _kv("llama", 4, {"attention.sliding_window": (U32, 256),
                          "attention.sliding_window_pattern": (ARRAY, (U32, [1, 0, 0, 1]))})
    f.write_bytes(gguf_bytes(kv))
    assert read_gguf(f).arch.layer_pattern == "SFFS"


def test_qwen3next_gguf_reads_its_gated_deltanet_state(tmp_path):
    """llama.cpp's qwen3next keys: ssm.conv_kernel 4, ssm.state_size 128 (key head dim), ssm.group_count 16 (key
    heads), ssm.time_step_rank 32 (value heads), ssm.inner_size 4096 (value heads x 128), full_attention_interval 4."""
    f = tmp_path / "q.gguf"
    kv = _kv("qwen3next", 8, {"ssm.conv_kernel": (U32, 4), "ssm.state_size": (U32, 128), "ssm.group_count": (U32, 16),
                               "ssm.time_step_rank": (U32, 32), "ssm.inner_size": (U32, 4096),
                               "full_attention_interval": (U32, 4)})
    f.write_bytes(gguf_bytes(kv))
    a = read_gguf(f).arch
    assert a.layer_pattern == "LLLF" and a.linear_kind == "gated-deltanet"
    assert (a.linear_k_heads, a.linear_v_heads, a.linear_k_dim, a.linear_v_dim, a.linear_conv) == (16, 32, 128, 128, 4)


def test_hybrid_gguf_marks_layers_without_kv_heads_recurrent(tmp_path):
    """Mamba-2 hybrids (nemotron_h, granitehybrid) give head_count_kv per layer, 0 where the layer is recurrent."""
    f = tmp_path / "h.gguf"
    kv = _kv("nemotron_h", 4, {"attention.head_count_kv": (ARRAY, (U32, [0, 2, 0, 0])), "ssm.conv_kernel": (U32, 4),
                                "ssm.state_size": (U32, 128), "ssm.group_count": (U32, 8),
                                "ssm.time_step_rank": (U32, 16), "ssm.inner_size": (U32, 1024)})
    f.write_bytes(gguf_bytes(kv))
    a = read_gguf(f).arch
    assert a.layer_pattern == "LFLL" and a.linear_kind == "mamba2" and a.kv_heads == 2
