"""A small decoder-only transformer built in code (GPT-2 style, pre-norm, tied embeddings): no downloads."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TinyGptConfig:
    """Shape of the probe's model."""

    vocab: int = 8192
    hidden: int = 256
    layers: int = 4
    heads: int = 4
    seq_len: int = 128

    @property
    def ffn(self) -> int:
        return 4 * self.hidden

    def param_count(self) -> int:
        """Exact trainable parameters: tied embedding + positions, per layer 2 LN, attention, MLP, final LN."""
        h, f = self.hidden, self.ffn
        per_layer = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h)
        return self.vocab * h + self.seq_len * h + self.layers * per_layer + 2 * h


def build_model(torch, cfg: TinyGptConfig):
    """Return an ``nn.Module`` mapping token ids (B, T) to logits (B, T, vocab)."""
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(cfg.hidden)
            self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
            self.proj = nn.Linear(cfg.hidden, cfg.hidden)
            self.ln2 = nn.LayerNorm(cfg.hidden)
            self.up = nn.Linear(cfg.hidden, cfg.ffn)
            self.down = nn.Linear(cfg.ffn, cfg.hidden)

        def forward(self, x):
            b, t, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
            shape = (b, t, cfg.heads, h // cfg.heads)
            q, k, v = (z.view(shape).transpose(1, 2) for z in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, h))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class TinyGpt(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab, cfg.hidden)
            self.pos = nn.Embedding(cfg.seq_len, cfg.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.layers))
            self.ln_f = nn.LayerNorm(cfg.hidden)

        def forward(self, idx):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.tok(idx) + self.pos(pos)
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x) @ self.tok.weight.t()  # tied output head

    if cfg.hidden % cfg.heads:
        raise ValueError("hidden must be a multiple of heads")
    return TinyGpt()
