r"""A RoPE implementation as a float64 model: the reference, or a deliberately wrong one.

:class:`Model` describes what an implementation does (which coordinates form a pair, which
frequencies, which positions, which position row each pair follows, what it holds in low
precision, in which order it writes the result); :func:`predict` computes what that
implementation returns for the inputs of one call, in float64. The reference is one model
(:func:`reference_model`); every bug the diagnosis tests is another (``_bugs.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from ..rope import RotaryEmbedding, to_half_layout, to_interleaved_layout
from ..rope_scaling import ScaledFrequencies
from ._calls import Call


@dataclass(frozen=True)
class Model:
    """A RoPE implementation, correct or deliberately wrong, evaluated in float64.

    ``frequencies(length)`` gives the per-pair frequencies and attention factor of a call whose
    length (its largest position + 1, or what ``length(call)`` says) is ``length``;
    ``table_layout`` is the layout the cos/sin table was laid out for (differs from ``layout``
    in the classic half-converted bug); ``positions(call)`` gives the positions actually rotated
    by (default the call's); ``pair_rows`` the position row each pair follows (M-RoPE, a patch
    grid: ``(pairs,)``); ``precision`` is ``(positions, inv_freq, angles, tables)`` dtypes when
    the angles are formed the common way (a float32 product) with some quantity held in low
    precision, and ``factor_in_table`` rounds the tables after the attention factor is
    multiplied in (vLLM's YaRN cache); ``sign`` -1 rotates the other way; ``swapped`` reads
    sine for cosine and cosine for sine; ``aliased`` writes the first coordinate of a pair
    before reading it for the second (an in-place kernel's bug); ``heads`` rotates only some
    heads (``"k"``: as many query heads as the keys have; ``"first"``: head 0 of each tensor);
    ``head_axis`` rotates head ``h`` of every token at the call's first position + ``h`` (a
    sequence axis read from the head axis). ``base``, ``plain`` and ``steps`` feed the float32
    allowance (:func:`~._tolerance.float32_angle_allowance`).
    """

    layout: str
    rotary_dim: int
    frequencies: Callable[[int], ScaledFrequencies]
    base: float = 10000.0
    table_layout: str | None = None
    positions: Callable[[Call], torch.Tensor] | None = None
    length: Callable[[Call], int] | None = None
    pair_rows: torch.Tensor | None = None
    precision: tuple[torch.dtype, torch.dtype, torch.dtype, torch.dtype] | None = None
    factor_in_table: bool = False
    sign: float = 1.0
    swapped: bool = False
    output_layout: str | None = None
    aliased: bool = False
    heads: str | None = None
    head_axis: bool = False
    plain: torch.Tensor | None = None
    steps: torch.Tensor | None = None

    def written(self, rotated: torch.Tensor) -> torch.Tensor:
        """The rotary part in the order it is written back (DeepSeek-V3: the other layout)."""
        if self.output_layout is None or self.output_layout == self.layout:
            return rotated
        reorder = to_half_layout if self.output_layout == "half" else to_interleaved_layout
        return reorder(rotated)

    def call_length(self, call: Call) -> int:
        """The length a length-dependent method switches on, for this call."""
        return call.seq_len if self.length is None else self.length(call)

    def freqs(self, call: Call) -> ScaledFrequencies:
        """The frequencies and attention factor this model uses in ``call``."""
        return self.frequencies(self.call_length(call))

    def pair_positions(self, call: Call, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """The position each pair turns by, float64: ``(n, pairs)`` or ``(batch, 1, n, pairs)``.

        ``tokens`` keeps only those token indices (the positions are those of the whole call:
        a model may look at all of it, a packed row's runs or a decode step's length).
        """
        p = call.positions if self.positions is None else self.positions(call)
        if tokens is not None:
            p = p[..., tokens]
        p = p.to(torch.float64)
        pairs = self.rotary_dim // 2
        if call.rows and p.dim() > 1:  # (rows, n): each pair reads its own row
            rows = self.pair_rows if self.pair_rows is not None else torch.zeros(pairs).long()
            return p.movedim(0, -1)[..., rows]
        return p[..., None].expand(*p.shape, pairs)


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


def from_parts(u: torch.Tensor, v: torch.Tensor, layout: str) -> torch.Tensor:
    """The inverse of :func:`pair_parts`: ``(..., rotary_dim)`` from the pairs' coordinates."""
    if layout == "interleaved":
        return torch.stack([u, v], dim=-1).flatten(-2)
    return torch.cat([u, v], dim=-1)


def partner(xr: torch.Tensor, layout: str) -> torch.Tensor:
    """Each pair ``(u, v)`` replaced by ``(-v, u)``, in place of the pair's coordinates."""
    if layout == "interleaved":
        u, v = xr[..., 0::2], xr[..., 1::2]
        return torch.stack([-v, u], dim=-1).flatten(-2)
    half = xr.shape[-1] // 2
    return torch.cat([-xr[..., half:], xr[..., :half]], dim=-1)


def model_tables(model: Model, call: Call, tokens: torch.Tensor | None = None, heads: int = 1):
    """Per-pair cos and sin (``(n, pairs)`` or batched), float64, and the attention factor.

    ``tokens`` keeps those token indices only; ``heads`` is the head count of the tensor rotated
    (a ``head_axis`` model turns each head by its own position: ``(1, heads, n, pairs)``).
    """
    freqs = model.freqs(call)
    omega = freqs.inv_freq.detach().to("cpu", torch.float64)
    if model.head_axis:
        n = call.n if tokens is None else tokens.numel()
        p = (call.start + torch.arange(heads, dtype=torch.float64))[None, :, None, None]
        pos = p.expand(1, heads, n, omega.numel())
    else:
        pos = model.pair_positions(call, tokens)
    a = float(freqs.attention_factor)
    if model.precision is None:
        theta = pos * omega  # float64 as in the reference
        cos, sin = torch.cos(theta), torch.sin(theta)
    else:
        # The common code path: positions and frequencies as float32 (or lower), a float32
        # product, possibly rounded, cos/sin in float32, possibly rounded. bfloat16 x bfloat16
        # products are exact in float32, so this is bit-exact for those pipelines too.
        p_dt, w_dt, a_dt, t_dt = model.precision
        p = pos.to(p_dt).to(torch.float32)
        w = omega.to(torch.float32).to(w_dt).to(torch.float32)
        theta = (p * w).to(a_dt).to(torch.float32)
        cos, sin = torch.cos(theta), torch.sin(theta)
        if model.factor_in_table:  # the factor multiplied in float32, then the table rounded
            cos, sin, a = cos * a, sin * a, 1.0
        cos, sin = cos.to(t_dt).to(torch.float64), sin.to(t_dt).to(torch.float64)
    if model.swapped:
        cos, sin = sin, cos
    return cos, model.sign * sin, a


def predict(
    model: Model, x: torch.Tensor, call: Call, which: int = 0, tokens: torch.Tensor | None = None
) -> torch.Tensor:
    """The model's output for float64 input ``x`` ``(batch, heads, n, head_dim)`` of ``call``.

    ``which`` is 0 for the queries, 1 for the keys (only ``heads`` tells them apart).
    ``tokens``: ``x`` holds only those token indices of the call (``x[..., tokens, :]``), and
    the output is theirs.
    """
    r = model.rotary_dim
    cos, sin, a = model_tables(model, call, tokens, heads=x.shape[1])
    xr = x[..., :r]
    if model.aliased:  # u' = u cos - v sin, then v' = u' sin + v cos (u overwritten first)
        u, v = pair_parts(x, model.layout, r)
        u2 = a * (u * cos - v * sin)
        rotated = from_parts(u2, a * (u2 * sin + v * cos), model.layout)
    else:
        index = pair_index(model.table_layout or model.layout, r)
        cos_c, sin_c = cos[..., index], sin[..., index]  # (..., n, r): each coordinate's angle
        rotated = a * (xr * cos_c + partner(xr, model.layout) * sin_c)
    out = torch.cat([model.written(rotated), x[..., r:]], dim=-1)
    if model.heads is not None:
        keep = 1 if model.heads == "first" else call.inputs[1].shape[1]
        if model.heads == "first" or which == 0:  # the heads past keep are left unrotated
            out = torch.cat([out[:, :keep], x[:, keep:]], dim=1)
    return out


def reference_model(reference: RotaryEmbedding) -> Model:
    """A :class:`~posenc_ref.RotaryEmbedding` as a model."""
    output = getattr(reference, "output_layout", None)  # DeepSeek-V3 (from the models work)
    output = None if output == reference.layout else output
    rows = getattr(reference, "_mrope_rows", None)
    return Model(
        reference.layout,
        reference.rotary_dim,
        reference.frequencies,
        base=float(reference.base),
        output_layout=output,
        pair_rows=None if rows is None else rows.to("cpu"),
        sign=-1.0 if getattr(reference, "clockwise", False) else 1.0,
    )


def written_layout(reference: RotaryEmbedding) -> str:
    """The order in which ``reference`` writes its rotated pairs."""
    return getattr(reference, "output_layout", None) or reference.layout


def other_layout(layout: str) -> str:
    """``"half"`` for ``"interleaved"`` and the reverse."""
    return "half" if layout == "interleaved" else "interleaved"
