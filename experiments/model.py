"""A tiny decoder-only transformer whose position encoding is one of ten, from posenc_ref.

Pre-norm blocks (LayerNorm, causal multi-head attention, a 4x GELU MLP), learned token
embeddings and an untied output layer: plain PyTorch. What differs between encodings is only
where position enters:

- added to the token embeddings: ``sinusoidal`` (:func:`posenc_ref.sinusoidal`, fixed) and
  ``learned`` (:class:`posenc_ref.LearnedPositionalEmbedding` with ``8 * L0`` rows);
- added to the attention logits: ``t5`` (:func:`posenc_ref.t5_relative_bucket`, one learned
  scalar per bucket and head, shared by the layers), ``alibi`` (:func:`posenc_ref.alibi_bias`),
  ``kerple`` (:func:`posenc_ref.kerple_log_bias`, two learned scalars per head and layer) and
  ``fire`` (:func:`posenc_ref.fire_bias`, a learned MLP per layer);
- applied to queries and keys: ``rope`` (:func:`posenc_ref.rope_cos_sin`), ``p-rope``
  (:func:`posenc_ref.beyond_rope.p_rope`) and ``xpos``
  (:func:`posenc_ref.beyond_rope.xpos_cos_sin`), all rotated by :func:`posenc_ref.apply_rope`;
- nowhere: ``nope``.

The rotary ones can be evaluated with a context-extension method for a factor :math:`s`
(``"pi"``, ``"ntk"``, ``"yarn"`` from :mod:`posenc_ref.rope_scaling`, and ``"yarn-t1"``: YaRN's
frequencies with its attention factor left at 1); the method only replaces the frequencies (and
YaRN's attention factor), never the weights. xPos can also be evaluated with ``"blockwise"``, its
paper's blockwise causal attention (:func:`blockwise_causal_mask`), and any encoding with
``"logscale"``: each query multiplied by :func:`posenc_ref.query_scale.log_length_scale`, a logit
temperature that grows with the number of keys past L0.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from posenc_ref import (
    FireWeights,
    LearnedPositionalEmbedding,
    alibi_bias,
    apply_rope,
    fire_bias,
    inv_freq,
    kerple_log_bias,
    relative_positions,
    rope_cos_sin,
    rope_scaling,
    sinusoidal,
    t5_relative_bucket,
)
from posenc_ref.beyond_rope import p_rope, xpos_cos_sin
from posenc_ref.query_scale import log_length_scale

ENCODINGS = (
    "sinusoidal", "learned", "t5", "alibi", "kerple", "fire", "rope", "nope", "p-rope", "xpos",
)  # fmt: skip
ROTARY = ("rope", "p-rope", "xpos")
BIASED = ("t5", "alibi", "kerple", "fire")
SCALINGS = ("none", "pi", "ntk", "yarn", "yarn-t1")
METHODS = (*SCALINGS, "blockwise", "logscale")
KERPLE_MIN = 0.01  # KERPLE's reference code clamps both parameters to at least this after a step


def rotary_frequencies(
    head_dim: int, base: float, method: str, factor: float, train_len: int
) -> tuple[torch.Tensor, float]:
    """``(inv_freq, attention_factor)`` for a context-extension method at factor ``s``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method in ("none", "blockwise", "logscale") or factor == 1.0:
        return inv_freq(head_dim, base), 1.0
    if method == "pi":
        scaled = rope_scaling.linear(head_dim, base, factor=factor)
    elif method == "ntk":
        scaled = rope_scaling.ntk_aware(head_dim, base, factor=factor)
    else:  # yarn, yarn-t1
        scaled = rope_scaling.yarn(head_dim, base, factor=factor, original_max_len=train_len)
    attention = scaled.attention_factor if method != "yarn-t1" else 1.0
    return scaled.inv_freq, attention


def blockwise_causal_mask(length: int, block: int) -> torch.Tensor:
    """``(length, length)`` additive mask: a query sees its own block and the one before, causally.

    Sun et al. (2022)'s blockwise causal attention: the sequence is cut into blocks of ``block``
    tokens, and a query in block :math:`b` attends to the keys of blocks :math:`b - 1` and
    :math:`b` up to itself, so it sees between ``block`` and ``2 * block - 1`` earlier tokens
    (fewer in the first block).
    """
    index = torch.arange(length)
    query_block, key_block = index[:, None] // block, index[None, :] // block
    seen = (index[None, :] <= index[:, None]) & (key_block >= query_block - 1)
    return torch.zeros(length, length).masked_fill(~seen, float("-inf"))


