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

The steps live in their own modules: ``_plan.py`` and ``_tolerance.py`` (the inputs and the
allowance), ``_model.py`` (the float64 model of an implementation), ``_facts.py`` (what is
measured on a failed output), ``_bugs.py`` and the ``_bugs_*.py`` rows (the bugs as models, each
with its example), ``_report.py`` (the message), ``_failures.py`` (an exception raised by the
user's function, and its table's length). Functions of other array libraries and other calling
conventions come in through the adapters of ``_adapters.py``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch

from .._checks import check_bool, check_int
from ..device import check_device
from ..rope import RotaryEmbedding
from ._arrays import FnRaised, RopeFn
from ._bugs import candidate_models
from ._calls import Call, CallPlan
from ._common import (
    check_dtypes,
    check_nonnegative_float,
    check_optional_tolerance,
    check_seed,
    fmt,
)
from ._failures import last_working_position, raised_message
from ._model import pair_index, pair_parts, predict, reference_model, written_layout
from ._plan import (
    DEFAULT_PATTERNS,
    LARGEST_POSITION,
    PatternError,
    Plan,
    check_patterns,
    plan_calls,
    run_call,
)
from ._report import Subject, rope_report
from ._tolerance import rope_allowance

__all__ = ["assert_rope_equal", "rope_error", "RopeFn"]


def check_reference(reference: object) -> RotaryEmbedding:
    if not isinstance(reference, RotaryEmbedding):
        raise TypeError(
            "reference must be a posenc_ref.RotaryEmbedding (built directly, with scaling=..., "
            f"or from a model config), got {type(reference).__name__}"
        )
    return reference


def check_fn(fn: object) -> RopeFn:
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(q, k, positions), got {type(fn).__name__}")
    return fn  # type: ignore[return-value]


def check_kit_device(device: object, reference: RotaryEmbedding) -> torch.device:
    """Where the inputs are made: ``device``, else the reference's (never ``meta``)."""
    if device is None:
        device = reference.cos_cached.device
    else:
        device = check_device(device, "device")
    if device.type == "meta":
        raise ValueError("device='meta' holds no values to compare; use 'cpu' or a GPU")
    return device


def rope_subject(reference: RotaryEmbedding) -> Subject:
    """A :class:`~posenc_ref.RotaryEmbedding` as the subject of a report."""
    return Subject(
        reference_model(reference),
        reference.head_dim,
        describe_reference(reference),
        float(reference.attention_factor),
        written_layout(reference),
        lambda calls: candidate_models(reference, calls),
    )


def describe_reference(reference: RotaryEmbedding) -> str:
    """The reference in a report: its widths, base, layout, scaling and attention factor."""
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


def guard_reference(reference: RotaryEmbedding, call: Call) -> None:
    """The float64 model of the reference must reproduce its own forward (a cheap self-check)."""
    n = min(16, call.n)
    twin = copy.deepcopy(reference).to("cpu")
    plan = CallPlan(call.kind, call.positions[..., :n], 1, 1, 1, rows=call.rows)
    x = call.inputs[0][:1, :1, :n]
    small = Call(plan, torch.float64, (x, x), (x, x))
    theirs, _ = twin(x, x, plan.positions)
    ours = predict(reference_model(reference), x, small)
    if not torch.allclose(theirs, ours, rtol=1e-10, atol=1e-12):
        raise ValueError(
            f"reference {reference!r} rotates differently from its frequencies() and layout "
            "(a kind of module this check does not model); please report it"
        )


