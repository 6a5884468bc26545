r"""``assert_axial_rope_equal``: a vision tower's 2-D RoPE on patch grids, with diagnoses.

Explained on the site: [patch grids](check.md#check-axial).

The kit makes a few grids of patches (a small non-square one, one taller than wide, a larger
one), random queries and keys per patch, and calls the user's ``fn(q, k, (height, width))`` as
a vision tower calls its rotary code: with the grid, not with positions, since the tower makes
them itself. The expected output is the axial RoPE of the scheme (:mod:`posenc_ref.axial`) for
the patches in the order the reference says (row-major, or the 2 x 2 merge blocks of Qwen2-VL's
tower), in float64; the tolerance and the report are those of
:func:`~posenc_ref.testing.assert_rope_equal`, and the bug models are a vision tower's: the
other pair layout, rows and columns swapped, the other frequency split, the other patch order,
grid indices from 1, another base, no rotation, the other direction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import torch

from .._checks import check_base, check_bool, check_int, check_layout
from ..axial import SCHEMES, axial_inv_freq, axial_pair_axes, grid_positions
from ..device import check_device
from ..rope_scaling import ScaledFrequencies
from ._arrays import call_qk
from ._bugs import COMMON_BASES
from ._calls import Call, CallPlan
from ._common import check_dtypes, check_nonnegative_float, check_optional_tolerance, check_seed
from ._model import Model, other_layout, predict
from ._report import Subject, rope_report
from ._setting import Hypothesis, fixed
from ._tolerance import excess_ratio, frequency_steps, rope_allowance

__all__ = ["assert_axial_rope_equal"]

GRIDS = ((4, 6), (8, 4), (16, 12))  # (height, width) in patches, multiples of 2

AxialFn = Callable[[torch.Tensor, torch.Tensor, tuple[int, int]], Sequence[torch.Tensor]]


def _scheme_model(scheme: str, base: float, head_dim: int, layout: str) -> Model:
    freqs = axial_inv_freq(head_dim, base, scheme)
    return Model(
        layout,
        head_dim,
        fixed(ScaledFrequencies(freqs, 1.0)),
        base=base,
        pair_rows=axial_pair_axes(head_dim, scheme),
        plain=freqs,
        steps=frequency_steps(freqs),
    )


def _grid_plan(height: int, width: int, scheme: str, merge_size: int, batch: int) -> CallPlan:
    ours = grid_positions(height, width, scheme, merge_size=merge_size).T  # (2, n)
    other = 2 if merge_size == 1 else 1
    variants = {
        "other_order": grid_positions(height, width, scheme, merge_size=other).T,
        # the grid read as (width, height): patch p at row p // height, column p % height
        "transposed": grid_positions(width, height, scheme, merge_size=merge_size).T,
        "grid": torch.tensor([height, width]),
    }
    return CallPlan("grid", ours, batch, 2, 2, rows=True, variants=variants)


def _candidates(
    scheme: str, base: float, head_dim: int, merge_size: int, layout: str
) -> list[Hypothesis]:
    ref = _scheme_model(scheme, base, head_dim, layout)
    out = []

    def add(key: str, title: str, detail: str, **changes) -> None:
        out.append(Hypothesis(key, title, detail, dataclasses.replace(ref, **changes)))

    other = other_layout(ref.layout)
    add(
        "layout",
        "the other pair layout",
        f"your fn rotates the pairs of the {other} layout; the reference rotates {ref.layout} "
        f"pairs (HF's {scheme!r} tower rotates {SCHEMES[scheme].layout} pairs; "
        "mistral-inference's Pixtral rotates interleaved pairs, for Mistral's own weights: "
        "pass layout= to check it against its own)",
        layout=other,
    )
    add(
        "transposed",
        "the patch grid transposed",
        "your fn lays the patches out for a grid of width x height: patch p at row "
        "p // height and column p % height, where it is row p // width, column p % width (a "
        "meshgrid over (width, height), or the grid's sizes read in the other order)",
        positions=lambda c: c.plan.variants["transposed"],
    )
    add(
        "axes",
        "rows and columns swapped",
        "your fn turns the pairs the scheme gives the row by the column coordinate, and the "
        "reverse (rows_first and columns_first mixed up, or (x, y) positions read as (y, x))",
        pair_rows=1 - ref.pair_rows,
    )
    for name in SCHEMES:
        freqs = axial_inv_freq(head_dim, base, name)
        if not torch.allclose(freqs, ref.plain) and SCHEMES[name].grid is SCHEMES[scheme].grid:
            add(
                f"frequencies_{name}",
                "the other frequency split between the axes",
                f"your fn uses the frequencies of the scheme {name!r} "
                f"({SCHEMES[name].frequencies.__name__})",
                frequencies=fixed(ScaledFrequencies(freqs, 1.0)),
                plain=freqs,
                steps=frequency_steps(freqs),
            )
    order = (
        "row-major order instead of 2 x 2 merge blocks"
        if merge_size > 1
        else "2 x 2 merge blocks instead of row-major order"
    )
    add(
        "patch_order",
        f"patches in {order}",
        "your fn lays out the patch positions in the other order than the sequence holds the "
        "patches (Qwen2-VL's vision tower takes them in merge blocks: "
        "posenc_ref.axial.grid_positions(..., merge_size=2), transformers' "
        "get_vision_position_ids)",
        positions=lambda c: c.plan.variants["other_order"],
    )
    for shift, words in ((1, "from 1"), (-1, "from 0")):
        add(
            f"grid_{shift:+d}",
            f"grid indices counted {words}",
            f"your fn numbers rows and columns {words} where the scheme {scheme!r} does not",
            positions=lambda c, d=shift: c.positions + d,
        )
    for candidate in COMMON_BASES:
        if abs(candidate / base - 1) > 1e-9:
            freqs = axial_inv_freq(head_dim, candidate, scheme)
            add(
                f"base_{candidate:g}",
                "a different base",
                f"your fn uses base {candidate:.10g} where the reference has {base:.10g}",
                frequencies=fixed(ScaledFrequencies(freqs, 1.0)),
                base=candidate,
                plain=freqs,
            )
    add(
        "identity",
        "no rotation at all",
        "your fn returns q and k unrotated",
        positions=lambda c: torch.zeros_like(c.positions),
    )
    add(
        "direction",
        "the rotation in the other direction",
        "your fn rotates by minus the angle",
        sign=-1.0,
    )
    return out


def assert_axial_rope_equal(
    fn: AxialFn,
    *,
    scheme: str,
    head_dim: int,
    base: float,
    merge_size: int = 1,
    layout: str | None = None,
    dtypes: Sequence[torch.dtype] | torch.dtype = (torch.float32,),
    float32_angles: bool = True,
    rtol: float | None = None,
    atol: float = 0.0,
    seed: int = 0,
    device: torch.device | str | None = None,
) -> None:
    r"""Check a vision tower's axial RoPE on patch grids, and say what is wrong when it differs.

    Explained on the site: [patch grids](check.md#check-axial).

    ``fn(q, k, (height, width)) -> (q_rot, k_rot)``: ``q`` and ``k`` are
    ``(batch, heads, height * width, head_dim)``, the patches of one image in the order the
    reference says; ``fn`` makes the patch positions itself, as a vision tower does. The
    reference is the axial RoPE of ``scheme`` (a key of :data:`posenc_ref.axial.SCHEMES`) with
    the patches row-major (``merge_size=1``) or in ``merge_size x merge_size`` blocks
    (:func:`posenc_ref.axial.merge_block_order`; Qwen2-VL's tower: 2). Grids of 4 x 6, 8 x 4
    and 16 x 12 patches are checked. The tolerance and the message are those of
    :func:`~posenc_ref.testing.assert_rope_equal`.

    Parameters
    ----------
    fn
        The implementation under test.
    scheme
        ``"qwen2_vl"``, ``"pixtral"``, ``"llama4"``, ``"sam2"`` or ``"dinov3"``.
    head_dim
        Rotated width, a multiple of 4 (the whole head: vision towers rotate all of it).
    base
        The base :math:`n` (the vision config's ``rope_theta``; Qwen2-VL's tower: 10000).
    merge_size
        1 (row-major) or the side of the merge blocks (``spatial_merge_size``), dividing 4.
    layout
        The pair layout your code rotates (default: the scheme's, as HF's tower has it).
        mistral-inference's Pixtral rotates interleaved pairs for Mistral's own weights, which
        HF's conversion permutes for its half layout: check it with ``layout="interleaved"``.
    dtypes, float32_angles, rtol, atol, seed, device
        As for :func:`~posenc_ref.testing.assert_rope_equal`.

    Raises
    ------
    AssertionError
        When ``fn`` disagrees, with the diagnosis.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(q, k, (height, width)), got {fn!r:.60}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {tuple(SCHEMES)}, got {scheme!r}")
    head_dim = check_int("head_dim", head_dim, minimum=4)
    if head_dim % 4:
        raise ValueError(f"head_dim must be a multiple of 4 (two axes of pairs), got {head_dim}")
    base = check_base("base", base)
    layout = SCHEMES[scheme].layout if layout is None else check_layout("layout", layout)
    merge_size = check_int("merge_size", merge_size, minimum=1)
    if 4 % merge_size:
        raise ValueError(f"merge_size must be 1, 2 or 4 (it divides the grids), got {merge_size}")
    dtypes = check_dtypes(dtypes)
    float32_angles = check_bool("float32_angles", float32_angles)
    rtol, atol = check_optional_tolerance("rtol", rtol), check_nonnegative_float("atol", atol)
    generator = torch.Generator().manual_seed(check_seed(seed))
    device = torch.device("cpu") if device is None else check_device(device, "device")

    model = _scheme_model(scheme, base, head_dim, layout)
    calls, failed = [], False
    for height, width in GRIDS:
        plan = _grid_plan(height, width, scheme, merge_size, batch=1)
        for dtype in dtypes:
            shape = (plan.batch, 2, plan.n, head_dim)
            q = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
            k = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
            where = f"(a {height} x {width} grid, q and k of shape {shape})"
            outputs = call_qk(
                lambda q, k, _, g=(height, width): fn(q, k, g), q, k, plan.positions, where
            )
            call = Call(
                plan, dtype, (q.to("cpu", torch.float64), k.to("cpu", torch.float64)), outputs
            )
            call.expected = tuple(predict(model, x, call) for x in call.inputs)
            call.allowed = tuple(
                rope_allowance(model, x, call, float32_angles=float32_angles, rtol=rtol, atol=atol)
                for x in call.inputs
            )
            failed |= any(
                bool((excess_ratio(*t) > 1).any())
                for t in zip(call.outputs, call.expected, call.allowed, strict=True)
            )
            calls.append(call)
    if not failed:
        return None
    order = "row-major" if merge_size == 1 else f"{merge_size} x {merge_size} merge blocks"
    subject = Subject(
        model,
        head_dim,
        f"axial RoPE (scheme={scheme!r}, head_dim={head_dim}, base={base:.10g}, "
        f"layout={layout!r}, patches in {order})",
        1.0,
        model.layout,
        lambda calls: _candidates(scheme, base, head_dim, merge_size, layout),
    )
    options = {
        "rtol": rtol,
        "atol": atol,
        "float32_angles": float32_angles,
        "attention_factor": 1.0,
    }
    raise AssertionError(rope_report(subject, calls, options))
