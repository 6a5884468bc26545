"""Figures of the "Check your implementation" page and of the inspect command's --plot option.

Shown on ``check.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import figure_facts, sci, site_figure

if TYPE_CHECKING:  # pragma: no cover
    import torch
    from matplotlib.figure import Figure

    from ..rope import RotaryEmbedding

__all__ = [
    "check_allowance",
    "error_positions",
    "rope_error_curves",
    "rope_error_plot",
    "hf_rope_error_fns",
    "hf_rope_error",
    "spec_wavelengths",
    "llama31_wavelengths",
    "compare_angles",
    "llama31_compare",
]


def check_allowance(
    reference: RotaryEmbedding, positions: torch.Tensor, *, float32_angles: bool = True
) -> torch.Tensor:
    r"""The conformance check's allowance for a pair of norm 1, per position and pair.

    What :func:`posenc_ref.testing.assert_rope_equal` allows each rotated coordinate to differ
    from the float64 expectation, for an input pair of norm 1 (radians, for small errors):
    its error model evaluated, not restated (``posenc_ref.testing._tolerance``). With
    ``float32_angles=False`` only the rounding of the result remains; the difference between
    the two is the float32-angle term, the bound the precision page uses.

    Parameters
    ----------
    reference
        A :class:`~posenc_ref.RotaryEmbedding`.
    positions
        1-D integer positions ``(P,)``.

    Returns
    -------
    torch.Tensor
        ``(P, rotary_dim // 2)`` float64.
    """
    import torch

    from ..testing._calls import Call, CallPlan
    from ..testing._model import reference_model
    from ..testing._tolerance import rope_allowance

    positions = torch.as_tensor(positions).to("cpu", torch.int64)
    r = reference.rotary_dim
    first = torch.arange(r // 2)  # the first coordinate of each pair, in the layout
    first = 2 * first if reference.layout == "interleaved" else first
    x = torch.zeros(positions.numel(), reference.head_dim, dtype=torch.float64)
    x[:, first] = 1.0  # every pair (1, 0): norm 1
    plan = CallPlan("prefill", positions, batch=1, q_heads=1, k_heads=1)
    call = Call(plan, torch.float32, inputs=(x, x), outputs=(x, x))
    allowed = rope_allowance(
        reference_model(reference), x, call, float32_angles=float32_angles, rtol=None, atol=0.0
    )
    return allowed[:, first]


def error_positions(max_log2: int = 20, per_octave: int = 4) -> torch.Tensor:
    """Positions spread evenly on a log scale from 1 to ``2**max_log2`` (int64, unique)."""
    import torch

    exponents = torch.arange(max_log2 * per_octave + 1, dtype=torch.float64) / per_octave
    return torch.unique(torch.round(2.0**exponents).to(torch.int64))


def rope_error_curves(
    fns: Mapping[str, Callable],
    reference: RotaryEmbedding,
    positions: torch.Tensor | None = None,
) -> dict[str, object]:
    r"""What :func:`rope_error_plot` draws, as numbers: each ``fn``'s error and the allowances.

    Parameters
    ----------
    fns
        Label to ``fn(q, k, positions) -> (q_rot, k_rot)``.
    reference
        A :class:`~posenc_ref.RotaryEmbedding`.
    positions
        1-D integer positions (default :func:`error_positions`).

    Returns
    -------
    dict
        ``positions`` (``(P,)`` int64), ``errors`` (label to the ``(P,)`` float64 array of
        :func:`posenc_ref.testing.rope_error`: the largest error relative to the pair's norm),
        ``allowance`` (``(P,)``: the float32-angle allowance of
        :func:`posenc_ref.testing.assert_rope_equal`, its largest value over the pairs plus the
        8 float32 roundings) and ``rounding`` (the allowance without the angle term, a float).
    """
    from ..testing import rope_error

    positions = error_positions() if positions is None else positions
    errors = {label: rope_error(fn, reference, positions).numpy() for label, fn in fns.items()}
    allowance = check_allowance(reference, positions).amax(dim=1)
    rounding = check_allowance(reference, positions[:1], float32_angles=False).max()
    return {
        "positions": positions.numpy(),
        "errors": errors,
        "allowance": allowance.numpy(),
        "rounding": float(rounding),
    }


def rope_error_plot(
    fns: Mapping[str, Callable],
    reference: RotaryEmbedding,
    positions: torch.Tensor | None = None,
) -> Figure:
    r"""Largest error per position of each ``fn`` against ``reference``, with the allowance.

    Each curve is :func:`posenc_ref.testing.rope_error` (largest error relative to the pair's
    norm); the dashed line is the float32-angle allowance of
    :func:`posenc_ref.testing.assert_rope_equal` at each position (its largest value over the
    pairs, plus the 8 float32 roundings), the dotted one the allowance without the angle term.
    The numbers come from :func:`rope_error_curves`.

    Parameters
    ----------
    fns
        Label to ``fn(q, k, positions) -> (q_rot, k_rot)``.
    reference
        A :class:`~posenc_ref.RotaryEmbedding`.
    positions
        1-D integer positions (default :func:`error_positions`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    curves = rope_error_curves(fns, reference, positions)
    x = curves["positions"]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.3))
    markers = iter("os^vD")
    for label, error in curves["errors"].items():
        style = next(markers) + "-"
        ax.loglog(x, error.clip(min=1e-10), style, ms=3, lw=1, label=label)
    accepted = "allowed (float32 angles accepted)"
    ax.loglog(x, curves["allowance"], color="0.35", lw=1, ls="--", label=accepted)
    ax.axhline(
        curves["rounding"], color="0.35", lw=1, ls=":", label="allowed (float32_angles=False)"
    )
    ax.set_xlabel("position")
    ax.set_ylabel("largest error / pair norm")
    ax.set_title(
        f"RoPE error against float64 (head_dim={reference.head_dim}, "
        f"base={reference.base:g}, {reference.layout} layout)",
        fontsize=11,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8.5, loc="upper left")
    fig.tight_layout()
    return fig


def _hf_apply(head_dim: int, base: float) -> Callable:
    """HF transformers' Llama rotation as ``fn(q, k, positions)`` (needs transformers)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    config = LlamaConfig(
        hidden_size=2 * head_dim,
        num_attention_heads=2,
        head_dim=head_dim,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    rotary = LlamaRotaryEmbedding(config)

    def fn(q, k, positions):
        cos, sin = rotary(q, positions[None])
        return apply_rotary_pos_emb(q, k, cos, sin)

    return fn


def hf_rope_error_fns(head_dim: int = 128, base: float = 10000.0) -> tuple[dict, RotaryEmbedding]:
    """HF transformers' rotation and posenc_ref's pure functions, and the float64 reference.

    The inputs of :func:`hf_rope_error` (and of the numbers its alt text states, through
    :func:`rope_error_curves`). Needs transformers (the ``peers`` extra).

    Returns
    -------
    tuple
        (label to ``fn(q, k, positions)``, the reference :class:`~posenc_ref.RotaryEmbedding`
        in the half layout).
    """
    from ..absolute import inv_freq
    from ..rope import RotaryEmbedding, apply_rope, rope_cos_sin

    reference = RotaryEmbedding(head_dim, base=base, layout="half")
    omega = inv_freq(head_dim, base)

    def ours(q, k, positions):  # the pure functions: no table cached up to 2**20 positions
        cos, sin = rope_cos_sin(positions, omega)
        return apply_rope(q, cos, sin, layout="half"), apply_rope(k, cos, sin, layout="half")

    fns = {
        "HF transformers (float32 angles)": _hf_apply(head_dim, base),
        "posenc_ref rope_cos_sin + apply_rope (float64 angles)": ours,
    }
    return fns, reference


def hf_rope_error(head_dim: int = 128, base: float = 10000.0) -> Figure:
    """HF transformers' ``apply_rotary_pos_emb`` and posenc_ref's functions, error per position.

    Both against the float64 reference in the half layout (:func:`hf_rope_error_fns`), drawn
    by :func:`rope_error_plot`. Needs transformers (the ``peers`` extra).

    Returns
    -------
    matplotlib.figure.Figure
    """
    return rope_error_plot(*hf_rope_error_fns(head_dim, base))


@site_figure("check_hf_error.svg")
def _site_hf_rope_error() -> Figure:
    return hf_rope_error()


@figure_facts("check_hf_error.svg")
def _hf_rope_error_facts() -> dict[str, str]:
    import numpy as np

    curves = rope_error_curves(*hf_rope_error_fns())
    hf, ours = curves["errors"].values()  # HF first, as the figure's legend lists them
    return {
        "last_position": f"{int(curves['positions'][-1]):,}",
        "hf_first": sci(float(hf[0])),
        "hf_last": sci(float(hf[-1])),
        "ours": sci(float(ours.max())),
        "margin": f"{float(np.median(curves['allowance'] / hf)):.0f}",
    }


def spec_wavelengths(spec: object) -> Figure:
    r"""Per-pair wavelength of a model's RoPE, against the plain base and its context lengths.

    Drawn by ``python -m posenc_ref inspect CONFIG.json --plot FILE``. ``spec`` is a
    :class:`~posenc_ref.models.RopeSpec`: its frequencies inside the original context, the plain
    :math:`\text{base}^{-2i/d}` ones for comparison when they differ, those of a call at
    ``max_position_embeddings`` when the method depends on the length, and horizontal lines at
    the original and the extended context.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import torch

    from ..absolute import inv_freq as plain_inv_freq

    plt = _pyplot()
    omega = spec.inv_freq.detach().to("cpu", torch.float64)
    pairs = torch.arange(omega.numel())
    fig, ax = plt.subplots(figsize=(7.5, 4.3))
    plain = plain_inv_freq(spec.rotary_dim, spec.base)
    if not torch.allclose(plain, omega, rtol=1e-12, atol=0):
        label = f"plain base^(-2i/d), base {spec.base:g}"
        ax.semilogy(pairs, 2 * math.pi / plain, color="0.6", lw=1, ls="--", label=label)
    label = f"{spec.rope_type} (inside the original context)"
    ax.semilogy(pairs, 2 * math.pi / omega, "o-", ms=2.5, lw=1, color="C0", label=label)
    if spec.max_len:
        later = spec.frequencies(spec.max_len).inv_freq.to(torch.float64)
        if not torch.allclose(later, omega, rtol=1e-12, atol=0):
            label = f"{spec.rope_type} at length {spec.max_len}"
            ax.semilogy(pairs, 2 * math.pi / later, "s-", ms=2.5, lw=1, color="C3", label=label)
    for length, words, style in (
        (spec.original_max_len, "original context", "-."),
        (spec.max_len, "max_position_embeddings", ":"),
    ):
        if length:
            ax.axhline(length, color="0.3", lw=0.9, ls=style, label=f"{words} ({length})")
    ax.set_xlabel("pair i")
    ax.set_ylabel("wavelength 2π/ω (positions)")
    title = getattr(spec, "model_type", None) or "config"
    if getattr(spec, "layer_type", None):
        title += f", {spec.layer_type}"
    ax.set_title(
        f"{title}: rotary_dim {spec.rotary_dim} of {spec.head_dim}, {spec.layout} layout",
        fontsize=11,
    )
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8.5)
    fig.tight_layout()
    return fig


