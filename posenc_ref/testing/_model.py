r"""A RoPE implementation as a float64 model: the reference, or a deliberately wrong one.

:class:`Model` describes what an implementation does (which coordinates form a pair, which
frequencies, which positions, what it holds in low precision, in which order it writes the
result); :func:`predict` computes what that implementation returns for given inputs, in
float64. The reference is one model (:func:`reference_model`); every bug the diagnosis tests
is another (``_bugs.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..rope import RotaryEmbedding, to_half_layout, to_interleaved_layout
from ..rope_scaling import ScaledFrequencies


@dataclass(frozen=True)
class Model:
    """A RoPE implementation, correct or deliberately wrong, evaluated in float64.

    ``frequencies(seq_len)`` gives the per-pair frequencies and attention factor of a call whose
    largest position is ``seq_len - 1``; ``table_layout`` is the layout the cos/sin table was
    laid out for (differs from ``layout`` in the classic half-converted bug); ``positions`` maps
    the call's integer positions to the ones actually rotated by; ``precision`` is
    ``(positions, inv_freq, angles, tables)`` dtypes when the angles are formed the common way
    (a float32 product) with some quantity held in low precision; ``sign`` -1 rotates the other
    way.
    """

    layout: str
    rotary_dim: int
    frequencies: Callable[[int], ScaledFrequencies]
    table_layout: str | None = None
    positions: Callable[[torch.Tensor], torch.Tensor] | None = None
    precision: tuple[torch.dtype, torch.dtype, torch.dtype, torch.dtype] | None = None
    sign: float = 1.0
    output_layout: str | None = None

    def written(self, rotated: torch.Tensor) -> torch.Tensor:
        """The rotary part in the order it is written back (DeepSeek-V3: the other layout)."""
        if self.output_layout is None or self.output_layout == self.layout:
            return rotated
        reorder = to_half_layout if self.output_layout == "half" else to_interleaved_layout
        return reorder(rotated)


def pair_index(layout: str, rotary_dim: int) -> torch.Tensor:
    """For each rotated coordinate, the pair it belongs to (``(rotary_dim,)`` int64)."""
    j = torch.arange(rotary_dim)
    return j // 2 if layout == "interleaved" else j % (rotary_dim // 2)


def pair_parts(x: torch.Tensor, layout: str, rotary_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two coordinates ``(u, v)`` of every pair, each ``(..., rotary_dim // 2)``."""
    xr = x[..., :rotary_dim]
    if layout == "interleaved":
        return xr[..., 0::2], xr[..., 1::2]
    half = rotary_dim // 2
    return xr[..., :half], xr[..., half:]


def partner(xr: torch.Tensor, layout: str) -> torch.Tensor:
    """Each pair ``(u, v)`` replaced by ``(-v, u)``, in place of the pair's coordinates."""
    if layout == "interleaved":
        u, v = xr[..., 0::2], xr[..., 1::2]
        return torch.stack([-v, u], dim=-1).flatten(-2)
    half = xr.shape[-1] // 2
    return torch.cat([-xr[..., half:], xr[..., :half]], dim=-1)


def model_tables(model: Model, positions: torch.Tensor, seq_len: int):
    """Per-pair cos and sin ``(n, pairs)`` in float64, and the attention factor."""
    freqs = model.frequencies(seq_len)
    omega = freqs.inv_freq.detach().to("cpu", torch.float64)
    pos = positions.to(torch.float64) if model.positions is None else model.positions(positions)
    if model.precision is None:
        theta = pos[:, None] * omega  # (n, pairs), float64 as in the reference
        cos, sin = torch.cos(theta), torch.sin(theta)
    else:
        # The common code path: positions and frequencies as float32 (or lower), a float32
        # product, possibly rounded, cos/sin in float32, possibly rounded. bfloat16 x bfloat16
        # products are exact in float32, so this is bit-exact for those pipelines too.
        p_dt, w_dt, a_dt, t_dt = model.precision
        p = pos.to(p_dt).to(torch.float32)
        w = omega.to(torch.float32).to(w_dt).to(torch.float32)
        theta = (p[:, None] * w).to(a_dt).to(torch.float32)
        cos = torch.cos(theta).to(t_dt).to(torch.float64)
        sin = torch.sin(theta).to(t_dt).to(torch.float64)
    return cos, model.sign * sin, float(freqs.attention_factor)


def predict(model: Model, x: torch.Tensor, positions: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The model's output for float64 input ``x`` ``(..., n, head_dim)`` at ``positions``."""
    r = model.rotary_dim
    cos, sin, a = model_tables(model, positions, seq_len)
    index = pair_index(model.table_layout or model.layout, r)
    cos_c, sin_c = cos[:, index], sin[:, index]  # (n, r): the angle each coordinate reads
    xr = x[..., :r]
    rotated = a * (xr * cos_c + partner(xr, model.layout) * sin_c)
    return torch.cat([model.written(rotated), x[..., r:]], dim=-1)


def reference_model(reference: RotaryEmbedding) -> Model:
    output = getattr(reference, "output_layout", None)  # DeepSeek-V3 (from the models work)
    output = None if output == reference.layout else output
    return Model(
        reference.layout, reference.rotary_dim, reference.frequencies, output_layout=output
    )


def written_layout(reference: RotaryEmbedding) -> str:
    return getattr(reference, "output_layout", None) or reference.layout


def other_layout(layout: str) -> str:
    return "half" if layout == "interleaved" else "interleaved"


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")
