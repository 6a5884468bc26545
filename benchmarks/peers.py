"""The installed peers, called through their real functions (each is ``None`` when missing).

- HF transformers: ``LlamaRotaryEmbedding`` (default rope init and forward) for tables, and
  ``apply_rotary_pos_emb`` (the ``rotate_half`` formulation) for the rotation;
- torchtune: ``RotaryPositionalEmbeddings``, its module (table cached at construction);
- rotary-embedding-torch: ``apply_rotary_emb`` with angles precomputed by ``RotaryEmbedding``;
- on a GPU: liger-kernel's ``liger_rotary_pos_emb`` (Triton, HF's half layout and tables) and
  flash-attn's ``apply_rotary_emb`` (its rotary kernel; either layout, per-pair tables).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

__all__ = [
    "hf_rotary_cos_sin",
    "hf_apply_rotary_pos_emb",
    "torchtune_rope",
    "lucidrains_rope",
    "liger_rope",
    "flash_attn_rotary",
]


def hf_rotary_cos_sin(
    positions: torch.Tensor, dim: int, base: float, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """HF's cos and sin tables, half layout, ``(seq_len, dim)`` each; ``None`` without HF.

    Built the way a Llama model builds them: ``LlamaRotaryEmbedding(config)`` with the default
    rope type, then its forward on ``position_ids``; the tables come back in ``dtype`` (HF casts
    them to the activations' dtype).
    """
    try:
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
    except ImportError:
        return None
    config = LlamaConfig(
        hidden_size=dim,
        num_attention_heads=1,
        head_dim=dim,
        max_position_embeddings=max(int(positions.max()) + 1, 1),
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    rotary = LlamaRotaryEmbedding(config)
    probe = torch.empty(0, dtype=dtype, device=positions.device)  # only its dtype/device are read
    cos, sin = rotary(probe, positions.unsqueeze(0))  # (1, L, dim) each
    return cos[0], sin[0]


def hf_apply_rotary_pos_emb() -> Callable | None:
    """HF's ``apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1)``, or ``None``."""
    try:
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    except ImportError:
        return None
    return apply_rotary_pos_emb


def torchtune_rope(dim: int, max_seq_len: int, base: float, device: torch.device):
    """Return torchtune's ``RotaryPositionalEmbeddings`` (input ``[b, s, h, d]``), or ``None``."""
    # torchtune imports torchao, which logs a warning about Triton on machines without it.
    logging.getLogger("torchao").setLevel(logging.ERROR)
    try:
        from torchtune.modules import RotaryPositionalEmbeddings
    except ImportError:
        return None
    return RotaryPositionalEmbeddings(dim, max_seq_len=max_seq_len, base=base).to(device)


def lucidrains_rope(dim: int, seq_len: int, base: float, device: torch.device):
    """rotary-embedding-torch: ``(apply_rotary_emb, angles)`` with angles ``(seq_len, dim)``.

    ``apply_rotary_emb(angles, x)`` takes the angles (each frequency twice, interleaved) and
    computes their cos and sin on every call; that is this library's design, so it is timed.
    Returns ``None`` when the library is missing.
    """
    try:
        from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb
    except ImportError:
        return None
    rotary = RotaryEmbedding(dim=dim, theta=base).to(device)
    angles = rotary(torch.arange(seq_len, device=device, dtype=torch.float32))  # (L, dim)
    return apply_rotary_emb, angles


def liger_rope() -> Callable | None:
    """liger-kernel's ``liger_rotary_pos_emb(q, k, cos, sin)`` (CUDA only), or ``None``.

    Takes q and k as ``(batch, heads, seq_len, head_dim)`` and HF's half-layout tables
    ``(1, seq_len, head_dim)``, like HF's ``apply_rotary_pos_emb``.
    """
    if not torch.cuda.is_available():
        return None
    try:
        from liger_kernel.transformers.rope import liger_rotary_pos_emb
    except ImportError:
        return None
    return liger_rotary_pos_emb


def flash_attn_rotary() -> Callable | None:
    """flash-attn's ``apply_rotary_emb(x, cos, sin, interleaved=...)`` (CUDA only), or ``None``.

    Takes x as ``(batch, seq_len, heads, head_dim)`` and per-pair tables ``(seq_len,
    rotary_dim // 2)`` in x's dtype; ``interleaved=True`` is the interleaved layout.
    """
    if not torch.cuda.is_available():
        return None
    try:
        from flash_attn.layers.rotary import apply_rotary_emb
    except ImportError:
        return None
    return apply_rotary_emb