def llama31_wavelengths() -> Figure:
    """:func:`spec_wavelengths` for Llama 3.1's released config (what ``inspect --plot`` draws).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..models import released_config, rope_spec

    return spec_wavelengths(rope_spec(released_config("Llama 3.1")))


@site_figure("check_inspect_llama31.svg")
def _site_llama31_wavelengths() -> Figure:
    return llama31_wavelengths()


@figure_facts("check_inspect_llama31.svg")
def _llama31_wavelengths_facts() -> dict[str, str]:
    from ..models import released_config, rope_spec

    spec = rope_spec(released_config("Llama 3.1"))
    return {
        "base": f"{spec.base:g}",
        "factor": f"{spec.factor:g}",
        "original": str(spec.original_max_len),
        "max_len": str(spec.max_len),
    }


def compare_angles(document: Mapping) -> Figure:
    r"""Per pair, how far two RoPEs' angles part: what ``posenc-ref compare A B --plot`` draws.

    ``document`` is ``compare``'s JSON (``posenc-ref compare A B --json``, or
    ``{"layers": [posenc_ref.cli.compare_specs(a, b)]}``): one panel per pair of layer types
    compared, with :math:`|\theta_A(m) - \theta_B(m)|` per pair, largest over the original
    context and at each position past it, on a log scale (a zero difference is not drawn), and the
    bands of pairs named above.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = _pyplot()
    layers = [layer for layer in document["layers"] if layer["comparable"]]
    fig, axes = plt.subplots(len(layers), 1, figsize=(7.5, 3.6 * len(layers)), squeeze=False)
    for ax, layer in zip(axes[:, 0], layers, strict=True):
        pairs = [p["pair"] for p in layer["pairs"]]
        curves = [(f"largest over m < {layer['context']}", [p["inside"] for p in layer["pairs"]])]
        for k, position in enumerate(layer["positions"]):
            curves.append((f"m = {position}", [p["past"][k] for p in layer["pairs"]]))
        for label, values in curves:
            drawn = [v if v else float("nan") for v in values]
            ax.semilogy(pairs, drawn, "o-", ms=2.5, lw=1, label=label)
        ax.set_xlim(-0.5, len(pairs) - 0.5)
        for band in layer["bands"]:  # a dashed line where each band starts, and its name
            first, last = band["pairs"]
            if first > 0:
                ax.axvline(first - 0.5, color="0.6", lw=0.8, ls="--")
            ax.text((first + last) / 2, 1.02, band["name"], transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, color="0.3")  # fmt: skip
            if not band["inside"] and not any(band["past"]):  # nothing drawn: say why
                ax.text((first + last) / 2, 0.5, "no difference\nat any position",
                        transform=ax.get_xaxis_transform(), ha="center", va="center",
                        fontsize=9, color="0.3")  # fmt: skip
        ax.set_xlabel("pair i (fastest first)")
        ax.set_ylabel("|theta_A(m) - theta_B(m)| (rad)")
        where = layer["layer_type_a"]
        ax.set_title(
            "angle difference per pair" + (f", {where}" if where else "") + " (zero: not drawn)",
            fontsize=10,
            pad=16,
        )
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def llama31_compare() -> Figure:
    """:func:`compare_angles` for Llama 3.1's released config against it without its scaling.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ..cli import compare_specs
    from ..models import released_config, rope_spec

    config = released_config("Llama 3.1")
    unscaled = {k: v for k, v in config.items() if k != "rope_scaling"}
    return compare_angles({"layers": [compare_specs(rope_spec(config), rope_spec(unscaled))]})


@site_figure("cli_compare_llama31.svg")
def _site_llama31_compare() -> Figure:
    return llama31_compare()
