"""RoPE as engines ship it, written here from the facts of their code (never their code).

Each function or class below follows one public implementation's call, table and dtypes: what it
is called with (flattened tokens and per-token positions, a start position, a patch grid), how
long its table is and in which dtype it is kept, in which order its formula's branches are
tested. Each takes a ``bug`` keyword naming a mistake engines have shipped, planted the way it
would be made in that code; ``bug=None`` is the implementation as it stands. The kit's tests
(tests/test_testing_engines.py) check that every one passes and that every planted bug is named.

- :class:`VllmRotary` and its subclasses :class:`VllmLlama3`, :class:`VllmYarn`: vLLM's
  ``RotaryEmbedding`` (a float32 cos/sin cache of ``max_position_embeddings`` rows, cast to
  the model's dtype, ``forward(positions, query, key)`` on flattened tokens), Llama 3's
  frequencies in vLLM's branch order, YaRN's cache of ``original x factor`` rows with the
  attention factor multiplied in before the cast;
- :class:`VllmLongRope`: vLLM's Phi-3 LongRoPE, short and long caches stacked, the choice made
  once from ``max_model_len``;
- :class:`VllmMRope`: vLLM's M-RoPE, ``(3, num_tokens)`` positions, sections taken
  consecutively (``mrope_interleaved`` for Qwen3-VL's rule);
- :func:`meta_rope`: Meta's Llama ``precompute_freqs_cis`` and complex multiply, called with a
  start position on ``(batch, seq_len, heads, head_dim)``;
- :func:`tinygrad_rope`: tinygrad's llama, a ``(1, 2 * max_context, 1, d/2, 2)`` cos/sin table
  in float16 by default, sliced at the start position, with its own asserts;
- :func:`lucidrains_rope`: rotary-embedding-torch (installed: its own code runs);
- :func:`neox_rope`: GPT-NeoX's Megatron rotary, ``(seq, batch, heads, head_dim)``, the table
  made in ``inv_freq``'s dtype (half under fp16 training);
- :func:`pixtral_mistral_rope`: mistral-inference's Pixtral 2-D RoPE, a complex table over
  (row, column), interleaved pairs.
"""

from __future__ import annotations

import math

import torch

F32, F16 = torch.float32, torch.float16


def _plain_inv_freq(rotary_dim: int, base: float) -> torch.Tensor:
    return 1.0 / (base ** (torch.arange(0, rotary_dim, 2, dtype=F32) / rotary_dim))


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, neox: bool) -> torch.Tensor:
    """VLLM's rotation of ``x`` (..., rotary_dim) by per-pair cos, sin, in x's dtype."""
    cos, sin = cos.unsqueeze(-2).to(x.dtype), sin.unsqueeze(-2).to(x.dtype)  # over the heads
    if neox:
        x1, x2 = torch.chunk(x, 2, dim=-1)
    else:
        x1, x2 = x[..., ::2], x[..., 1::2]
    o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    return torch.cat((o1, o2), -1) if neox else torch.stack((o1, o2), -1).flatten(-2)


class VllmRotary(torch.nn.Module):
    """vLLM's base class: ``forward(positions, query, key)``, query ``(tokens, heads * d)``.

    The cache has one row per position ``0 .. max_position_embeddings - 1``: cos then sin, each
    ``rotary_dim / 2`` wide, computed in float32 and cast to ``dtype`` (the model's). At a call
    it is cast to the activations' dtype. ``bug="first_head"`` cuts the rotary part off the
    flattened row before the heads are split: only head 0 turns.
    """

    def __init__(self, head_size, rotary_dim, max_position_embeddings, base, is_neox_style,
                 dtype, bug=None):  # fmt: skip
        super().__init__()
        self.head_size, self.rotary_dim, self.base = head_size, rotary_dim, base
        self.max_position_embeddings, self.is_neox_style, self.bug = (
            max_position_embeddings, is_neox_style, bug)  # fmt: skip
        self.register_buffer("cos_sin_cache", self._cache().to(dtype), persistent=False)

    def _inv_freq(self) -> torch.Tensor:
        return _plain_inv_freq(self.rotary_dim, self.base)

    def _cache(self) -> torch.Tensor:
        t = torch.arange(self.max_position_embeddings, dtype=F32)
        freqs = torch.einsum("i,j->ij", t, self._inv_freq())
        return torch.cat((freqs.cos(), freqs.sin()), dim=-1)

    def forward(self, positions, query, key):
        cache = self.cos_sin_cache.to(query.dtype)  # matched to the activations' dtype
        cos, sin = cache.index_select(0, positions.flatten()).chunk(2, dim=-1)
        return self._apply(query, cos, sin), self._apply(key, cos, sin)

    def _apply(self, x, cos, sin):
        shape, r = x.shape, self.rotary_dim
        if self.bug == "first_head":  # the rotary part cut off the flat row: head 0 only
            return torch.cat((_rotate(x[:, None, :r], cos, sin, self.is_neox_style)[:, 0],
                              x[:, r:]), -1)  # fmt: skip
        x = x.view(shape[0], -1, self.head_size)
        out = torch.cat((_rotate(x[..., :r], cos, sin, self.is_neox_style), x[..., r:]), -1)
        return out.reshape(shape)


