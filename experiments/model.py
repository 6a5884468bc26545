"""A tiny decoder-only transformer whose position encoding is one of eight, from posenc_ref.

Pre-norm blocks (LayerNorm, causal multi-head attention, a 4x GELU MLP), learned token
embeddings and an untied output layer: plain PyTorch. What differs between encodings is only
where position enters:

- added to the token embeddings: ``sinusoidal`` (:func:`posenc_ref.sinusoidal`, fixed) and
  ``learned`` (:class:`posenc_ref.LearnedPositionalEmbedding` with ``8 * L0`` rows);
- added to the attention logits: ``t5`` (:func:`posenc_ref.t5_relative_bucket`, one learned
  scalar per bucket and head, shared by the layers) and ``alibi`` (:func:`posenc_ref.alibi_bias`);
- applied to queries and keys: ``rope`` (:func:`posenc_ref.rope_cos_sin`), ``p-rope``
  (:func:`posenc_ref.beyond_rope.p_rope`) and ``xpos``
  (:func:`posenc_ref.beyond_rope.xpos_cos_sin`), all rotated by :func:`posenc_ref.apply_rope`;
- nowhere: ``nope``.

The rotary ones can be evaluated with a context-extension method (``"pi"``, ``"ntk"``,
``"yarn"`` from :mod:`posenc_ref.rope_scaling`) for a factor :math:`s = L / L_0`; the method only
replaces the frequencies (and YaRN's attention factor), never the weights.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from posenc_ref import (
    LearnedPositionalEmbedding,
    alibi_bias,
    apply_rope,
    inv_freq,
    relative_positions,
    rope_cos_sin,
    rope_scaling,
    sinusoidal,
    t5_relative_bucket,
)
from posenc_ref.beyond_rope import p_rope, xpos_cos_sin

ENCODINGS = ("sinusoidal", "learned", "t5", "alibi", "rope", "nope", "p-rope", "xpos")
ROTARY = ("rope", "p-rope", "xpos")
SCALINGS = ("none", "pi", "ntk", "yarn")


def rotary_frequencies(
    head_dim: int, base: float, scaling: str, factor: float, train_len: int
) -> tuple[torch.Tensor, float]:
    """``(inv_freq, attention_factor)`` for a context-extension method at factor ``s``."""
    if scaling == "none" or factor == 1.0:
        return inv_freq(head_dim, base), 1.0
    if scaling == "pi":
        scaled = rope_scaling.linear(head_dim, base, factor=factor)
    elif scaling == "ntk":
        scaled = rope_scaling.ntk_aware(head_dim, base, factor=factor)
    elif scaling == "yarn":
        scaled = rope_scaling.yarn(head_dim, base, factor=factor, original_max_len=train_len)
    else:
        raise ValueError(f"scaling must be one of {SCALINGS}, got {scaling!r}")
    return scaled.inv_freq, scaled.attention_factor


class Block(nn.Module):
    """Pre-norm attention and MLP; ``position`` supplies the logit bias or the rotation tables."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, position: dict) -> torch.Tensor:
        """``(batch, length, dim)`` -> same shape."""
        batch, length, dim = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, L, head_dim)
        if "q_tables" in position:  # rotary: xPos has different query and key tables
            q = apply_rope(q, *position["q_tables"])
            k = apply_rope(k, *position["k_tables"])
        bias = position.get("bias")  # (H, L, L) with -inf above the diagonal, or None
        attn = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=bias is None)
        x = x + self.out(attn.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """``vocab`` tokens in, next-token logits out; ``encoding`` is one of :data:`ENCODINGS`."""

    def __init__(
        self,
        encoding: str,
        *,
        vocab: int,
        dim: int,
        heads: int,
        layers: int,
        train_len: int,
        base: float = 10000.0,
        p_fraction: float = 0.25,
        xpos_scale_base: float = 512.0,
        t5_buckets: int = 32,
    ) -> None:
        super().__init__()
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
        self.encoding, self.heads, self.train_len = encoding, heads, train_len
        self.head_dim, self.base = dim // heads, base
        self.p_fraction, self.xpos_scale_base = p_fraction, xpos_scale_base
        self.t5_buckets = t5_buckets
        self.embed = nn.Embedding(vocab, dim)
        if encoding == "sinusoidal":  # fixed table, 8 * L0 rows (never more is asked for)
            table = sinusoidal(8 * train_len, dim).float()
            self.register_buffer("table", table, persistent=False)
        elif encoding == "learned":  # rows past L0 exist but receive no gradient
            self.learned = LearnedPositionalEmbedding(8 * train_len, dim, dropout=0.0)
        elif encoding == "t5":  # one scalar per (bucket, head), shared by every layer
            if not t5_buckets // 2 < train_len:
                raise ValueError(
                    f"t5_buckets must be < 2 * train_len (T5's exact buckets are half of them, "
                    f"and max_distance is train_len), got {t5_buckets} for {train_len}"
                )
            self.t5_bias = nn.Parameter(torch.zeros(t5_buckets, heads))
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def _position(self, length: int, scaling: str) -> dict:
        """The bias or rotation tables every block uses for a sequence of ``length``."""
        if self.encoding == "t5":
            rel = relative_positions(length, length)  # key - query
            # Causal buckets (past only); max_distance = L0: the trained distances reach the last
            # bucket (T5 itself trains on 512 tokens with max_distance 128).
            buckets = t5_relative_bucket(
                rel, bidirectional=False, num_buckets=self.t5_buckets, max_distance=self.train_len
            )
            bias = self.t5_bias[buckets].permute(2, 0, 1)  # (H, L, L)
            return {"bias": bias.masked_fill(rel > 0, float("-inf"))}
        if self.encoding == "alibi":
            return {"bias": alibi_bias(self.heads, length, length)}
        if self.encoding not in ROTARY:
            return {}
        factor = max(1.0, length / self.train_len)
        omega, attention = rotary_frequencies(
            self.head_dim, self.base, scaling, factor, self.train_len
        )
        if self.encoding == "p-rope":
            omega = p_rope(omega, self.p_fraction)
        positions = torch.arange(length)
        if self.encoding == "xpos":
            # Positions centred as in torchscale, so that neither factor under- or overflows.
            centred = positions - math.ceil(length / 2)
            common = {"scale_base": self.xpos_scale_base, "attention_factor": attention}
            return {
                "q_tables": xpos_cos_sin(centred, omega, key=False, **common),
                "k_tables": xpos_cos_sin(centred, omega, key=True, **common),
            }
        tables = rope_cos_sin(positions, omega, attention_factor=attention)
        return {"q_tables": tables, "k_tables": tables}

    def forward(self, tokens: torch.Tensor, *, scaling: str = "none") -> torch.Tensor:
        """``(batch, length)`` token ids -> ``(batch, length, vocab)`` logits."""
        if scaling != "none" and self.encoding not in ROTARY:
            raise ValueError(f"scaling {scaling!r} applies to {ROTARY}, not {self.encoding!r}")
        length = tokens.shape[1]
        x = self.embed(tokens)
        if self.encoding == "sinusoidal":
            x = x + self.table[:length]
        elif self.encoding == "learned":
            x = self.learned(x)
        position = self._position(length, scaling)
        for block in self.blocks:
            x = block(x, position)
        return self.head(self.norm(x))
