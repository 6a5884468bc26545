r"""``assert_rope_equal``: a user's RoPE against a reference ``RotaryEmbedding``, with diagnoses.

How it works, in three steps:

1. The kit chooses the inputs: random queries and keys of a few shapes, at windows of contiguous
   positions from 0 to far past the reference's original context, in each requested dtype.
2. The expected output is computed in float64 from the reference's own frequencies
   (``reference.frequencies(seq_len)``, so length-dependent methods switch per call as the module
   does), and every coordinate is compared with an allowance built from an explicit error model.
3. On failure, each candidate cause is a *model* of a wrong implementation (a different pair
   layout, shifted positions, another base, ...). Every model predicts the user's output for the
   same inputs; the ones whose prediction matches the user's output within the same allowance
   are the diagnosis. Nothing is inferred from the size of the error alone.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from .._checks import check_bool, check_int
from ..absolute import inv_freq as _inv_freq
from ..rope import RotaryEmbedding, to_half_layout, to_interleaved_layout
from ..rope_scaling import SCALING_METHODS, ScaledFrequencies
from ._common import (
    ANGLE_MARGIN,
    ANGLE_ULPS,
    OUTPUT_ROUNDINGS,
    UNIT_ROUNDOFF,
    check_dtypes,
    check_nonnegative_float,
    check_optional_tolerance,
    check_seed,
    fmt,
    nice_number,
)

__all__ = ["assert_rope_equal", "rope_error"]

RopeFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Sequence[torch.Tensor]]

# Bases people use (GPT-NeoX/Llama 2, Llama 3, Qwen2, Mistral's 1e6, gpt-oss's 150000, ...) and
# 100 = sqrt(10000), the base an exponent of -i/d instead of -2i/d amounts to. Each one is tried
# as a hypothesis, together with the base fitted from the user's own output.
COMMON_BASES = (100.0, 10000.0, 50000.0, 100000.0, 150000.0, 500000.0, 1e6, 5e6, 1e7)

# Windows of positions: the start (small positions, and 255/256/257 where bfloat16 positions
# collide), around the original context (where length-dependent methods switch), and the far end.
FIRST_WINDOW = 300
WINDOW = 128
DEFAULT_CONTEXT = 4096
DEFAULT_FAR = 1 << 17


# --------------------------------------------------------------------------- models


@dataclass(frozen=True)
class _Model:
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


def _pair_index(layout: str, rotary_dim: int) -> torch.Tensor:
    """For each rotated coordinate, the pair it belongs to (``(rotary_dim,)`` int64)."""
    j = torch.arange(rotary_dim)
    return j // 2 if layout == "interleaved" else j % (rotary_dim // 2)


def _pairs(x: torch.Tensor, layout: str, rotary_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The two coordinates ``(u, v)`` of every pair, each ``(..., rotary_dim // 2)``."""
    xr = x[..., :rotary_dim]
    if layout == "interleaved":
        return xr[..., 0::2], xr[..., 1::2]
    half = rotary_dim // 2
    return xr[..., :half], xr[..., half:]


def _partner(xr: torch.Tensor, layout: str) -> torch.Tensor:
    """Each pair ``(u, v)`` replaced by ``(-v, u)``, in place of the pair's coordinates."""
    if layout == "interleaved":
        u, v = xr[..., 0::2], xr[..., 1::2]
        return torch.stack([-v, u], dim=-1).flatten(-2)
    half = xr.shape[-1] // 2
    return torch.cat([-xr[..., half:], xr[..., :half]], dim=-1)


def _tables(model: _Model, positions: torch.Tensor, seq_len: int):
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


def _predict(model: _Model, x: torch.Tensor, positions: torch.Tensor, seq_len: int) -> torch.Tensor:
    """The model's output for float64 input ``x`` ``(..., n, head_dim)`` at ``positions``."""
    r = model.rotary_dim
    cos, sin, a = _tables(model, positions, seq_len)
    index = _pair_index(model.table_layout or model.layout, r)
    cos_c, sin_c = cos[:, index], sin[:, index]  # (n, r): the angle each coordinate reads
    xr = x[..., :r]
    rotated = a * (xr * cos_c + _partner(xr, model.layout) * sin_c)
    return torch.cat([model.written(rotated), x[..., r:]], dim=-1)


def _reference_model(reference: RotaryEmbedding) -> _Model:
    output = getattr(reference, "output_layout", None)  # DeepSeek-V3 (from the models work)
    output = None if output == reference.layout else output
    return _Model(
        reference.layout, reference.rotary_dim, reference.frequencies, output_layout=output
    )


def _output_layout(reference: RotaryEmbedding) -> str:
    return getattr(reference, "output_layout", None) or reference.layout


# --------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class _Window:
    start: int
    stop: int
    batch: int
    heads: int

    def describe(self) -> str:
        return f"positions {self.start}..{self.stop - 1}"


