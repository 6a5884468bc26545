r"""``assert_sinusoidal_equal``: a sinusoidal table against the definition, with diagnoses.

The same method as the RoPE check: compare every entry with an explicit allowance, and on
failure run models of the common mistakes (column layout, base, positions, frequency index,
precision) on the same positions; the ones that reproduce the table are the diagnosis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .._checks import check_base, check_bool, check_dim, check_int
from ._bugs import COMMON_BASES, _fitted_base
from ._common import (
    ANGLE_MARGIN,
    ANGLE_ULPS,
    OUTPUT_ROUNDINGS,
    UNIT_ROUNDOFF,
    as_float64,
    check_nonnegative_float,
    check_optional_tolerance,
    fmt,
    nice_number,
)

__all__ = ["assert_sinusoidal_equal"]

DEFAULT_POSITIONS = 8192

# Where sin and cos go, per column j of a width-d table (i = pair index):
LAYOUTS = {
    "interleaved": "sin in even columns, cos in odd ones (the paper, PyTorch's tutorial)",
    "concatenated": "[sin | cos]: sin(m w_i) in column i, cos in column i + d/2 (fairseq, FSMT)",
    "concatenated_cos_first": "[cos | sin]: cos in the first half, sin in the second",
    "swapped": "cos in even columns and sin in odd ones",
}


@dataclass(frozen=True)
class _Table:
    """A sinusoidal table, correct or deliberately wrong, evaluated in float64.

    ``column_freqs(dim)`` gives each column's frequency ``(dim,)`` in the interleaved sense
    (column ``j`` of pair ``j // 2``); the layout then moves sin and cos; ``shift`` is added to
    the positions; ``precision`` is ``(positions, frequencies, angles, values)`` dtypes for a
    float32 pipeline with something held lower.
    """

    layout: str
    column_freqs: Callable[[int], torch.Tensor]
    shift: float = 0.0
    precision: tuple[torch.dtype, ...] | None = None


def _pair_freqs(base: float, *, from_one: bool = False, denominator: float | None = None):
    def column_freqs(dim: int) -> torch.Tensor:
        i = torch.arange(dim // 2, dtype=torch.float64) + (1 if from_one else 0)
        exponent = i / denominator if denominator else 2 * i / dim
        return (base**-exponent).repeat_interleave(2)

    return column_freqs


def _column_index_freqs(base: float, scale: float):
    # The circulated loop that raises base to (scale * j / d) with the *column* index j.
    def column_freqs(dim: int) -> torch.Tensor:
        j = torch.arange(dim, dtype=torch.float64)
        return base ** (-scale * j / dim)

    return column_freqs


def _evaluate_table(model: _Table, positions: torch.Tensor, dim: int) -> torch.Tensor:
    freqs = model.column_freqs(dim)  # (dim,) interleaved sense: column 2i, 2i+1 -> pair i
    pos = positions.to(torch.float64) + model.shift
    if model.precision is None:
        angles = pos[:, None] * freqs
        sin, cos = torch.sin(angles), torch.cos(angles)
    else:
        p_dt, w_dt, a_dt, t_dt = model.precision
        p = pos.to(p_dt).to(torch.float32)
        w = freqs.to(torch.float32).to(w_dt).to(torch.float32)
        angles = (p[:, None] * w).to(a_dt).to(torch.float32)
        sin = torch.sin(angles).to(t_dt).to(torch.float64)
        cos = torch.cos(angles).to(t_dt).to(torch.float64)
    # Interleaved: sin of pair i in column 2i, cos in 2i + 1.
    even, odd = sin[:, 0::2], cos[:, 1::2]
    if model.layout == "interleaved":
        return torch.stack([even, odd], dim=-1).flatten(-2)
    if model.layout == "swapped":
        return torch.stack([cos[:, 0::2], sin[:, 1::2]], dim=-1).flatten(-2)
    if model.layout == "concatenated":
        return torch.cat([even, odd], dim=-1)
    return torch.cat([odd, even], dim=-1)  # concatenated, cos first


def _placed_freqs(model: _Table, dim: int) -> torch.Tensor:
    """The frequency each output column of the model's table is evaluated at, ``(dim,)``."""
    freqs = model.column_freqs(dim)  # interleaved sense
    if model.layout in ("interleaved", "swapped"):
        return freqs
    return torch.cat([freqs[0::2], freqs[1::2]])  # concatenated: [sin pairs | cos pairs]


def _allowance(
    model: _Table,
    positions: torch.Tensor,
    dim: int,
    dtype: torch.dtype,
    *,
    float32_angles: bool,
    rtol: float | None,
    atol: float,
    step: torch.dtype | None = None,
) -> torch.Tensor:
    """Allowed error per entry: ``8 u(dtype) + 2 u32 m w (ln(1/w) + 4) + atol`` (values <= 1).

    ``w`` is the frequency the entry is evaluated at in the model; ``step`` adds one rounding
    step of a low-precision model's rounded quantity.
    """
    omega = _placed_freqs(model, dim).clamp(min=1e-300)
    m = (positions.to(torch.float64) + model.shift).abs()[:, None]
    base_error = rtol if rtol is not None else OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[dtype]
    allowed = torch.full((positions.numel(), dim), base_error, dtype=torch.float64)
    if float32_angles:
        angle = ANGLE_MARGIN * UNIT_ROUNDOFF[torch.float32] * m * omega
        allowed = allowed + angle * (torch.log(1 / omega).clamp(min=0) + ANGLE_ULPS)
    if step is not None:
        allowed = allowed + 3 * UNIT_ROUNDOFF[step] * (1 + m * omega)
    return allowed + atol


def _models(base: float, dim: int, fitted: list[float]) -> list[tuple[str, str, _Table]]:
    out = []
    plain = _pair_freqs(base)
    for layout, words in LAYOUTS.items():
        if layout != "interleaved":
            out.append(
                (
                    f"the {layout.replace('_', ' ')} layout",
                    f"your table has {words}",
                    _Table(layout, plain),
                )
            )
    for shift in (1.0, -1.0):
        out.append(
            (
                "positions off by one",
                f"row m of your table holds position m {'+' if shift > 0 else '-'} 1"
                + (" (positions counted from 1)" if shift > 0 else ""),
                _Table("interleaved", plain, shift=shift),
            )
        )
    out.append(
        (
            "frequencies indexed from 1",
            "your table uses w_i = base^(-2(i+1)/d): the first pair turns at "
            f"{fmt(base ** (-2 / dim))} rad per position instead of 1",
            _Table("interleaved", _pair_freqs(base, from_one=True)),
        )
    )
    out.append(
        (
            "the column index in the exponent",
            "your table uses base^(-j/d) with the column index j, so cos columns (odd j) get "
            "base^(-(2i+1)/d) instead of their pair's base^(-2i/d)",
            _Table("interleaved", _column_index_freqs(base, 1.0)),
        )
    )
    out.append(
        (
            "the column index in the exponent",
            "your table uses base^(-2j/d) with the column index j (the pair index i belongs "
            "there: sin column 2i should use base^(-2i/d), not base^(-4i/d))",
            _Table("interleaved", _column_index_freqs(base, 2.0)),
        )
    )
    if dim >= 4:
        out.append(
            (
                "fairseq's frequencies",
                "your table uses w_i = base^(-i/(d/2 - 1)) (fairseq and HF FSMT: the slowest "
                "pair exactly 1/base) instead of base^(-2i/d)",
                _Table("interleaved", _pair_freqs(base, denominator=dim / 2 - 1)),
            )
        )
    seen = {base}
    for candidate in [*fitted, *COMMON_BASES]:
        if candidate in seen or any(abs(candidate / s - 1) < 1e-9 for s in seen):
            continue
        seen.add(candidate)
        out.append(
            (
                "a different base",
                f"your table uses base {candidate:.10g} where the reference has {base:.10g}",
                _Table("interleaved", _pair_freqs(candidate)),
            )
        )
    f32, bf16, f16 = torch.float32, torch.bfloat16, torch.float16
    for what, slot in (("positions", 0), ("frequencies", 1), ("angles", 2), ("values", 3)):
        for low in (bf16, f16):
            precision = [f32, f32, f32, f32]
            precision[slot] = low
            name = str(low).replace("torch.", "")
            out.append(
                (
                    f"{what} in {name}",
                    f"your table holds the {what} in {name}"
                    + (
                        " (above 256 bfloat16 positions step by 2; float16 overflows past 65504)"
                        if what == "positions"
                        else ""
                    ),
                    _Table("interleaved", plain, precision=tuple(precision)),
                )
            )
    return out


def _fit(table: torch.Tensor, positions: torch.Tensor, layout: str) -> float | None:
    rows = torch.nonzero(positions == 1).flatten()
    if not rows.numel():
        return None
    row = table[int(rows[0])]
    d = row.numel()
    if layout == "interleaved":
        sin, cos = row[0::2], row[1::2]
    else:
        sin, cos = row[: d // 2], row[d // 2 :]
    fitted = _fitted_base(torch.atan2(sin, cos), d)
    return None if fitted is None else fitted[0]


def assert_sinusoidal_equal(
    table_or_fn: object,
    *,
    dim: int | None = None,
    base: float = 10000.0,
    num_positions: int | None = None,
    first_position: int = 0,
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
) -> None:
    r"""Check a sinusoidal position table against the definition, with a diagnosis on failure.

    Explained on the site: [the sinusoidal table](check.md#check-sinusoidal).

    Row :math:`r` must hold position :math:`m = r + \text{first\_position}`, with
    :math:`PE[m, 2i] = \sin(m\,\omega_i)` and :math:`PE[m, 2i+1] = \cos(m\,\omega_i)`,
    :math:`\omega_i = \text{base}^{-2i/d}`. Each entry may differ by
    :math:`8u + 2u_{32}\,m\,\omega_i(\ln(1/\omega_i) + 4) + \text{atol}` (:math:`u` the unit
    roundoff of the table's dtype, ``rtol`` replacing :math:`8u`; the second term, float32
    angles, dropped with ``float32_angles=False``).

    On failure the message names the first disagreeing row and column, the largest error, and
    the models of common mistakes that reproduce the table: the ``[sin | cos]`` concatenated
    layout (or ``[cos | sin]``, or cos and sin swapped), positions off by one, another base
    (the common ones and one fitted from the table), frequencies indexed from 1, the column index
    in the exponent, fairseq's ``base^(-i/(d/2-1))`` frequencies, and positions, frequencies,
    angles or values in bfloat16/float16 (also combined with the concatenated layout).

    Parameters
    ----------
    table_or_fn
        A tensor or NumPy array ``(num_positions, dim)``; dimensions of size 1 are dropped, so a
        PyTorch-tutorial buffer ``(max_len, 1, dim)`` or ``(1, max_len, dim)`` works. Or a
        function ``fn(num_positions)`` returning one.
    dim
        Expected width (positive, even); default the table's last dimension.
    base
        The reference's base, finite and > 1.
    num_positions
        Rows to ask a function for (default 8192); for a table, its number of rows (which
        ``num_positions`` may only lower).
    first_position
        The position of row 0 (``>= 0``; fairseq-style tables start at ``padding_idx + 1``).
    float32_angles
        Accept the error of angles formed in float32 (default ``True``, as in PyTorch's tutorial
        code).
    rtol
        Allowed rounding error per entry instead of 8 unit roundoffs of the table's dtype.
    atol
        Absolute allowance added everywhere, ``>= 0``.

    Raises
    ------
    AssertionError
        When the table disagrees, or has the wrong shape.

    Examples
    --------
    >>> from posenc_ref import sinusoidal
    >>> assert_sinusoidal_equal(sinusoidal(128, 16))
    """
    base = check_base("base", base)
    first_position = check_int("first_position", first_position)
    float32_angles = check_bool("float32_angles", float32_angles)
    rtol = check_optional_tolerance("rtol", rtol)
    atol = check_nonnegative_float("atol", atol)
    if dim is not None:
        dim = check_dim("dim", dim)
    if num_positions is not None:
        num_positions = check_int("num_positions", num_positions, minimum=1)
    if callable(table_or_fn):
        raw = table_or_fn(num_positions or DEFAULT_POSITIONS)
    else:
        raw = table_or_fn
    dtype = _dtype_of(raw)
    table = as_float64(raw, "table")
    shape = tuple(table.shape)
    table = table.reshape([s for s in shape if s != 1] or [1])
    if table.dim() == 1 and dim is not None and table.numel() == dim:
        table = table[None]
    if table.dim() != 2:
        raise AssertionError(
            f"the table must be (num_positions, dim) once dimensions of size 1 are dropped, got "
            f"shape {shape}"
        )
    if dim is not None and table.shape[1] != dim:
        hint = " (it looks transposed: rows are positions)" if table.shape[0] == dim else ""
        raise AssertionError(f"the table has {table.shape[1]} columns, expected dim={dim}{hint}")
    dim = table.shape[1]
    if dim % 2:
        raise AssertionError(
            f"the table has an odd width {dim}: the sinusoidal table pairs sin and cos columns, "
            "so dim must be even"
        )
    if num_positions is not None:
        if num_positions > table.shape[0]:
            raise AssertionError(
                f"the table has {table.shape[0]} rows, fewer than num_positions={num_positions}"
            )
        table = table[:num_positions]
    positions = torch.arange(first_position, first_position + table.shape[0])
    reference = _Table("interleaved", _pair_freqs(base))
    expected = _evaluate_table(reference, positions, dim)
    allowed = _allowance(
        reference, positions, dim, dtype, float32_angles=float32_angles, rtol=rtol, atol=atol
    )
    excess = _ratio(table, expected, allowed)
    if not bool((excess > 1).any()):
        return None
    raise AssertionError(
        _report(
            table,
            expected,
            allowed,
            excess,
            positions,
            dim,
            base,
            dtype,
            rtol,
            atol,
            float32_angles,
        )
    )


def _dtype_of(raw: object) -> torch.dtype:
    """The torch dtype whose rounding the table carries (NumPy dtypes mapped by name)."""
    if isinstance(raw, torch.Tensor):
        return raw.dtype if raw.dtype in UNIT_ROUNDOFF else torch.float64
    name = str(getattr(raw, "dtype", "float64"))
    return {"float32": torch.float32, "float16": torch.float16}.get(name, torch.float64)


def _ratio(got: torch.Tensor, expected: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    error = (got - expected).abs()
    ratio = error / allowed
    ratio.masked_fill_(error == 0, 0.0)
    if not (bool(torch.isfinite(got).all()) and bool(torch.isfinite(expected).all())):
        ratio.masked_fill_(~torch.isfinite(got) & ~torch.isfinite(expected), 0.0)
    return torch.nan_to_num_(ratio, nan=math.inf, posinf=math.inf)


def _sample_rows(n: int) -> torch.Tensor:
    """Rows the models are first tried on: the first 300, 256 spread evenly, the last 128."""
    first, spread = torch.arange(min(n, 300)), torch.linspace(0, n - 1, 256).long()
    rows = torch.cat([first, spread, torch.arange(max(0, n - 128), n)])
    return torch.unique(rows)


def _column_words(j: int) -> str:
    return f"column {j} ({'sin' if j % 2 == 0 else 'cos'} of pair {j // 2})"


def _report(table, expected, allowed, excess, positions, dim, base, dtype, rtol, atol, f32):
    bad = torch.nonzero(excess > 1)
    row, col = (int(v) for v in bad[0])  # row-major: smallest position, then column
    error = (table - expected).abs().nan_to_num(nan=math.inf)
    flat = int(error.flatten().argmax())
    lr, lc = divmod(flat, dim)
    lines = [
        f"the table disagrees with the sinusoidal encoding (dim={dim}, base={base:.10g}).",
        f"First disagreement: position {int(positions[row])}, {_column_words(col)}: got "
        f"{float(table[row, col]):.6g}, expected {float(expected[row, col]):.6g} (allowed error "
        f"{fmt(float(allowed[row, col]))}).",
        f"Largest error: {fmt(float(error[lr, lc]))} at position {int(positions[lr])}, "
        f"{_column_words(lc)}.",
        f"Entries that disagree: {bad.shape[0]} of {table.numel()}.",
    ]
    reference = _Table("interleaved", _pair_freqs(base))
    if not f32 and _explains(reference, table, positions, dim, dtype, rtol, atol):
        lines.append(
            "Diagnosis (tested): float32 angles. Your table matches within the float32-angle "
            "allowance: its angles are formed in float32, and you asked for float64-accurate "
            "angles (float32_angles=False)."
        )
        return "\n".join(lines)
    fitted = []
    for layout in ("interleaved", "concatenated"):
        value = _fit(table, positions, layout)
        if value is not None and math.isfinite(value) and 1 < value < 1e12:
            fitted += [nice_number(value, d) for d in (1, 2, 3, 4, 5, 6)] + [value]
    # Models are tried on a sample of rows, and confirmed on every row. A model that matches
    # the reference on these positions (bfloat16 positions below 256) cannot be told apart from
    # it: not tested.
    rows = _sample_rows(table.shape[0])

    def explains(model: _Table) -> bool:
        return _explains(model, table[rows], positions[rows], dim, dtype, rtol, atol) and (
            _explains(model, table, positions, dim, dtype, rtol, atol)
        )

    models = [
        (title, detail, model)
        for title, detail, model in _models(base, dim, fitted)
        if not _explains(model, expected[rows], positions[rows], dim, torch.float64, rtol, atol)
    ]
    explained = [(title, detail) for title, detail, model in models if explains(model)]
    tested = len(models)
    if not explained:  # the concatenated layout together with one other mistake
        for title, detail, model in models:
            if model.layout != "interleaved":
                continue
            combined = _Table("concatenated", model.column_freqs, model.shift, model.precision)
            tested += 1
            if explains(combined):
                explained.append((f"the concatenated layout and {title}", detail))
    seen, unique = set(), []
    for title, detail in explained:
        if title not in seen:
            seen.add(title)
            unique.append((title, detail))
    if unique:
        lines.append(
            f"Diagnosis (tested: {tested} models of common mistakes were evaluated at the same "
            "positions; "
            + ("this one reproduces" if len(unique) == 1 else "these reproduce")
            + " your table within the tolerance):"
        )
        lines += [f"    - {title}: {detail}." for title, detail in unique]
    else:
        lines.append(
            f"Diagnosis: none of the {tested} models of common mistakes tested reproduces your "
            "table."
        )
    lines.append(
        "Tolerance per entry: 8 u + 2 u32 m w (ln(1/w) + 4) + atol, the second term only with "
        "float32_angles=True; see help(posenc_ref.testing.assert_sinusoidal_equal)."
    )
    return "\n".join(lines)


def _explains(model, table, positions, dim, dtype, rtol, atol) -> bool:
    predicted = _evaluate_table(model, positions, dim)
    allowed = _allowance(model, positions, dim, dtype, float32_angles=True, rtol=rtol, atol=atol)
    inside = _ratio(table, predicted, allowed) <= 1
    if bool(inside.all()):
        return True
    if model.precision is None:
        return False
    low = min(model.precision, key=lambda d: -UNIT_ROUNDOFF[d])
    stepped = _allowance(
        model, positions, dim, dtype, float32_angles=True, rtol=rtol, atol=atol, step=low
    )
    within_step = bool((_ratio(table, predicted, stepped) <= 1).all())
    return within_step and float(inside.double().mean()) >= 0.99
