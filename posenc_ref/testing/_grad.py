r"""``assert_rope_grad_equal``: the backward pass of a training kernel, with diagnoses.

Explained on the site: [the backward pass](check.md#check-backward).

A rotation by :math:`\theta` is orthogonal (times the attention factor :math:`a`), so its
gradient is the rotation by :math:`-\theta`: for an upstream gradient :math:`g`,
:math:`\partial L/\partial x = a\,R(-\theta)\,g`. Fused kernels write that backward by hand
(flash-attn's rotary backward is its forward with ``conjugate=True``), and a sign or a layout
wrong there trains a model on wrong gradients while the forward check passes. The check runs
``fn`` forward on random ``q`` and ``k`` that require gradients, back-propagates random upstream
gradients, and compares ``q.grad`` and ``k.grad`` with :math:`a\,R(-\theta)\,g`, with the
tolerance and the report of :func:`~posenc_ref.testing.assert_rope_equal`. The bug models: the
rotation by :math:`+\theta` (the conjugate forgotten), the gradient passed through unrotated,
the attention factor left out, the other pair layout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import torch

from .._checks import check_int
from ..rope import RotaryEmbedding
from ..rope_scaling import ScaledFrequencies
from ._arrays import RopeFn, check_outputs
from ._calls import Call, describe_positions
from ._common import check_dtypes, check_seed
from ._model import Model, other_layout, predict, reference_model
from ._plan import plan_calls
from ._report import Subject, rope_report
from ._rope import check_fn, check_kit_device, check_reference, describe_reference
from ._setting import Hypothesis
from ._tolerance import excess_ratio, rope_allowance

__all__ = ["assert_rope_grad_equal"]


def backward_model(forward: Model) -> Model:
    """The model of the exact backward: read in the written order, turn by minus the angle."""
    written = forward.output_layout or forward.layout
    return dataclasses.replace(
        forward, layout=written, output_layout=forward.layout, sign=-forward.sign
    )


def _candidates(model: Model, reference: RotaryEmbedding) -> list[Hypothesis]:
    def h(key: str, title: str, detail: str, **changes) -> Hypothesis:
        return Hypothesis(key, title, detail, dataclasses.replace(model, **changes))

    out = [
        h(
            "grad_plus",
            "the backward rotation by +theta (the conjugate forgotten)",
            "your fn's backward rotates the upstream gradient by the forward angle; the gradient "
            "of a rotation is the rotation by minus the angle (flash-attn: conjugate=True)",
            sign=-model.sign,
        ),
        h(
            "grad_identity",
            "the gradient passed through unrotated",
            "your fn's backward returns the upstream gradient as it came (a custom autograd "
            "function whose backward forgot the rotation)",
            positions=lambda c: torch.zeros_like(c.positions),
            frequencies=lambda n: ScaledFrequencies(reference.frequencies(n).inv_freq, 1.0),
        ),
        h(
            "grad_layout",
            "the backward in the other pair layout",
            f"your fn's backward rotates the pairs of the {other_layout(model.layout)} layout",
            layout=other_layout(model.layout),
        ),
    ]
    a = float(reference.attention_factor)
    if a != 1.0:
        out.append(
            h(
                "grad_factor",
                "the attention factor missing from the backward",
                f"your fn's backward does not multiply by the attention factor {a:.4g}",
                frequencies=lambda n: ScaledFrequencies(reference.frequencies(n).inv_freq, 1.0),
            )
        )
    return out


def assert_rope_grad_equal(
    fn: RopeFn,
    reference: RotaryEmbedding,
    *,
    max_position: int | None = None,
    dtypes: Sequence[torch.dtype] | torch.dtype = (torch.float32,),
    seed: int = 0,
    device: torch.device | str | None = None,
) -> None:
    r"""Check the gradients of a RoPE ``fn`` (a training kernel): backward is :math:`aR(-\theta)`.

    Explained on the site: [the backward pass](check.md#check-backward).

    ``fn(q, k, positions) -> (q_rot, k_rot)`` as for
    :func:`~posenc_ref.testing.assert_rope_equal`, differentiable in torch. For each window of
    positions of that check, ``q`` and ``k`` require gradients, the outputs are
    back-propagated with random upstream gradients :math:`g_q, g_k`, and ``q.grad``, ``k.grad``
    must equal :math:`a\,R(-\theta)\,g` within the same tolerance (float32 angles accepted).

    Parameters
    ----------
    fn
        The implementation under test, differentiable (its outputs carry ``grad_fn``).
    reference
        A :class:`~posenc_ref.RotaryEmbedding`.
    max_position, dtypes, seed, device
        As for :func:`~posenc_ref.testing.assert_rope_equal`.

    Raises
    ------
    AssertionError
        When a gradient disagrees (with the diagnosis), or when ``fn``'s outputs carry no
        gradient.
    """
    fn, reference = check_fn(fn), check_reference(reference)
    if max_position is not None:
        max_position = check_int("max_position", max_position, minimum=1)
    dtypes = check_dtypes(dtypes)
    generator = torch.Generator().manual_seed(check_seed(seed))
    device = check_kit_device(device, reference)
    model = backward_model(reference_model(reference))
    calls, failed = [], False
    for plan in plan_calls(reference, max_position, ("prefill",)).calls:
        for dtype in dtypes:
            shape_q = (plan.batch, plan.q_heads, plan.n, reference.head_dim)
            shape_k = (plan.batch, plan.k_heads, plan.n, reference.head_dim)
            x = [torch.randn(s, generator=generator).to(device, dtype) for s in (shape_q, shape_k)]
            g = [torch.randn(s, generator=generator).to(device, dtype) for s in (shape_q, shape_k)]
            q, k = (t.clone().requires_grad_(True) for t in x)
            where = f"({describe_positions(plan)}, {dtype} q {shape_q} and k {shape_k})"
            outputs = check_outputs(fn(q, k, plan.positions.to(device)), (q, k), where)
            if not all(o.requires_grad for o in outputs):
                raise AssertionError(
                    f"fn's outputs carry no gradient {where}: they were computed under no_grad "
                    "or detached, or fn is not a torch function"
                )
            grads = torch.autograd.grad(outputs, (q, k), grad_outputs=g, allow_unused=True)
            if any(gr is None for gr in grads):
                raise AssertionError(f"q or k does not reach fn's outputs {where}")
            upstream = tuple(t.to("cpu", torch.float64) for t in g)
            got = tuple(gr.detach().to("cpu", torch.float64) for gr in grads)
            call = Call(plan, dtype, upstream, got)
            call.expected = tuple(predict(model, u, call) for u in upstream)
            call.allowed = tuple(
                rope_allowance(model, u, call, float32_angles=True, rtol=None, atol=0.0)
                for u in upstream
            )
            failed |= any(
                bool((excess_ratio(*t) > 1).any())
                for t in zip(call.outputs, call.expected, call.allowed, strict=True)
            )
            calls.append(call)
    if not failed:
        return None
    subject = Subject(
        model,
        reference.head_dim,
        f"{describe_reference(reference)}'s backward (the rotation by minus the angle)",
        float(reference.attention_factor),
        model.output_layout or model.layout,
        lambda calls: _candidates(model, reference),
    )
    options = {
        "rtol": None,
        "atol": 0.0,
        "float32_angles": True,
        "attention_factor": float(reference.attention_factor),
    }
    raise AssertionError(
        "The gradients of fn disagree with the backward of a rotation.\n"
        + rope_report(subject, calls, options).replace("fn disagrees", "its backward disagrees", 1)
    )
