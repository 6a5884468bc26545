r"""Building blocks of the bug table's examples: RoPE written the way user code writes it.

Every row of the table of mistakes carries an example, a wrong function the check must name
(``_bugs*.py``). The examples are short and each is written out where its row is; what they
share is here: a float32 pipeline as most code forms it (frequencies and positions as float32, a
float32 angle product, cos/sin tables, a rotation in the input's dtype), with each quantity's
dtype a choice, and the two rotations. None of it is used by the checks themselves.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

F32 = torch.float32


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """``x`` ``(..., n, d)`` rotated by per-pair ``cos``, ``sin`` ``(n, d // 2)``, in x's dtype."""
    half = x.shape[-1] // 2
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    if layout == "half":
        u, v = x[..., :half], x[..., half:]
        return torch.cat([u * cos - v * sin, v * cos + u * sin], dim=-1)
    u, v = x[..., 0::2], x[..., 1::2]
    return torch.stack([u * cos - v * sin, v * cos + u * sin], dim=-1).flatten(-2)


def float32_rope(
    inv_freq: torch.Tensor,
    layout: str = "half",
    attention_factor: float = 1.0,
    *,
    positions: torch.dtype = F32,
    frequencies: torch.dtype = F32,
    angles: torch.dtype = F32,
    tables: torch.dtype = F32,
    factor_in_table: bool = False,
) -> Callable:
    """``fn(q, k, positions)``: the common float32 pipeline, each quantity held in its dtype.

    ``factor_in_table`` multiplies the attention factor into the float32 table before it is
    rounded to ``tables`` (vLLM's YaRN cache); otherwise the rounded table is scaled after.
    """
    w = inv_freq.to(F32).to(frequencies).to(F32)

    def fn(q, k, p):
        theta = (p.to(positions).to(F32)[:, None] * w).to(angles).to(F32)
        cos, sin = torch.cos(theta), torch.sin(theta)
        if factor_in_table:
            cos, sin = cos * attention_factor, sin * attention_factor
        cos, sin = cos.to(tables).to(F32), sin.to(tables).to(F32)
        if not factor_in_table:
            cos, sin = cos * attention_factor, sin * attention_factor
        return rotate(q, cos, sin, layout), rotate(k, cos, sin, layout)

    return fn
