"""RoPE implementations written the way users write them: correct ones, and deliberately wrong ones.

Each is a function ``fn(q, k, positions) -> (q_rot, k_rot)`` over ``(batch, heads, seq, head_dim)``
tensors, the call form ``posenc_ref.testing.assert_rope_equal`` checks. They are independent of
posenc_ref's own rotation on purpose: plain float32 arithmetic, as in most code in the wild, so
that the conformance kit is tested against what it will meet.

- ``user_rope``: a typical float32 implementation (frequencies ``1 / base ** (2i/d)`` in float32,
  angles as a float32 product, cos/sin tables, rotation in the input dtype), with one switch per
  classic bug; every switch off is a correct implementation of either layout.
- ``meta_style``: the complex-number rotation of Meta's Llama code (interleaved pairs), written
  here from the math.
- ``hf_rope``: HF transformers' own ``LlamaRotaryEmbedding`` + ``apply_rotary_pos_emb`` (GPT-NeoX's
  for partial rotary), built from a ``rope_parameters`` dict.
"""

from __future__ import annotations

import torch

F32 = torch.float32


def plain_inv_freq(dim: int, base: float, *, from_one: bool = False) -> torch.Tensor:
    """``1 / base ** (2i / dim)`` in float32, the way most code writes it."""
    i = torch.arange(0, dim, 2, dtype=F32)
    if from_one:
        i = i + 2  # the bug: an index that starts at 1
    return 1.0 / (base ** (i / dim))