class Block(nn.Module):
    """Pre-norm attention and MLP; ``position`` supplies the logit bias or the rotation tables."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, position: dict, bias: torch.Tensor | None) -> torch.Tensor:
        """``(batch, length, dim)`` -> same shape; ``bias`` ``(H, L, L)`` with ``-inf`` masked."""
        batch, length, dim = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, length, 3, self.heads, dim // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, L, head_dim)
        if "q_tables" in position:  # rotary: xPos has different query and key tables
            q = apply_rope(q, *position["q_tables"])
            k = apply_rope(k, *position["k_tables"])
        if "q_scale" in position:  # a logit temperature per query position, (L,)
            q = q * position["q_scale"][:, None]
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
        fire_width: int = 32,
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
        elif encoding == "kerple":  # r1, r2 per head and layer, drawn as the reference code does
            self.kerple = nn.Parameter(torch.rand(layers, 2, heads) * torch.tensor([[2.0], [1.0]]))
        elif encoding == "fire":  # one MLP 1 -> width -> heads per layer
            self.fire = nn.ModuleList(
                nn.Sequential(nn.Linear(1, fire_width), nn.ReLU(), nn.Linear(fire_width, heads))
                for _ in range(layers)
            )
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def clamp_(self) -> None:
        """Keep KERPLE's parameters positive, as its reference code does after each step."""
        if self.encoding == "kerple":
            with torch.no_grad():
                self.kerple.clamp_(min=KERPLE_MIN)

    def _biases(self, length: int, mask: torch.Tensor | None) -> list[torch.Tensor | None]:
        """The ``(H, L, L)`` logit bias of each layer (``None``: plain causal attention)."""
        layers = len(self.blocks)
        if self.encoding == "t5":
            rel = relative_positions(length, length)  # key - query
            # Causal buckets (past only); max_distance = L0: the trained distances reach the last
            # bucket (T5 itself trains on 512 tokens with max_distance 128).
            buckets = t5_relative_bucket(
                rel, bidirectional=False, num_buckets=self.t5_buckets, max_distance=self.train_len
            )
            bias = self.t5_bias[buckets].permute(2, 0, 1)  # (H, L, L)
            return [bias.masked_fill(rel > 0, float("-inf"))] * layers
        if self.encoding == "alibi":
            return [alibi_bias(self.heads, length, length)] * layers
        if self.encoding == "kerple":
            return [kerple_log_bias(r1, r2, length, length) for r1, r2 in self.kerple]
        if self.encoding == "fire":
            biases = []
            for mlp in self.fire:
                first, last = mlp[0], mlp[2]
                # FIRE's threshold L = L0: inside the training range the normaliser is constant.
                weights = FireWeights(
                    first.weight, first.bias, last.weight, last.bias, threshold=self.train_len
                )
                biases.append(fire_bias(weights, length, length))
            return biases
        return [mask] * layers

    def _rotations(self, length: int, method: str, factor: float) -> dict:
        """The rotation tables every block uses for a sequence of ``length``."""
        if self.encoding not in ROTARY:
            return {}
        omega, attention = rotary_frequencies(
            self.head_dim, self.base, method, factor, self.train_len
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

    def forward(
        self, tokens: torch.Tensor, *, method: str = "none", factor: float = 1.0
    ) -> torch.Tensor:
        r"""``(batch, length)`` token ids -> ``(batch, length, vocab)`` logits.

        ``method`` (one of :data:`METHODS`) at ``factor`` :math:`s \ge 1`, fixed for the whole
        sequence (so that a prefix gets the same logits as in the whole sequence).
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if method == "blockwise" and self.encoding != "xpos":
            raise ValueError(f"method 'blockwise' applies to 'xpos', not {self.encoding!r}")
        if method in SCALINGS[1:] and self.encoding not in ROTARY:
            raise ValueError(f"method {method!r} applies to {ROTARY}, not {self.encoding!r}")
        if not factor >= 1.0:
            raise ValueError(f"factor must be >= 1, got {factor}")
        length = tokens.shape[1]
        x = self.embed(tokens)
        if self.encoding == "sinusoidal":
            x = x + self.table[:length]
        elif self.encoding == "learned":
            x = self.learned(x)
        # Sun et al.'s blocks are half the training length: a query sees L0/2 to L0 - 1 tokens.
        mask = blockwise_causal_mask(length, self.train_len // 2) if method == "blockwise" else None
        rotations = self._rotations(length, method, factor)
        if method == "logscale":
            scale = log_length_scale(torch.arange(length), self.train_len)
            rotations = {**rotations, "q_scale": scale.to(x.dtype)}
        for block, bias in zip(self.blocks, self._biases(length, mask), strict=True):
            x = block(x, rotations, bias)
        return self.head(self.norm(x))