class VllmLlama3(VllmRotary):
    """vLLM's Llama 3 frequencies, its branches tested high-frequency first.

    ``bug="swapped"``: ``low_freq_factor`` and ``high_freq_factor`` exchanged; ``bug="pairs"``:
    the outer branches exchanged (the fast pairs divided by the factor, the slow ones kept).
    """

    def __init__(self, *args, factor=8.0, low=1.0, high=4.0, original=8192, bug=None, **kw):
        if bug == "swapped":
            low, high = high, low
        self.factor, self.low, self.high, self.original = factor, low, high, original
        super().__init__(*args, bug=bug, **kw)

    def _inv_freq(self):
        plain = super()._inv_freq()
        wavelength = 2 * math.pi / plain
        smooth = (self.original / wavelength - self.low) / (self.high - self.low)
        kept, divided = plain, plain / self.factor
        if self.bug == "pairs":  # the outer branches exchanged, and the blend with them
            kept, divided = divided, kept
        blend = (1 - smooth) * divided + smooth * kept
        return torch.where(
            wavelength < self.original / self.high,
            kept,
            torch.where(wavelength > self.original / self.low, divided, blend),
        )


class VllmYarn(VllmRotary):
    """vLLM's YaRN: a cache of ``original x factor`` rows with the attention factor in it.

    Cos and sin are multiplied by the attention factor in
    float32, then cast to the model's dtype (``bug="float16"``: a float16 model serving float32
    activations, where the cast keeps the rounded values).
    """

    def __init__(self, head_size, rotary_dim, original, base, is_neox_style, dtype, *, factor,
                 attention_factor, beta_fast=32, beta_slow=1, bug=None):  # fmt: skip
        self.factor, self.mscale = factor, attention_factor
        self.beta_fast, self.beta_slow, self.original = beta_fast, beta_slow, original
        dtype = F16 if bug == "float16" else dtype
        super().__init__(head_size, rotary_dim, int(original * factor), base, is_neox_style,
                         dtype, bug=bug)  # fmt: skip

    def _inv_freq(self):
        d, base = self.rotary_dim, self.base

        def edge(turns):  # the pair whose wavelength fits `turns` times in the original context
            return d * math.log(self.original / (turns * 2 * math.pi)) / (2 * math.log(base))

        low = max(math.floor(edge(self.beta_fast)), 0)
        high = min(math.ceil(edge(self.beta_slow)), d - 1)
        ramp = ((torch.arange(d // 2, dtype=F32) - low) / max(high - low, 0.001)).clamp(0, 1)
        keep = 1 - ramp  # 1: extrapolate (the plain frequency), 0: interpolate
        plain = _plain_inv_freq(d, base)
        return plain / self.factor * (1 - keep) + plain * keep

    def _cache(self):
        cache = super()._cache()
        return cache * self.mscale  # before the cast to the model's dtype


class VllmLongRope(torch.nn.Module):
    """vLLM's Phi-3 LongRoPE: a short cache (original rows) and a long one, stacked.

    The long
    factors are chosen once, when ``max_model_len`` exceeds the original context, and then a
    position p reads row ``original + p``.
    """

    def __init__(self, head_size, rotary_dim, max_position_embeddings, original, base,
                 short_factor, long_factor, attention_factor, max_model_len):  # fmt: skip
        super().__init__()
        self.head_size, self.rotary_dim, self.original = head_size, rotary_dim, original
        self.use_long = max_model_len > original

        def cache(rows, factors):
            inv = 1.0 / (torch.tensor(factors, dtype=F32) * base
                         ** (torch.arange(0, rotary_dim, 2, dtype=F32) / rotary_dim))  # fmt: skip
            freqs = torch.einsum("i,j->ij", torch.arange(rows, dtype=F32), inv)
            return torch.cat((freqs.cos(), freqs.sin()), -1) * attention_factor

        self.register_buffer("cache", torch.cat((cache(original, short_factor),
                                                 cache(max_position_embeddings, long_factor))),
                             persistent=False)  # fmt: skip

    def forward(self, positions, query, key):
        index = positions + self.original if self.use_long else positions
        cos, sin = self.cache.index_select(0, index).chunk(2, dim=-1)
        out = []
        for x in (query, key):
            x = x.view(x.shape[0], -1, self.head_size)
            r = self.rotary_dim
            rotated = _rotate(x[..., :r], cos, sin, neox=True)
            out.append(torch.cat((rotated, x[..., r:]), -1).flatten(-2))
        return out[0], out[1]


class VllmMRope(VllmRotary):
    """vLLM's M-RoPE: ``positions`` ``(3, tokens)``, each row indexing the cache.

    The pairs
    take their row's values by ``mrope_section`` (consecutively, or Qwen3-VL's interleaved way;
    ``bug="interleaved"`` takes the interleaved way on a consecutive model).
    """

    def __init__(self, *args, mrope_section, interleaved=False, bug=None, **kw):
        self.section, self.interleaved = list(mrope_section), interleaved or bug == "interleaved"
        super().__init__(*args, bug=bug, **kw)

    def forward(self, positions, query, key):
        cache = self.cos_sin_cache.to(query.dtype)
        if positions.dim() == 1:  # text only: the three rows are one
            positions = positions.expand(3, -1)
        cos, sin = cache[positions].chunk(2, dim=-1)  # (3, tokens, rotary_dim / 2)
        pairs = torch.arange(cos.shape[-1])
        if self.interleaved:  # pair i of row j where i % 3 == j, while row j has pairs left
            row = torch.zeros_like(pairs)
            for j in (1, 2):
                row[(pairs % 3 == j) & (pairs < 3 * self.section[j])] = j
        else:
            row = torch.repeat_interleave(torch.arange(3), torch.tensor(self.section))
        cos, sin = cos[row, :, pairs].T, sin[row, :, pairs].T  # (tokens, pairs)
        return self._apply(query, cos, sin), self._apply(key, cos, sin)


def meta_rope(head_dim, base, max_seq_len, bug=None):
    """Meta's Llama: ``freqs_cis`` of ``2 max_seq_len`` rows, complex64.

    ``fn(x, start_pos)`` on ``(batch, seq_len, heads, head_dim)``, the rows
    ``start_pos .. start_pos + seq_len - 1`` broadcast over the heads. ``bug="head_axis"``:
    given ``(batch, heads, seq_len, head_dim)`` (the kit's layout) without the transpose, so the
    rows it slices are for the heads.
    """
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(2 * max_seq_len), freqs).float()
    freqs_cis = torch.polar(torch.ones_like(angles), angles)

    def rotate(x, start_pos):  # x (batch, seq, heads, head_dim), as Meta's attention has it
        seqlen = x.shape[1]
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        table = freqs_cis[start_pos : start_pos + seqlen]
        assert table.shape == (pairs.shape[1], pairs.shape[-1])
        table = table.view(1, seqlen, 1, -1)
        return torch.view_as_real(pairs * table).flatten(3).type_as(x)

    def fn(x, offset):  # x (batch, heads, seq, head_dim), the kit's layout
        if bug == "head_axis":
            return rotate(x, offset)
        return rotate(x.transpose(1, 2), offset).transpose(1, 2)

    return fn


def tinygrad_rope(head_dim, base, max_context, dtype=F16, bug=None):
    """Tinygrad's llama: a ``(1, 2 max_context, 1, d/2, 2)`` table of (cos, sin).

    Cast to ``dtype`` (half by default), sliced at the start position (its slice asserts its
    bounds, with no message), multiplied as complex pairs. ``bug="swapped"``: the pair read as
    (sin, cos).
    """
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2)[: head_dim // 2] / head_dim))
    angles = torch.arange(2 * max_context).unsqueeze(1) * freqs.unsqueeze(0)
    table = torch.stack((angles.cos().to(dtype), angles.sin().to(dtype)), dim=-1)
    table = table.reshape(1, 2 * max_context, 1, head_dim // 2, 2)

    def fn(x, start_pos):  # x (batch, heads, seq, head_dim)
        x = x.transpose(1, 2)  # tinygrad's (batch, seq, heads, head_dim)
        seqlen = x.shape[1]
        assert 0 <= start_pos and start_pos + seqlen <= table.shape[1]
        part = table[:, start_pos : start_pos + seqlen].to(x.dtype)
        c, d = part[..., 0:1], part[..., 1:2]
        if bug == "swapped":  # the stacked pair read in the other order
            c, d = d, c
        pairs = x.reshape(*x.shape[:-1], -1, 2)
        a, b = pairs[..., 0:1], pairs[..., 1:2]
        out = torch.cat((a * c - b * d, a * d + b * c), dim=-1).flatten(3)
        return out.transpose(1, 2)

    return fn


def lucidrains_rope(head_dim, base, bug=None):
    """rotary-embedding-torch itself: ``rotate_queries_or_keys(x, offset=...)``.

    On ``(batch, heads, seq, head_dim)``. ``bug="theta"``: built with the default ``theta``
    (10000) for a model of another base.
    """
    from rotary_embedding_torch import RotaryEmbedding

    rotary = RotaryEmbedding(dim=head_dim, theta=10000.0 if bug == "theta" else base)
    return lambda x, offset: rotary.rotate_queries_or_keys(x, offset=offset)


def neox_rope(head_dim, base, bug=None):
    """GPT-NeoX's Megatron rotary: ``inv_freq`` a buffer, positions made in its dtype.

    The table ``cat(freqs, freqs)`` and ``rotate_half``, on ``(seq, batch, heads, head_dim)``.
    ``bug="fp16"``: the module cast to half for fp16 training, so positions, frequencies,
    their product and the table are all float16.
    """
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    if bug == "fp16":
        inv_freq = inv_freq.half()

    def fn(x, offset):  # x (batch, heads, seq, head_dim) -> NeoX's (seq, batch, heads, dim)
        x = x.permute(2, 0, 1, 3)
        t = torch.arange(offset + x.shape[0]).type_as(inv_freq)
        freqs = torch.einsum("i,j->ij", t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[offset:, None, None, :], emb.sin()[offset:, None, None, :]
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        out = x * cos.to(x.dtype) + rotated * sin.to(x.dtype)
        return out.permute(1, 2, 0, 3)

    return fn


def pixtral_mistral_rope(head_dim, base, max_side=32, bug=None):
    """mistral-inference's Pixtral: a complex table over (row, column), ``max_side`` each.

    The even-indexed frequencies on the row, the odd ones on the column; each patch, in
    row-major order, reads its (row, column) entry; interleaved pairs. ``bug="transposed"``:
    the patch grid made over (width, height).
    """
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    side = torch.arange(max_side)
    rows = torch.outer(side, freqs[::2]).float()
    cols = torch.outer(side, freqs[1::2]).float()
    angles = torch.cat([rows[:, None, :].repeat(1, max_side, 1),
                        cols[None, :, :].repeat(max_side, 1, 1)], dim=-1)  # fmt: skip
    table = torch.polar(torch.ones_like(angles), angles)  # (max_side, max_side, d/2)

    def fn(q, k, grid):
        height, width = grid
        sizes = (width, height) if bug == "transposed" else (height, width)
        mesh = torch.meshgrid(torch.arange(sizes[0]), torch.arange(sizes[1]), indexing="ij")
        positions = torch.stack(mesh, dim=-1).reshape(-1, 2)  # (patches, 2): row, column
        cis = table[positions[:, 0], positions[:, 1]]

        def rotate(x):
            pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(pairs * cis).flatten(-2).type_as(x)

        return rotate(q), rotate(k)

    return fn