def user_rope(
    head_dim: int,
    base: float = 10000.0,
    layout: str = "half",
    *,
    rotary_dim: int | None = None,
    inv_freq: torch.Tensor | None = None,
    attention_factor: float = 1.0,
    # bugs, all off by default
    table_layout: str | None = None,
    position_shift: int = 0,
    ignore_positions: bool = False,
    negative_angle: bool = False,
    from_one: bool = False,
    frequency_width: int | None = None,
    positions_dtype: torch.dtype = F32,
    inv_freq_dtype: torch.dtype = F32,
    angle_dtype: torch.dtype = F32,
    table_dtype: torch.dtype | None = None,
    no_rotation: bool = False,
    rotate_everything: bool = False,
    float64_angles: bool = False,
):
    """A float32 RoPE in the given layout; each keyword after the first five is one classic bug.

    ``inv_freq`` overrides the frequencies (for scaled references); ``table_layout`` builds the
    cos/sin table for the other layout than the rotation; ``position_shift`` adds to every
    position; ``ignore_positions`` uses ``0 .. seq_len - 1`` whatever positions arrive;
    ``negative_angle`` rotates the other way; ``from_one`` indexes the frequencies from 1;
    ``frequency_width`` computes them over another width; the dtypes hold positions, frequencies,
    angles or tables in low precision; ``no_rotation`` returns the input; ``rotate_everything``
    ignores ``rotary_dim``; ``float64_angles`` is the exact variant (not a bug).
    """
    rotary = head_dim if (rotary_dim is None or rotate_everything) else rotary_dim
    if inv_freq is None and float64_angles:  # the exact variant: frequencies in float64 too
        width = frequency_width or rotary
        inv_freq = base ** (-torch.arange(0, width, 2, dtype=torch.float64) / width)
    if inv_freq is None:
        inv_freq = plain_inv_freq(frequency_width or rotary, base, from_one=from_one)
    inv_freq = inv_freq[: rotary // 2]
    freqs = inv_freq.to(F32).to(inv_freq_dtype)
    table_layout = table_layout or layout

    def fn(q, k, positions):
        if ignore_positions:
            positions = torch.arange(positions.numel())
        pos = (positions + position_shift).to(positions_dtype)
        if float64_angles:
            angles = pos.double()[:, None] * inv_freq.double()[None, :]
        else:
            angles = (pos.to(F32)[:, None] * freqs.to(F32)[None, :]).to(angle_dtype).to(F32)
        if negative_angle:
            angles = -angles
        if table_layout == "half":
            emb = torch.cat([angles, angles], dim=-1)  # HF: cat(freqs, freqs)
        else:
            emb = angles.repeat_interleave(2, dim=-1)  # each frequency twice in a row
        cos = (emb.cos() * attention_factor).to(F32)
        sin = (emb.sin() * attention_factor).to(F32)
        if table_dtype is not None:
            cos, sin = cos.to(table_dtype), sin.to(table_dtype)

        def rotate(x):
            if no_rotation:
                return x.clone()
            x_rot, x_pass = x[..., :rotary], x[..., rotary:]
            if layout == "half":
                half = rotary // 2
                partner = torch.cat([-x_rot[..., half:], x_rot[..., :half]], dim=-1)
            else:
                even, odd = x_rot[..., 0::2], x_rot[..., 1::2]
                partner = torch.stack([-odd, even], dim=-1).flatten(-2)
            out = x_rot * cos.to(x.dtype) + partner * sin.to(x.dtype)
            return torch.cat([out, x_pass], dim=-1)

        return rotate(q), rotate(k)

    return fn


def meta_style(head_dim: int, base: float = 10000.0, inv_freq: torch.Tensor | None = None):
    """Interleaved pairs as complex numbers, one complex64 multiplication (Meta's approach)."""
    freqs = plain_inv_freq(head_dim, base) if inv_freq is None else inv_freq.to(F32)

    def fn(q, k, positions):
        angles = torch.outer(positions.to(F32), freqs)  # (seq, d/2)
        rotation = torch.polar(torch.ones_like(angles), angles)  # e^{i m w}, complex64

        def rotate(x):
            pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(pairs * rotation).flatten(-2).to(x.dtype)

        return rotate(q), rotate(k)

    return fn


def hf_rope(head_dim: int, base: float, max_position_embeddings: int = 4096, **rope_parameters):
    """HF transformers' rotation, built from ``rope_parameters``; half layout.

    GPT-NeoX's classes: the same ``rotate_half`` rotation and shared scaling functions as Llama's,
    and they honour ``partial_rotary_factor`` (Llama's default initialiser ignores it). NeoX's
    config defaults it to 0.25: here it defaults to 1 (the whole head).
    """
    rope_parameters.setdefault("partial_rotary_factor", 1.0)
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox.modeling_gpt_neox import (
        GPTNeoXRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    config = GPTNeoXConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_theta": base, **rope_parameters},
    )
    rotary = GPTNeoXRotaryEmbedding(config)

    def fn(q, k, positions):
        cos, sin = rotary(q, positions[None])  # (1, seq, rotary_dim) in q's dtype
        return apply_rotary_pos_emb(q, k, cos, sin)

    return fn


def hf_family_rope(config: dict):
    """HF transformers' rotation for a released config, through the family's own classes.

    ``config`` is a config.json dict; the family's ``*RotaryEmbedding`` builds cos/sin and its
    ``apply_rotary_pos_emb`` rotates. Phi, StableLM and Phi-3 split off the rotary part in their
    attention module, not in ``apply_rotary_pos_emb``: the split is done here as they do it.
    """
    import importlib

    from transformers import AutoConfig

    model_type = config["model_type"]
    module = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    rotary_class = next(
        getattr(module, name) for name in dir(module) if name.endswith("RotaryEmbedding")
    )
    rotary = rotary_class(AutoConfig.for_model(**config))
    apply = module.apply_rotary_pos_emb
    splits_in_attention = model_type in ("phi", "stablelm", "phi3")

    def fn(q, k, positions):
        cos, sin = rotary(q, positions[None])
        width = cos.shape[-1]
        if splits_in_attention and width < q.shape[-1]:
            q_rot, k_rot = apply(q[..., :width], k[..., :width], cos, sin)
            return (
                torch.cat([q_rot, q[..., width:]], dim=-1),
                torch.cat([k_rot, k[..., width:]], dim=-1),
            )
        return apply(q, k, cos, sin)

    return fn