def plan_for(
    fn: RopeFn,
    reference: RotaryEmbedding,
    max_position: int | None,
    patterns: tuple[str, ...],
    default: tuple[str, ...],
) -> Plan:
    """The calls for ``fn``: the patterns asked for, those its adapter adds, those it lacks.

    A pattern the adapter's convention cannot express (``unsupported``) is an error when it was
    asked for, and a note in the report when it was only in the default list.
    """
    lacking = tuple(getattr(fn, "unsupported", ()))
    asked = [p for p in patterns if p in lacking and p not in default]
    if asked:
        raise PatternError(
            f"patterns {asked} cannot be made through {type(fn).__name__}: its calling convention "
            f"has no {' or '.join(asked)} call (a cos/sin table has one row per position, no "
            "M-RoPE rows); leave it out"
        )
    added = tuple(getattr(fn, "patterns", ()))
    kept = tuple(p for p in dict.fromkeys(patterns + added) if p not in lacking)
    plan = plan_calls(reference, max_position, kept, default)
    mrope = getattr(reference, "mrope_section", None) is not None
    for p in patterns:
        if p in lacking and (p != "image" or mrope):
            plan.notes.append(f"Not made: {p!r} (the calling convention of {fn!r} has none).")
    return plan


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
    patterns: Sequence[str] = DEFAULT_PATTERNS,
) -> None:
    r"""Check a RoPE implementation against a reference, and say what is wrong when it differs.

    Explained on the site: [Check your implementation](check.md#check-rope).

    ``fn(q, k, positions) -> (q_rot, k_rot)`` is the call form of
    :meth:`posenc_ref.RotaryEmbedding.forward`: ``q`` and ``k`` are
    ``(batch, heads, seq_len, head_dim)`` (the key often with fewer heads: GQA),
    ``positions`` a ``(seq_len,)`` int64 tensor. Wrap other code in a lambda (transpose if it
    wants ``(batch, seq_len, heads, head_dim)``), or in an adapter (:func:`offset_fn`,
    :func:`offsets_fn`, :func:`packed_fn`, :func:`inplace_fn`, ...). For an M-RoPE reference
    one call carries text, an image and a video: ``positions`` is then ``(3, seq_len)`` (time,
    height, width rows, as :func:`posenc_ref.mrope.mrope_positions` builds them); with
    ``patterns`` including ``"rows"``, one call has per-row offsets, ``positions`` of shape
    ``(batch, 1, seq_len)``. A reference whose ``output_layout`` differs from its ``layout``
    (DeepSeek-V3) is expected to write its result in that order.

    The kit chooses the inputs (seeded), in the call patterns engines use: prefill windows at
    ``0..299`` (small positions, and 256/257, where bfloat16 positions collide), 128 positions
    around the reference's original context (where length-dependent methods switch; 4096 when
    it has none) and the last 128 up to ``max_position``; single-token decode steps after each;
    a prefill in two chunks across the original context; and the M-RoPE image call. Calls are
    made in increasing order of their last position, so a stateful dynamic implementation
    (HF's) sees what a stateless one does. The expected output is computed in float64.

    Tolerance, per output coordinate of pair :math:`i` at position :math:`m`:

    .. math::

        a\,\lVert(u, v)\rVert\,\bigl(8u_x + \Delta\theta_i(m)\bigr) + \text{atol}

    with attention factor :math:`a`, :math:`(u, v)` the input pair, :math:`u_x` the unit
    roundoff of the input dtype (:math:`2^{-24}` for float32, :math:`2^{-8}` for bfloat16;
    ``rtol`` replaces :math:`8u_x`) and :math:`\Delta\theta_i(m)` the largest error of the
    angle any common float32 kernel forms (:func:`float32_angle_allowance`: a ``pow`` per pair,
    ``exp``/``log``, ggml's repeated multiplication, float64 then a cast, YaRN's and Llama 3's
    blends), dropped with ``float32_angles=False``. Coordinates past ``rotary_dim`` must be
    copied (one rounding).

    On failure the ``AssertionError`` shows the first disagreeing position and pair, the largest
    error, which pairs and positions are wrong (as ranges), the error per call, what was
    observed (which of q and k is wrong, pair norms, changed pass-through coordinates, NaN),
    and the diagnosis: each common bug and engine convention is a model run on the same inputs
    (layouts, positions, bases, scaling methods and their conventions, call patterns, M-RoPE
    sections, low precision, alone or two at once), and the ones that reproduce your output
    within the same tolerance are named. If none does, a model is named only if it accounts for
    most of the error; otherwise the observed facts are the lead.

    Parameters
    ----------
    fn
        The implementation under test: ``fn(q, k, positions) -> (q_rot, k_rot)``, same shapes
        and dtypes as ``q`` and ``k``.
    reference
        A :class:`~posenc_ref.RotaryEmbedding` (any layout, ``rotary_dim`` and scaling); it is
        not modified.
    max_position
        Largest position checked, ``1 .. 2**53`` (float64 tells integers apart up to there);
        default ``max(8 L_0, 131072)`` for original context :math:`L_0` (or the last row of a
        :func:`table_fn` table). Pass the last row of your implementation's table if it has one
        (vLLM's cache of ``max_position_embeddings`` rows: ``max_position_embeddings - 1``);
        when your function raises past it, the check finds the last position it takes and names
        the value to pass. Every pattern is placed below it (chunks, rows and packed sequences
        move under a table shorter than the original context). Only the positions checked cost
        time and memory, not their values: ``2**40`` is as cheap as ``1000``.
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
    patterns
        Call patterns to make, among ``"prefill"``, ``"decode"``, ``"chunk"``, ``"rows"``
        (a batch with per-row offsets), ``"packed"`` (sequences packed into one row, positions
        restarting) and ``"image"`` (M-RoPE only); default all but ``"rows"`` and ``"packed"``,
        which an adapter adds when its convention has them (:func:`offsets_fn`,
        :func:`packed_fn`, :func:`tokens_fn`). Each one asked for is made, or a ``ValueError``
        says why it cannot be (``()`` is refused: it checks nothing); a failure report lists
        the patterns made.

    Returns
    -------
    None
        When every coordinate agrees within the tolerance.

    Raises
    ------
    AssertionError
        When ``fn`` disagrees, returns the wrong type, shape or dtype, with the details above;
        or raises an exception (reported as yours, with its message, and the last position your
        function takes when the exception is one of length).
    ValueError, TypeError
        For bad arguments, and a pattern that cannot be made.

    Examples
    --------
    >>> import torch
    >>> from posenc_ref import RotaryEmbedding
    >>> reference = RotaryEmbedding(64, layout="half")
    >>> assert_rope_equal(reference, reference)  # a module is its own fn
    """
    fn = check_fn(fn)
    reference = check_reference(reference)
    if max_position is None:  # an adapter that knows its limit (table_fn: the table's rows)
        max_position = getattr(fn, "max_position", None)
    if max_position is not None:
        max_position = check_int("max_position", max_position, minimum=1)
        if max_position > LARGEST_POSITION:
            raise ValueError(
                f"max_position must be at most 2**53 = {LARGEST_POSITION}, got {max_position}: "
                "float64, in which the expected output is computed, cannot tell larger integer "
                "positions apart"
            )
    dtypes = check_dtypes(dtypes)
    float32_angles = check_bool("float32_angles", float32_angles)
    rtol = check_optional_tolerance("rtol", rtol)
    atol = check_nonnegative_float("atol", atol)
    seed = check_seed(seed)
    device = check_kit_device(device, reference)
    default = tuple(patterns) if patterns is DEFAULT_PATTERNS else ()
    patterns = check_patterns(patterns)
    plan = plan_for(fn, reference, max_position, patterns, default)

    generator = torch.Generator().manual_seed(seed)
    calls: list[Call] = []
    for call_plan in plan.calls:
        for dtype in dtypes:
            try:
                calls.append(run_call(fn, call_plan, dtype, reference.head_dim, generator, device))
            except FnRaised as raised:
                worked = max((int(c.positions.max()) for c in calls), default=None)
                last = last_working_position(fn, raised, worked, dtype, reference.head_dim, device)
                raise AssertionError(raised_message(raised, last, max_position)) from raised.error
    guard_reference(reference, calls[0])
    model = reference_model(reference)
    failed = False
    for call in calls:
        call.expected = tuple(predict(model, x, call) for x in call.inputs)
        call.allowed = tuple(
            rope_allowance(model, x, call, float32_angles=float32_angles, rtol=rtol, atol=atol)
            for x in call.inputs
        )
        failed |= any(bool((excess > 1).any()) for excess in call.excess())
    if not failed:
        return None
    options = {
        "rtol": rtol,
        "atol": atol,
        "float32_angles": float32_angles,
        "attention_factor": float(reference.attention_factor),
    }
    raise AssertionError(rope_report(rope_subject(reference), calls, options, plan.made()))


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
    fn = check_fn(fn)
    reference = check_reference(reference)
    dtype = check_dtypes(dtype)[0]
    seed = check_seed(seed)
    if not isinstance(positions, torch.Tensor) or positions.dim() != 1:
        raise TypeError("positions must be a 1-D integer tensor (seq_len,)")
    if positions.is_floating_point() or positions.numel() == 0 or bool((positions < 0).any()):
        raise ValueError("positions must be a non-empty integer tensor with values >= 0")
    if int(positions.max()) > LARGEST_POSITION:
        raise ValueError(
            f"positions must be at most 2**53 = {LARGEST_POSITION}, got {int(positions.max())}: "
            "float64 cannot tell larger integer positions apart"
        )
    device = reference.cos_cached.device
    generator = torch.Generator().manual_seed(seed)
    plan = CallPlan("prefill", positions.to("cpu"), 1, 2, 2)
    call = run_call(fn, plan, dtype, reference.head_dim, generator, device)
    model = reference_model(reference)
    a = float(model.freqs(call).attention_factor)
    r = reference.rotary_dim
    worst = torch.zeros(call.n, dtype=torch.float64)
    for which, (x, out) in enumerate(zip(call.inputs, call.outputs, strict=True)):
        expected = predict(model, x, call, which)
        u, v = pair_parts(x, reference.layout, r)
        norm = torch.sqrt(u * u + v * v)[..., pair_index(reference.layout, r)]
        error = (out - expected)[..., :r].abs() / (a * norm)
        worst = torch.maximum(worst, error.amax(dim=(0, 1, 3)))
    return worst