@dataclass
class _Call:
    """One call of the user's fn: its inputs, outputs and the expected outputs (float64, CPU)."""

    window: _Window
    dtype: torch.dtype
    positions: torch.Tensor  # (n,) int64, CPU
    inputs: tuple[torch.Tensor, torch.Tensor]  # q, k as float64 (exactly the values passed)
    outputs: tuple[torch.Tensor, torch.Tensor]  # the user's q_rot, k_rot as float64
    expected: tuple[torch.Tensor, torch.Tensor] = ()
    allowed: tuple[torch.Tensor, torch.Tensor] = ()

    @property
    def seq_len(self) -> int:
        return self.window.stop

    def describe(self) -> str:
        shape = tuple(self.inputs[0].shape)
        return f"{self.window.describe()}, {_dtype_name(self.dtype)}, q and k of shape {shape}"


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _original_context(reference: RotaryEmbedding) -> int | None:
    params = getattr(reference, "scaling_params", None) or {}
    if isinstance(params.get("original_max_len"), int):
        return params["original_max_len"]
    spec = getattr(reference, "spec", None)  # from_hf_config keeps the config's spec
    if spec is not None and getattr(spec, "original_max_len", None):
        return int(spec.original_max_len)
    for name in ("original_max_len", "original_max_position_embeddings"):
        value = getattr(reference, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _plan(reference: RotaryEmbedding, max_position: int | None) -> list[_Window]:
    context = _original_context(reference) or DEFAULT_CONTEXT
    far = max_position if max_position is not None else max(8 * context, DEFAULT_FAR)
    windows = [_Window(0, min(FIRST_WINDOW, far + 1), batch=2, heads=2)]
    if context - WINDOW // 2 >= windows[-1].stop and context + WINDOW // 2 <= far + 1:
        windows.append(_Window(context - WINDOW // 2, context + WINDOW // 2, batch=1, heads=2))
    if far + 1 > windows[-1].stop:
        windows.append(_Window(max(far + 1 - WINDOW, windows[-1].stop), far + 1, 1, 1))
    return windows


def _fail(message: str) -> AssertionError:
    return AssertionError(message)


def _run_call(
    fn: RopeFn,
    window: _Window,
    dtype: torch.dtype,
    head_dim: int,
    generator: torch.Generator,
    device: torch.device,
) -> _Call:
    shape = (window.batch, window.heads, window.stop - window.start, head_dim)
    q = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    k = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    positions = torch.arange(window.start, window.stop, device=device)
    where = f"({window.describe()}, {_dtype_name(dtype)} q and k of shape {shape})"
    with torch.no_grad():
        result = fn(q.clone(), k.clone(), positions.clone())
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise _fail(
            f"fn(q, k, positions) must return (q_rot, k_rot), got {type(result).__name__} {where}"
        )
    outputs = []
    for name, out in (("q", result[0]), ("k", result[1])):
        if not isinstance(out, torch.Tensor):
            raise _fail(f"fn returned {type(out).__name__} for {name}_rot, not a tensor {where}")
        if tuple(out.shape) != shape:
            raise _fail(
                f"fn returned {name}_rot of shape {tuple(out.shape)} for {name} of shape {shape} "
                f"{where}; inputs are (batch, heads, seq_len, head_dim): transpose around your "
                "code if it expects (batch, seq_len, heads, head_dim)"
            )
        if out.dtype != dtype:
            raise _fail(
                f"fn returned {name}_rot as {_dtype_name(out.dtype)} for {_dtype_name(dtype)} "
                f"input {where}: a rotation should return its input's dtype"
            )
        outputs.append(out.detach().to("cpu", torch.float64))
    return _Call(
        window,
        dtype,
        positions.to("cpu"),
        (q.to("cpu", torch.float64), k.to("cpu", torch.float64)),
        (outputs[0], outputs[1]),
    )


# --------------------------------------------------------------------------- tolerance


def _allowance(
    model: _Model,
    x: torch.Tensor,
    positions: torch.Tensor,
    seq_len: int,
    dtype: torch.dtype,
    *,
    float32_angles: bool,
    rtol: float | None,
    atol: float,
    attention_factor: float | None = None,
    rounding_step: bool = False,
) -> torch.Tensor:
    """Allowed absolute error per coordinate of the output, same shape as ``x``.

    Rotated coordinate of pair ``i`` at position ``m``:
    ``a * |pair| * (rtol + angle_i(m)) + atol`` with ``rtol = 8 u(dtype)`` by default and
    ``angle_i(m) = 2 u32 m w_i (ln(1/w_i) + 4)`` when float32 angles are accepted (else 0), for
    the frequency ``w_i`` the coordinate's table entry holds. Coordinates past ``rotary_dim`` are
    copied: ``u(dtype) |x| + atol``. ``rounding_step`` adds one rounding step of the quantity a
    low-precision model rounds (where the user's float32 value and ours may round apart).
    """
    r = model.rotary_dim
    freqs = model.frequencies(seq_len)
    a = float(freqs.attention_factor) if attention_factor is None else attention_factor
    u, v = _pairs(x, model.layout, r)
    norm = torch.sqrt(u * u + v * v)[..., _pair_index(model.layout, r)]  # (..., n, r)
    omega = freqs.inv_freq.detach().to("cpu", torch.float64).clamp(min=1e-300)
    m = positions.to(torch.float64).abs()[:, None]
    out_rel = rtol if rtol is not None else OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[dtype]
    relative = torch.full((1, r // 2), out_rel, dtype=torch.float64)
    if float32_angles:
        angle = ANGLE_MARGIN * UNIT_ROUNDOFF[torch.float32] * m * omega
        relative = relative + angle * (torch.log(1 / omega).clamp(min=0) + ANGLE_ULPS)
    if rounding_step and model.precision is not None:
        _, w_dt, a_dt, t_dt = model.precision
        relative = relative + 3 * UNIT_ROUNDOFF[t_dt]  # one step of cos and of sin
        relative = relative + 2 * (UNIT_ROUNDOFF[w_dt] + UNIT_ROUNDOFF[a_dt]) * m * omega
    relative = relative.expand(positions.numel(), r // 2)
    relative = relative[:, _pair_index(model.table_layout or model.layout, r)]  # (n, r)
    rotated = model.written(a * norm * relative + atol)
    copied = UNIT_ROUNDOFF[dtype] * x[..., r:].abs() + atol
    return torch.cat([rotated, copied], dim=-1)


def _excess(got: torch.Tensor, expected: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Error divided by its allowance (> 1: disagreement); infinite where only one side is finite.

    Where both are non-finite (a float16 overflow the model reproduces) the ratio is 0.
    """
    error = (got - expected).abs()
    ratio = error / allowed  # 0/0 (an exact copy with no allowance) is NaN: fixed below
    ratio.masked_fill_(error == 0, 0.0)
    if not (bool(torch.isfinite(got).all()) and bool(torch.isfinite(expected).all())):
        ratio.masked_fill_(~torch.isfinite(got) & ~torch.isfinite(expected), 0.0)
    return torch.nan_to_num_(ratio, nan=math.inf, posinf=math.inf)


# --------------------------------------------------------------------------- hypotheses


@dataclass
class _Hypothesis:
    key: str
    title: str
    detail: str
    model: _Model
    worst: float = math.inf  # largest error / allowance over every call


def _layout_words(layout: str, rotary_dim: int) -> str:
    if layout == "interleaved":
        return "pairs (2i, 2i+1), the interleaved layout (RoFormer, Meta's Llama, torchtune)"
    return (
        f"pairs (i, i + {rotary_dim // 2}), the half layout (HF transformers' rotate_half, "
        "GPT-NeoX)"
    )


def _other(layout: str) -> str:
    return "half" if layout == "interleaved" else "interleaved"


def _fixed(freqs: ScaledFrequencies) -> Callable[[int], ScaledFrequencies]:
    return lambda seq_len: freqs


def _method_frequencies(
    reference: RotaryEmbedding, dim: int, base: float
) -> Callable[[int], ScaledFrequencies] | None:
    """The reference's scaling method, recomputed for another width or base (None if unknown)."""
    method = getattr(reference, "method", None)
    if method is None:
        return _fixed(ScaledFrequencies(_inv_freq(dim, base), 1.0))
    if method not in SCALING_METHODS:
        return None  # a ScaledFrequencies given directly: no formula to recompute
    function = SCALING_METHODS[method]
    params = dict(reference.scaling_params)
    try:
        if "seq_len" in inspect.signature(function).parameters:
            return lambda seq_len: function(dim, base, seq_len=seq_len, **params)
        freqs = function(dim, base, **params)
    except (TypeError, ValueError):
        return None
    return _fixed(freqs)


def _fit_frequencies(
    call: _Call, layout: str, rotary_dim: int, output_layout: str | None = None
) -> torch.Tensor | None:
    """Per-pair frequencies read off the user's output at positions 1, 2, 4, ... (float64).

    The angle a pair turned by is ``atan2(u v' - v u', u u' + v v')``; its median over the batch
    and heads at position 1 gives the frequency up to 2 pi, refined at positions 2, 4, 8, ...
    with the turn count unwrapped. Meaningful only if the output rotates pairs of this layout.
    """
    if call.window.start != 0 or call.window.stop < 3:
        return None
    u, v = _pairs(call.inputs[0], layout, rotary_dim)
    u2, v2 = _pairs(call.outputs[0], output_layout or layout, rotary_dim)
    phi = torch.atan2(u * v2 - v * u2, u * u2 + v * v2)  # (batch, heads, n, pairs)
    phi = phi.flatten(0, -3).median(dim=0).values  # (n, pairs)
    omega = phi[1].clone()
    m = 2
    while m < phi.shape[0]:
        turns = torch.round((m * omega - phi[m]) / (2 * math.pi))
        omega = (phi[m] + 2 * math.pi * turns) / m
        m *= 2
    return omega


def _fitted_base(omega: torch.Tensor, rotary_dim: int) -> tuple[float, float] | None:
    """``(base, offset)`` from ``ln w_i = offset + slope * i`` over pairs ``i >= 1``.

    ``base = exp(-slope * rotary_dim / 2)``; ``offset`` is 0 for ``w_i = base^(-2i/d)`` and equal
    to the slope when the frequencies are indexed from 1.
    """
    pairs = omega.numel()
    if pairs < 3 or not bool((omega[1:] > 0).all()):
        return None
    i = torch.arange(1, pairs, dtype=torch.float64)
    y = torch.log(omega[1:])
    slope = float(((i - i.mean()) * (y - y.mean())).sum() / ((i - i.mean()) ** 2).sum())
    offset = float(y.mean() - slope * i.mean())
    if slope >= 0:
        return None
    return math.exp(-slope * rotary_dim / 2), offset


def _hypotheses(reference: RotaryEmbedding, calls: list[_Call]) -> list[_Hypothesis]:
    ref = _reference_model(reference)
    r, head_dim, base = reference.rotary_dim, reference.head_dim, reference.base
    layout, other = ref.layout, _other(ref.layout)
    a = float(reference.attention_factor)
    out: list[_Hypothesis] = []

    def add(key: str, title: str, detail: str, **changes) -> None:
        out.append(_Hypothesis(key, title, detail, dataclasses.replace(ref, **changes)))

    add(
        "layout",
        "the other pair layout",
        f"your fn rotates {_layout_words(other, r)}; the reference rotates "
        f"{_layout_words(layout, r)}. If your checkpoint was converted for that layout, build "
        f"the reference with layout={other!r}; otherwise permute the query/key projection rows "
        "(posenc_ref.permute_qk_weight) or switch the rotation",
        layout=other,
    )
    for rotation in (layout, other):
        table = _other(rotation)
        add(
            f"table_layout_{rotation}",
            "a cos/sin table laid out for the other layout",
            f"your fn rotates {_layout_words(rotation, r)} but reads cos/sin from a table laid "
            f"out for {table} pairs (each frequency "
            + ("repeated twice in a row" if table == "interleaved" else "vector repeated twice")
            + "): coordinates of one pair get different angles, which is not a rotation",
            layout=rotation,
            table_layout=table,
        )
    written = _output_layout(reference)
    if r > 2:
        add(
            "output_order",
            "results written back in the other order",
            f"your fn rotates the right pairs but writes the result in {_other(written)} order; "
            f"the reference writes it in {written} order"
            + (
                " (DeepSeek-V3 reads interleaved pairs and writes them in half order)"
                if written != layout or layout == "interleaved"
                else ""
            ),
            output_layout=_other(written),
        )
    add(
        "shift_plus",
        "positions off by one",
        "your fn rotates position m by the angles of position m + 1 (positions counted from 1, "
        "or an extra token before the first)",
        positions=lambda p: p.to(torch.float64) + 1,
    )
    add(
        "shift_minus",
        "positions off by one",
        "your fn rotates position m by the angles of position m - 1",
        positions=lambda p: p.to(torch.float64) - 1,
    )
    if any(call.window.start > 0 for call in calls):
        add(
            "restart",
            "positions ignored",
            "your fn rotates every call as if its positions started at 0 (it ignores the "
            "positions it is given: a KV-cache offset that is never applied)",
            positions=lambda p: p.to(torch.float64) - p[0].to(torch.float64),
        )
    add(
        "identity",
        "no rotation at all",
        "your fn returns q and k unrotated",
        positions=lambda p: torch.zeros_like(p, dtype=torch.float64),
        frequencies=lambda n: ScaledFrequencies(reference.frequencies(n).inv_freq, 1.0),
    )
    add(
        "direction",
        "the rotation in the other direction",
        "your fn rotates by -m w_i: u' = u cos + v sin, v' = v cos - u sin (a conjugated "
        "complex table, a minus sign on the wrong sin term, or rotate_half's halves swapped)",
        sign=-1.0,
    )

    if r < head_dim:
        whole = _method_frequencies(reference, head_dim, base)
        if whole is not None:
            add(
                "rotary_dim_ignored",
                "rotary_dim ignored",
                f"your fn rotates all {head_dim} coordinates with frequencies for width "
                f"{head_dim}; the reference rotates the first rotary_dim = {r} and copies the rest",
                rotary_dim=head_dim,
                frequencies=whole,
            )

            def truncated(n: int) -> ScaledFrequencies:
                freqs = whole(n)
                return ScaledFrequencies(freqs.inv_freq[: r // 2], freqs.attention_factor)

            add(
                "rotary_width",
                "frequencies computed over head_dim",
                f"your fn rotates the first {r} coordinates but with w_i = base^(-2i/{head_dim}) "
                f"(the head width) instead of base^(-2i/{r}) (the rotary width)",
                frequencies=truncated,
            )

    copied = _copied_tail(calls, head_dim)
    if 2 <= head_dim - copied < r and (head_dim - copied) % 2 == 0:
        narrow = head_dim - copied
        frequencies = _method_frequencies(reference, narrow, base)
        if frequencies is not None:
            add(
                "partial",
                "partial rotary",
                f"your fn rotates only the first {narrow} coordinates (rotary_dim = {narrow}, "
                f"frequencies for that width) and copies the last {copied}; the reference "
                f"rotates {r}. Check partial_rotary_factor / rotary_pct in your config (GPT-NeoX's "
                "config defaults it to 0.25)",
                rotary_dim=narrow,
                frequencies=frequencies,
            )
    # Frequencies: another base (the common ones and the one fitted from the output), indexed
    # from 1, computed over the whole head instead of the rotary part.
    bases = list(COMMON_BASES)
    fit = None
    if calls:
        omega = _fit_frequencies(calls[0], layout, r, _output_layout(reference))
        fit = None if omega is None else _fitted_base(omega, r)
        if fit is not None and math.isfinite(fit[0]) and 1.0 < fit[0] < 1e12:
            # The fewest significant digits first: 500000 rather than 500012.7.
            bases = [nice_number(fit[0], d) for d in (1, 2, 3, 4, 5, 6)] + [fit[0], *bases]
    seen = {base}
    for candidate in bases:
        if candidate in seen or any(abs(candidate / s - 1) < 1e-9 for s in seen):
            continue
        seen.add(candidate)
        frequencies = _method_frequencies(reference, r, candidate)
        if frequencies is None:
            break
        note = ""
        if abs(candidate - math.sqrt(base)) < 1e-6 * base:
            note = (
                f" ({candidate:.10g} = sqrt({base:.10g}): the exponent -i/d instead of -2i/d, "
                "or twice the width in the exponent)"
            )
        elif abs(candidate - base * base) < 1e-6 * base * base:
            note = f" ({candidate:.10g} = {base:.10g}^2: half the width in the exponent)"
        add(
            f"base_{candidate:g}",
            "a different base",
            f"your fn uses base {candidate:.10g} where the reference has {base:.10g}{note}",
            frequencies=frequencies,
        )
    if getattr(reference, "method", None) is None:
        from_one = {base}
        if fit is not None and math.isfinite(fit[0]) and 1.0 < fit[0] < 1e12:
            from_one.update(nice_number(fit[0], d) for d in (1, 2, 3, 4))
        for candidate in sorted(from_one):
            # Indexed from 1 keeps the width: w_i = base^(-2(i+1)/r), i = 0 .. r/2 - 1.
            omega = candidate ** (-2.0 * torch.arange(1, r // 2 + 1, dtype=torch.float64) / r)
            words = "" if candidate == base else f" and base {candidate:.10g}"
            add(
                f"from_one_{candidate:g}",
                "frequencies indexed from 1",
                f"your fn uses w_i = base^(-2(i+1)/d){words}: pair 0 turns at base^(-2/d) = "
                f"{fmt(float(omega[0]))} rad per position instead of 1 (an index starting at 1, "
                "e.g. w_n = base^(-2n/d) for n = 1..d/2)",
                frequencies=_fixed(ScaledFrequencies(omega, a)),
            )

    if a != 1.0:
        reference_freqs = reference.frequencies

        def with_factor(factor: float) -> Callable[[int], ScaledFrequencies]:
            return lambda n: ScaledFrequencies(reference_freqs(n).inv_freq, factor)

        add(
            "factor_missing",
            "the attention factor missing",
            f"your fn does not multiply cos and sin by the attention factor {fmt(a)} (its pair "
            "norms are unchanged by the rotation)",
            frequencies=with_factor(1.0),
        )
        add(
            "factor_doubled",
            "the attention factor applied twice",
            f"your fn scales by {fmt(a)}^2 = {fmt(a * a)} instead of {fmt(a)} (the factor "
            "applied to the table and again to q and k, or a value that already held it)",
            frequencies=with_factor(a * a),
        )
    method = getattr(reference, "method", None)
    if method is not None:
        plain = _fixed(ScaledFrequencies(_inv_freq(r, base), 1.0))
        if method == "static" and getattr(reference, "spec", None) is not None:
            method = reference.spec.rope_type  # from_hf_config: the config's name for it
        add(
            "scaling_missing",
            "the scaling method not applied",
            f"your fn uses plain RoPE frequencies (base {base:.10g}, attention factor 1): the "
            f"reference's {method!r} scaling is missing",
            frequencies=plain,
        )
        short, long_ = reference.frequencies(0), None
        context = _original_context(reference)
        if context is not None:
            factor = reference.scaling_params.get("factor")
            longer = int(math.ceil(factor * context)) if factor else context + 1
            long_ = reference.frequencies(max(longer, context + 1))
        if long_ is not None and not torch.equal(short.inv_freq, long_.inv_freq):
            add(
                "length_never",
                "the length-dependent switch never made",
                f"your fn keeps the original-context frequencies of {method!r} past "
                f"{context} positions, where the reference switches per call",
                frequencies=_fixed(short),
            )
            add(
                "length_always",
                "the extended frequencies at every length",
                f"your fn uses {method!r}'s extended frequencies (length {longer}) for every "
                "call, also inside the original context (vLLM's static 'dynamic' NTK does this)",
                frequencies=_fixed(long_),
            )
    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    why = {
        "positions": {
            bf16: "bfloat16 keeps 8 significant bits: above 256 positions step by 2 (257 "
            "becomes 256), and the step doubles with every power of two",
            f16: "float16 keeps 11 significant bits (positions above 2048 step by 2) and "
            "overflows to infinity past 65504",
        },
        "inv_freq": {
            bf16: "each frequency is off by up to 2^-9 of itself, so the angle error grows "
            "with the position (a module cast with .to(torch.bfloat16) does this)",
            f16: "each frequency is off by up to 2^-12 of itself, so the angle error grows "
            "with the position (a module cast with .half() does this)",
        },
        "angles": {
            bf16: "each angle keeps 8 significant bits, so the error grows with the position "
            "(autocast around the angle product does this)",
            f16: "each angle keeps 11 significant bits and overflows past 65504, so the error "
            "grows with the position (autocast around the angle product does this)",
        },
        "cos/sin tables": {
            bf16: "every cos and sin is rounded to 8 significant bits: an error of about 4e-3 "
            "at every position",
            f16: "every cos and sin is rounded to 11 significant bits: an error of about 5e-4 "
            "at every position",
        },
    }
    for what, slot in (("positions", 0), ("inv_freq", 1), ("angles", 2), ("cos/sin tables", 3)):
        for low in (bf16, f16):
            precision = [f32, f32, f32, f32]
            precision[slot] = low
            add(
                f"precision_{what}_{_dtype_name(low)}",
                f"{what} in {_dtype_name(low)}",
                f"your fn holds the {what} in {_dtype_name(low)}: {why[what][low]}. Keep "
                "positions and frequencies in float32 or better, and form the angles in float64 "
                "where you can",
                precision=tuple(precision),
            )
    return out


def _copied_tail(calls: list[_Call], head_dim: int) -> int:
    """How many trailing coordinates the user's fn returned unchanged, in every call."""
    copied = head_dim
    for call in calls:
        for x, got in zip(call.inputs, call.outputs, strict=True):
            same = (x == got).flatten(0, -2).all(dim=0)  # (head_dim,)
            changed = torch.nonzero(~same).flatten()
            if changed.numel():
                copied = min(copied, head_dim - 1 - int(changed.max()))
    return copied


def _with_layout(h: _Hypothesis, layout: str) -> _Hypothesis:
    model = dataclasses.replace(h.model, layout=layout)
    return _Hypothesis(f"layout+{h.key}", f"the other pair layout and {h.title}", h.detail, model)


def _evaluate(h: _Hypothesis, calls: list[_Call], options: dict) -> float:
    """Largest error / allowance of the model's prediction over every call (<= 1: explained).

    A low-precision model is exact only up to where the user's float32 value and ours round
    apart; for those, 99% of the coordinates must meet the plain allowance and every one the
    allowance plus one rounding step, else the plain worst is returned.
    """
    worst, worst_step, inside, total = 0.0, 0.0, 0, 0
    for call in calls:
        for x, got in zip(call.inputs, call.outputs, strict=True):
            predicted = _predict(h.model, x, call.positions, call.seq_len)
            factor = max(
                float(h.model.frequencies(call.seq_len).attention_factor),
                float(options["attention_factor"]),
            )
            common = dict(
                float32_angles=True,
                rtol=options["rtol"],
                atol=options["atol"],
                attention_factor=factor,
            )
            allowed = _allowance(h.model, x, call.positions, call.seq_len, call.dtype, **common)
            excess = _excess(got, predicted, allowed)
            worst = max(worst, float(excess.max()))
            if h.model.precision is not None:
                stepped = _allowance(
                    h.model,
                    x,
                    call.positions,
                    call.seq_len,
                    call.dtype,
                    rounding_step=True,
                    **common,
                )
                worst_step = max(worst_step, float(_excess(got, predicted, stepped).max()))
                inside += int((excess <= 1).sum())
                total += excess.numel()
            if worst > 1e6 and h.model.precision is None:
                return worst  # clearly not this one: skip the remaining calls
    if worst > 1 and h.model.precision is not None and worst_step <= 1 and inside >= 0.99 * total:
        return worst_step
    return worst


# --------------------------------------------------------------------------- the report


def _locate(call: _Call, which: int, flat: int, layout: str, rotary_dim: int) -> dict:
    shape = call.inputs[which].shape
    index = list(torch.unravel_index(torch.tensor(flat), shape))
    b, h, t, j = (int(i) for i in index)
    position = int(call.positions[t])
    if j < rotary_dim:
        pair = int(_pair_index(layout, rotary_dim)[j])
        coords = (
            (2 * pair, 2 * pair + 1) if layout == "interleaved" else (pair, pair + rotary_dim // 2)
        )
    else:
        pair, coords = None, (j,)
    return {
        "tensor": "qk"[which],
        "b": b,
        "h": h,
        "t": t,
        "j": j,
        "position": position,
        "pair": pair,
        "coords": coords,
    }


def _where_words(loc: dict, rotary_dim: int) -> str:
    tensor = f"{loc['tensor']}[{loc['b']}, {loc['h']}]"
    if loc["pair"] is None:
        return (
            f"position {loc['position']}, coordinate {loc['j']} of {tensor} (past rotary_dim = "
            f"{rotary_dim}: it should be copied unchanged)"
        )
    a, b = loc["coords"]
    return f"position {loc['position']}, pair {loc['pair']} (coordinates {a} and {b}) of {tensor}"


def _values(call: _Call, loc: dict, source: str) -> str:
    tensor = call.outputs if source == "got" else call.expected
    x = tensor["qk".index(loc["tensor"])][loc["b"], loc["h"], loc["t"]]
    return "(" + ", ".join(f"{float(x[c]):.6g}" for c in loc["coords"]) + ")"


def _report(
    reference: RotaryEmbedding,
    calls: list[_Call],
    options: dict,
) -> str:
    layout, r = reference.layout, reference.rotary_dim
    head_dim = reference.head_dim
    # Sort key of each coordinate: position first, then pair (coordinates past rotary_dim after
    # every pair), so the smallest bad key is the first disagreement.
    order = torch.cat([_pair_index(layout, r), torch.arange(r // 2, r // 2 + head_dim - r)])
    first = None  # (key, call, which, flat index)
    largest = None  # (error, call, which, flat index)
    per_call = []
    for c, call in enumerate(calls):
        call_error, call_excess = 0.0, 0.0
        for which in (0, 1):
            excess = _excess(call.outputs[which], call.expected[which], call.allowed[which])
            error = (call.outputs[which] - call.expected[which]).abs()
            error = torch.where(torch.isfinite(error), error, torch.full_like(error, math.inf))
            bad = excess > 1
            if bool(bad.any()):
                key = call.positions[None, None, :, None] * head_dim + order  # (b, h, n, d)
                key = torch.where(bad, key, torch.full_like(key, torch.iinfo(torch.int64).max))
                flat = int(key.flatten().argmin())
                rank = (int(key.flatten()[flat]), c)
                if first is None or rank < first[0]:
                    first = (rank, c, which, flat)
            flat = int(error.flatten().argmax())
            if largest is None or float(error.flatten()[flat]) > largest[0]:
                largest = (float(error.flatten()[flat]), c, which, flat)
            call_error = max(call_error, float(error.max()))
            call_excess = max(call_excess, float(excess.max()))
        per_call.append((call_error, call_excess))

    lines = [f"fn disagrees with the reference {_describe_reference(reference)}."]
    if first is not None:
        _, c, which, flat = first
        call = calls[c]
        loc = _locate(call, which, flat, layout, r)
        lines += [
            f"First disagreement: {_where_words(loc, r)}, in the call with {call.describe()}:",
            f"    got {_values(call, loc, 'got')}, expected {_values(call, loc, 'expected')}; "
            f"error {fmt(_at(call.outputs, call.expected, which, flat))}, allowed "
            f"{fmt(float(call.allowed[which].flatten()[flat]))}.",
        ]
    if largest is not None:
        value, c, which, flat = largest
        loc = _locate(calls[c], which, flat, layout, r)
        lines.append(
            f"Largest error: {fmt(value)} at {_where_words(loc, r)} ({calls[c].describe()}); "
            f"allowed there {fmt(float(calls[c].allowed[which].flatten()[flat]))}."
        )
    lines.append("Per call, the largest error and the largest error / allowance:")
    for call, (error, excess) in zip(calls, per_call, strict=True):
        lines.append(
            f"    {call.window.describe()} ({_dtype_name(call.dtype)}): {fmt(error)}, "
            f"{fmt(excess)}" + ("" if excess > 1 else " (agrees)")
        )
    lines += _observations(reference, calls)
    lines += _diagnosis(reference, calls, options)
    lines.append(
        "Tolerance per coordinate: a |pair| (8 u + 2 u32 m w (ln(1/w) + 4)), the second term only "
        "with float32_angles=True; see help(posenc_ref.testing.assert_rope_equal)."
    )
    return "\n".join(lines)


def _at(got: tuple, expected: tuple, which: int, flat: int) -> float:
    value = float((got[which] - expected[which]).abs().flatten()[flat])
    return value if math.isfinite(value) else math.inf


def _describe_reference(reference: RotaryEmbedding) -> str:
    parts = [f"head_dim={reference.head_dim}"]
    if reference.rotary_dim != reference.head_dim:
        parts.append(f"rotary_dim={reference.rotary_dim}")
    parts += [f"base={reference.base:.10g}", f"layout={reference.layout!r}"]
    method = getattr(reference, "method", None)
    spec = getattr(reference, "spec", None)
    if spec is not None and getattr(spec, "rope_type", "default") != "default":
        parts.append(f"rope_type={spec.rope_type!r} from its config")
    elif method == "static":
        parts.append("scaling=ScaledFrequencies(...)")
    elif method is not None:
        params = ", ".join(
            f"{k}={v!r}"
            for k, v in reference.scaling_params.items()
            if not isinstance(v, (list, tuple, torch.Tensor))
        )
        parts.append(f"scaling={method!r} ({params})")
    if float(reference.attention_factor) != 1.0:
        parts.append(f"attention factor {fmt(float(reference.attention_factor))}")
    return "RotaryEmbedding(" + ", ".join(parts) + ")"


def _flat(call: _Call, which: int, loc: dict) -> int:
    shape = call.inputs[which].shape
    return ((loc["b"] * shape[1] + loc["h"]) * shape[2] + loc["t"]) * shape[3] + loc["j"]


def _observations(reference: RotaryEmbedding, calls: list[_Call]) -> list[str]:
    """Facts measured on the output, independent of any hypothesis."""
    layout, r = reference.layout, reference.rotary_dim
    notes = []
    wrong = {"q": False, "k": False}
    tail_changed = False
    bad_values = False
    for call in calls:
        for which, name in ((0, "q"), (1, "k")):
            excess = _excess(call.outputs[which], call.expected[which], call.allowed[which])
            wrong[name] |= bool((excess > 1).any())
            if r < reference.head_dim:
                tail = excess[..., r:]
                tail_changed |= bool((tail > 1).any())
            bad_values |= not bool(torch.isfinite(call.outputs[which]).all())
    if wrong["q"] != wrong["k"]:
        right, bad = ("q", "k") if wrong["k"] else ("k", "q")
        notes.append(
            f"Observed: {right} agrees with the reference everywhere; only {bad} does not."
        )
    if tail_changed:
        notes.append(
            f"Observed: coordinates past rotary_dim = {r} were changed; they should be copied."
        )
    if bad_values:
        notes.append("Observed: your output holds NaN or infinity.")
    # Norms: a rotation keeps each pair's norm, times the attention factor.
    ratios = []
    for call in calls:
        u, v = _pairs(call.inputs[0], layout, r)
        u2, v2 = _pairs(call.outputs[0], _output_layout(reference), r)
        ratios.append((torch.sqrt(u2 * u2 + v2 * v2) / torch.sqrt(u * u + v * v)).flatten())
    ratio = torch.cat(ratios)
    ratio = ratio[torch.isfinite(ratio)]
    if ratio.numel():
        lo, mid, hi = (float(torch.quantile(ratio, p)) for p in (0.01, 0.5, 0.99))
        a = float(reference.attention_factor)
        if hi - lo > 1e-3 * a:
            notes.append(
                f"Observed: pair norms (in the reference's layout) change by factors from "
                f"{fmt(lo)} to {fmt(hi)}: your fn does not rotate these pairs"
                + (f" (a rotation scales them by the attention factor {fmt(a)})" if a != 1 else "")
                + "."
            )
        elif abs(mid - a) > 1e-3 * a:
            notes.append(
                f"Observed: your fn scales every pair's norm by {fmt(mid)}; the reference by "
                f"its attention factor {fmt(a)}."
            )
    return notes


def _diagnosis(reference: RotaryEmbedding, calls: list[_Call], options: dict) -> list[str]:
    # With float32 angles refused, first ask whether accepting them would have passed.
    ref = _Hypothesis("reference", "", "", _reference_model(reference))
    if not options["float32_angles"] and _evaluate(ref, calls, options) <= 1:
        return [
            "Diagnosis (tested): float32 angles. Your output matches the reference within the "
            "float32-angle allowance: the angles are formed in float32 (as in HF transformers), "
            "and you asked for float64-accurate angles (float32_angles=False). Form "
            "position * inv_freq in float64 and cast cos/sin, or accept float32 angles."
        ]
    hypotheses = _hypotheses(reference, calls)
    for h in hypotheses:
        h.worst = _evaluate(h, calls, options)
    explained = _first_per_title([h for h in hypotheses if h.worst <= 1])
    tested = len(hypotheses)
    if not explained:
        combos = [
            _with_layout(h, _other(reference.layout))
            for h in hypotheses
            if h.model.layout == reference.layout and h.model.table_layout is None
        ]
        for h in combos:
            h.worst = _evaluate(h, calls, options)
        tested += len(combos)
        explained = _first_per_title([h for h in combos if h.worst <= 1])
        hypotheses += combos
    if explained:
        lines = [
            f"Diagnosis (tested: {tested} models of common bugs were run on the same inputs; "
            + ("this one reproduces" if len(explained) == 1 else "these reproduce")
            + " your output within the tolerance everywhere):"
        ]
        for h in explained:
            lines.append(f"    - {h.title}: {h.detail}.")
        return lines
    lines = [
        f"Diagnosis: none of the {tested} models of common bugs tested reproduces your output."
    ]
    reference_worst = _evaluate(ref, calls, options)
    closest = min(hypotheses, key=lambda h: h.worst)
    if math.isfinite(closest.worst) and closest.worst * 10 < reference_worst:
        lines.append(
            f"    Closest: {closest.title} ({closest.detail}); it brings the largest "
            f"error/allowance from {fmt(reference_worst)} down to {fmt(closest.worst)}, so it is "
            "part of the story but not all of it."
        )
    growth = _growth(calls)
    if growth:
        lines.append("    " + growth)
    return lines


def _first_per_title(hypotheses: list[_Hypothesis]) -> list[_Hypothesis]:
    # Several candidates of one kind can match (base 500000 and its fitted 500000.998): the
    # first one listed is the plainest.
    seen, kept = set(), []
    for h in hypotheses:
        if h.title not in seen:
            seen.add(h.title)
            kept.append(h)
    return kept


def _growth(calls: list[_Call]) -> str | None:
    """Say so when the error is within tolerance at small positions and grows after."""
    by_position = []
    for call in calls:
        for which in (0, 1):
            excess = _excess(call.outputs[which], call.expected[which], call.allowed[which])
            per_position = excess.flatten(0, 1).amax(dim=(0, 2))  # (n,)
            error = (call.outputs[which] - call.expected[which]).abs().flatten(0, 1)
            err_pos = error.amax(dim=(0, 2))
            for t in range(per_position.numel()):
                by_position.append(
                    (int(call.positions[t]), float(per_position[t]), float(err_pos[t]))
                )
    by_position.sort()
    first_bad = next((p for p, e, _ in by_position if e > 1), None)
    if first_bad is None or first_bad < 2:
        return None
    early = max(err for p, _, err in by_position if p < max(first_bad // 2, 1))
    late = max(err for p, _, err in by_position if p >= first_bad)
    last = by_position[-1]
    return (
        f"The error stays within tolerance up to position {first_bad - 1} and grows after it "
        f"(largest {fmt(early)} below position {max(first_bad // 2, 1)}, {fmt(late)} from "
        f"{first_bad} to {last[0]}): the signature of positions, frequencies or angles held in "
        "low precision."
    )


# --------------------------------------------------------------------------- public API


def _check_reference(reference: object) -> RotaryEmbedding:
    if not isinstance(reference, RotaryEmbedding):
        raise TypeError(
            "reference must be a posenc_ref.RotaryEmbedding (built directly, with scaling=..., "
            f"or from a model config), got {type(reference).__name__}"
        )
    return reference


def _check_fn(fn: object) -> RopeFn:
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(q, k, positions), got {type(fn).__name__}")
    return fn  # type: ignore[return-value]


def _guard(reference: RotaryEmbedding, call: _Call) -> None:
    """The float64 model of the reference must reproduce its own forward (a cheap self-check)."""
    n = min(16, call.positions.numel())
    twin = copy.deepcopy(reference).to("cpu")
    x = call.inputs[0][:1, :1, :n]
    positions = call.positions[:n]
    theirs, _ = twin(x, x, positions)
    ours = _predict(_reference_model(reference), x, positions, call.seq_len)
    if not torch.allclose(theirs, ours, rtol=1e-10, atol=1e-12):
        raise ValueError(
            f"reference {reference!r} rotates differently from its frequencies() and layout "
            "(a kind of module this check does not model); please report it"
        )


def assert_rope_equal(
    fn: RopeFn,
    reference: RotaryEmbedding,
    *,
    max_position: int | None = None,
    dtypes: Sequence[torch.dtype] | torch.dtype = (torch.float32,),
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> None:
    r"""Check a RoPE implementation against a reference, and say what is wrong when it differs.

    Explained on the site: [Check your implementation](check.md#check-rope).

    ``fn(q, k, positions) -> (q_rot, k_rot)`` is the call form of
    :meth:`posenc_ref.RotaryEmbedding.forward`: ``q`` and ``k`` are
    ``(batch, heads, seq_len, head_dim)``, ``positions`` a ``(seq_len,)`` int64 tensor of
    contiguous positions. Wrap other code in a lambda (transpose if it wants
    ``(batch, seq_len, heads, head_dim)``). For an M-RoPE reference this checks the text path
    (the three position rows equal); expand ``positions`` in your wrapper if your code wants
    ``(3, batch, seq_len)``. A reference whose ``output_layout`` differs from its ``layout``
    (DeepSeek-V3) is expected to write its result in that order.

    The kit chooses the inputs: random ``q`` and ``k`` (seeded) at three windows of positions,
    ``0..299`` (small positions, and 256/257, where bfloat16 positions collide), 128 positions
    around the reference's original context (where length-dependent methods switch; 4096 when it
    has none), and the last 128 up to ``max_position``, with batch and head counts that differ
    per window; windows are called in increasing order, so a stateful dynamic implementation
    (HF's) sees what a stateless one does. The expected output is computed in float64.

    Tolerance, per output coordinate of pair :math:`i` at position :math:`m`:

    .. math::

        a\,\lVert(u, v)\rVert\,\bigl(8u_x + 2u_{32}\,m\,\omega_i\,(\ln(1/\omega_i) + 4)\bigr)
        + \text{atol}

    with attention factor :math:`a`, :math:`(u, v)` the input pair, :math:`u_x` the unit
    roundoff of the input dtype (:math:`2^{-24}` for float32, :math:`2^{-8}` for bfloat16;
    ``rtol`` replaces :math:`8u_x`) and the second term the error of an angle formed in float32
    (the product's rounding and that of a float32 :math:`\omega_i`, doubled), dropped with
    ``float32_angles=False``. Coordinates past ``rotary_dim`` must be copied (one rounding).

    On failure the ``AssertionError`` shows the first disagreeing position and pair, the largest
    error, where the error is per window, what was observed (which of q and k is wrong, pair
    norms, changed pass-through coordinates), and the diagnosis: each common bug is a model run
    on the same inputs (the other pair layout, a table laid out for the other layout, positions
    off by one or ignored, no rotation, the other direction, another base (the common ones and
    one fitted from your output), frequencies indexed from 1, a missing or doubled attention
    factor, the scaling method or its length switch missing, ``rotary_dim`` ignored, positions,
    frequencies, angles or tables in bfloat16/float16), and the ones that reproduce your output
    within the same tolerance are named. If none does, the closest is named with how much of the
    error it accounts for.

    Parameters
    ----------
    fn
        The implementation under test: ``fn(q, k, positions) -> (q_rot, k_rot)``, same shapes
        and dtypes as ``q`` and ``k``.
    reference
        A :class:`~posenc_ref.RotaryEmbedding` (any layout, ``rotary_dim`` and scaling); it is
        not modified.
    max_position
        Largest position checked, ``>= 1``; default ``max(8 L, 131072)`` for original context
        :math:`L`. Lower it if your implementation has a fixed maximum length.
    dtypes
        Input dtypes to check, each in its own calls: float32 (default), float64, bfloat16,
        float16.
    float32_angles
        Accept the error of angles formed in float32 (default ``True``: HF transformers, Meta's
        Llama code, torchtune and most tutorials do this, and models were trained with it).
        ``False`` demands float64-accurate angles.
    rtol
        Allowed rounding error relative to the pair's norm, instead of 8 unit roundoffs of the
        input dtype (e.g. ``1e-3`` for a fused low-precision kernel).
    atol
        Absolute allowance added everywhere, ``>= 0``.
    seed
        Seed of the random inputs.
    device
        Where the inputs are made (default: the reference's device).

    Returns
    -------
    None
        When every coordinate agrees within the tolerance.

    Raises
    ------
    AssertionError
        When ``fn`` disagrees, returns the wrong type, shape or dtype, with the details above.

    Examples
    --------
    >>> import torch
    >>> from posenc_ref import RotaryEmbedding
    >>> reference = RotaryEmbedding(64, layout="half")
    >>> assert_rope_equal(reference, reference)  # a module is its own fn
    """
    fn = _check_fn(fn)
    reference = _check_reference(reference)
    if max_position is not None:
        max_position = check_int("max_position", max_position, minimum=1)
    dtypes = check_dtypes(dtypes)
    float32_angles = check_bool("float32_angles", float32_angles)
    rtol = check_optional_tolerance("rtol", rtol)
    atol = check_nonnegative_float("atol", atol)
    seed = check_seed(seed)
    device = reference.cos_cached.device if device is None else torch.device(device)

    generator = torch.Generator().manual_seed(seed)
    calls = []
    for window in _plan(reference, max_position):
        for dtype in dtypes:
            calls.append(_run_call(fn, window, dtype, reference.head_dim, generator, device))
    _guard(reference, calls[0])
    model = _reference_model(reference)
    failed = False
    for call in calls:
        call.expected = tuple(_predict(model, x, call.positions, call.seq_len) for x in call.inputs)
        call.allowed = tuple(
            _allowance(
                model,
                x,
                call.positions,
                call.seq_len,
                call.dtype,
                float32_angles=float32_angles,
                rtol=rtol,
                atol=atol,
            )
            for x in call.inputs
        )
        for got, expected, allowed in zip(call.outputs, call.expected, call.allowed, strict=True):
            failed |= bool((_excess(got, expected, allowed) > 1).any())
    if not failed:
        return None
    options = {
        "rtol": rtol,
        "atol": atol,
        "float32_angles": float32_angles,
        "attention_factor": float(reference.attention_factor),
    }
    raise AssertionError(_report(reference, calls, options))


def rope_error(
    fn: RopeFn,
    reference: RotaryEmbedding,
    positions: torch.Tensor,
    *,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> torch.Tensor:
    r"""Largest error of ``fn`` at each position, relative to the pair's norm (no verdict).

    Shown on the site: [the float32-angle error](check.md#check-hf).

    One call ``fn(q, k, positions)`` with random ``q`` and ``k`` of shape
    ``(1, 2, seq_len, head_dim)``; for each position, the largest
    :math:`|\text{got} - \text{expected}| / (a\,\lVert(u, v)\rVert)` over heads, q and k, and
    rotated coordinates, where the expected value is the reference's, in float64. Useful to see
    an error grow with the position.

    Parameters
    ----------
    fn
        ``fn(q, k, positions) -> (q_rot, k_rot)``, as for :func:`assert_rope_equal`.
    reference
        A :class:`~posenc_ref.RotaryEmbedding`.
    positions
        ``(seq_len,)`` integer tensor, ``>= 0``; the frequencies are those of a call whose
        largest position is ``positions.max()``.
    dtype
        Input dtype.
    seed
        Seed of the random inputs.

    Returns
    -------
    torch.Tensor
        ``(seq_len,)`` float64.
    """
    fn = _check_fn(fn)
    reference = _check_reference(reference)
    dtype = check_dtypes(dtype)[0]
    seed = check_seed(seed)
    if not isinstance(positions, torch.Tensor) or positions.dim() != 1:
        raise TypeError("positions must be a 1-D integer tensor (seq_len,)")
    if positions.is_floating_point() or positions.numel() == 0 or bool((positions < 0).any()):
        raise ValueError("positions must be a non-empty integer tensor with values >= 0")
    device = reference.cos_cached.device
    generator = torch.Generator().manual_seed(seed)
    head_dim = reference.head_dim
    n = positions.numel()
    q = torch.randn((1, 2, n, head_dim), generator=generator).to(device=device, dtype=dtype)
    k = torch.randn((1, 2, n, head_dim), generator=generator).to(device=device, dtype=dtype)
    with torch.no_grad():
        got = fn(q.clone(), k.clone(), positions.to(device).clone())
    seq_len = int(positions.max()) + 1
    model = _reference_model(reference)
    a = float(reference.frequencies(seq_len).attention_factor)
    r = reference.rotary_dim
    worst = torch.zeros(n, dtype=torch.float64)
    for x, out in zip((q, k), got, strict=True):
        x64 = x.to("cpu", torch.float64)
        expected = _predict(model, x64, positions.to("cpu"), seq_len)
        u, v = _pairs(x64, reference.layout, r)
        norm = torch.sqrt(u * u + v * v)[..., _pair_index(reference.layout, r)]
        error = (out.detach().to("cpu", torch.float64) - expected)[..., :r].abs() / (a * norm)
        worst = torch.maximum(worst, error.amax(dim=(0, 1, 3)))
    return worst
