r"""Bounds and laws of context extension: what the papers prove or fit, computed.

Derived on the site: [Bounds and laws of context extension](extension_laws.md).

- :func:`interpolation_bound` and :func:`extrapolation_bound`: Position Interpolation's
  Theorem 2.1 (Chen et al., 2023), the bound on a RoPE score between two integer distances, and
  the bound RoFormer gives on the score itself, which is all that holds past :math:`L_0`.
- :func:`ntk_usable_ratio` and :func:`ntk_factor_for_ratio`: why NTK-aware scaling with factor
  :math:`s` extends the context by less than :math:`s` (YaRN, Peng et al., 2023, section 3.1),
  and the factor a target ratio needs.
- :func:`extrapolation_limit` and :func:`full_turn_base`: Liu et al. (2024)'s scaling law of
  RoPE-based extrapolation, :math:`T_{\text{extra}} = 2\pi\beta^{d_{\text{extra}}/d}`, and the
  largest base whose every pair turns within a length.
- :func:`resonance_inv_freq` and :func:`angle_gap`: Resonance RoPE's integer wavelengths, and
  how far an angle past :math:`L_0` can lie from every angle seen before it.

Everything is computed in float64 from frequencies :math:`\omega_i` (:func:`posenc_ref.inv_freq`).
"""

from __future__ import annotations

import math

import torch

from ._checks import check_base, check_dim, check_int, check_positive_float
from .absolute import inv_freq as _inv_freq
from .rope_extension import critical_dimension

__all__ = [
    "interpolation_bound",
    "interpolation_bound_paper",
    "extrapolation_bound",
    "ntk_usable_ratio",
    "ntk_factor_for_ratio",
    "extrapolation_limit",
    "full_turn_base",
    "resonance_inv_freq",
    "angle_gap",
]

F64 = torch.float64


def _frequencies(inv_freq: object) -> torch.Tensor:
    inv_freq = torch.as_tensor(inv_freq)
    if inv_freq.dim() != 1 or inv_freq.numel() == 0 or not inv_freq.is_floating_point():
        raise ValueError(
            f"inv_freq must be a non-empty 1-D floating tensor, got shape {tuple(inv_freq.shape)}"
        )
    if not bool(torch.isfinite(inv_freq).all()) or bool((inv_freq < 0).any()):
        raise ValueError("inv_freq must be finite and >= 0")
    return inv_freq.to(F64)


def _distances(distances: object) -> torch.Tensor:
    value = torch.as_tensor(distances)
    if value.is_complex() or value.dtype == torch.bool or value.dim() != 1:
        raise ValueError(
            f"distances must be a 1-D real tensor, got shape {tuple(value.shape)} and dtype "
            f"{value.dtype}"
        )
    value = value.to(F64)
    if not bool(torch.isfinite(value).all()):
        raise ValueError("distances must be finite")
    return value


def interpolation_bound(
    inv_freq: torch.Tensor, distances: torch.Tensor, *, h_max: float = 1.0, spacing: float = 1.0
) -> torch.Tensor:
    r"""How far a RoPE score can stray from the chord between two grid distances.

    Derived on the site: [PI's interpolation bound](extension_laws.md#laws-pi).

    For :math:`a(s) = \operatorname{Re}\sum_i h_i e^{\mathrm{j}s\omega_i}` with
    :math:`|h_i| \le h_{\max}`, and :math:`s_1 \le s \le s_2 = s_1 + \Delta` the grid points
    around :math:`s` (:math:`\Delta` = ``spacing``),

    .. math::

        |a(s) - a_{\text{lin}}(s)| \le \frac{(s - s_1)(s_2 - s)}{2}\, h_{\max}
        \sum_i \omega_i^2,

    the error of linear interpolation of a function whose second derivative is at most
    :math:`h_{\max}\sum_i\omega_i^2`. It is the argument of Chen et al.'s Theorem 2.1, with the
    sum computed instead of bounded (:func:`interpolation_bound_paper`).

    Parameters
    ----------
    inv_freq
        ``(N,)`` frequencies :math:`\omega_i`.
    distances
        ``(R,)`` distances :math:`s` (any real values).
    h_max, spacing
        :math:`h_{\max} > 0` and the grid step :math:`\Delta > 0` (1: the integers).

    Returns
    -------
    torch.Tensor
        ``(R,)`` float64.
    """
    omega = _frequencies(inv_freq)
    h_max = check_positive_float("h_max", h_max)
    spacing = check_positive_float("spacing", spacing)
    s = _distances(distances)
    s1 = torch.floor(s / spacing) * spacing
    return (s - s1) * (s1 + spacing - s) / 2 * h_max * float((omega**2).sum())


def interpolation_bound_paper(dim: int, base: float = 10000.0, *, h_max: float = 1.0) -> float:
    r"""The same bound at its largest (mid-way between integers) in the closed form of the paper.

    Derived on the site: [PI's interpolation bound](extension_laws.md#laws-pi).

    :math:`d\,h_{\max}/(32\ln c)`: :math:`\tfrac18 h_{\max}\sum_i\omega_i^2` with the sum
    :math:`\sum_{i<d/2} c^{-4i/d} = (1 - c^{-2})/(1 - c^{-4/d})` replaced by
    :math:`d/(4\ln c)`. The sum exceeds that by about :math:`1/2` (by
    :math:`1/(1 - e^{-x}) \approx 1/x + 1/2`, :math:`x = 4\ln c/d`), so the closed form is a
    little below the bound for small :math:`d` (:func:`interpolation_bound` computes the sum).
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    h_max = check_positive_float("h_max", h_max)
    return dim * h_max / (32 * math.log(base))


def extrapolation_bound(
    h: torch.Tensor, inv_freq: torch.Tensor, distances: torch.Tensor
) -> torch.Tensor:
    r"""RoFormer's bound on a RoPE score at any distance, by summation by parts.

    Derived on the site: [PI's interpolation bound](extension_laws.md#laws-pi).

    With :math:`S_k(s) = \sum_{i<k} e^{\mathrm{j}s\omega_i}` and :math:`h_N = 0`,
    :math:`\sum_i h_i e^{\mathrm{j}s\omega_i} = \sum_{k=1}^{N} (h_{k-1} - h_k) S_k(s)`, so

    .. math::

        |a(s)| \le \max_{k} |h_{k-1} - h_k| \sum_{k=1}^{N} |S_k(s)| .

    Unlike :func:`interpolation_bound` it does not shrink between integers: past :math:`L_0` it is
    the only bound that holds, since training constrained nothing there.

    Parameters
    ----------
    h
        ``(N,)`` complex coefficients :math:`h_i = q^{(i)}\overline{k^{(i)}}`.
    inv_freq
        ``(N,)`` frequencies.
    distances
        ``(R,)`` distances :math:`s`.

    Returns
    -------
    torch.Tensor
        ``(R,)`` float64.
    """
    omega = _frequencies(inv_freq)
    h = torch.as_tensor(h).to(torch.complex128)
    if h.shape != omega.shape:
        raise ValueError(
            f"h must have the shape of inv_freq {tuple(omega.shape)}, got {tuple(h.shape)}"
        )
    if not bool(torch.isfinite(torch.view_as_real(h)).all()):
        raise ValueError("h must be finite")
    s = _distances(distances)
    phasors = torch.exp(1j * s[:, None] * omega[None, :])  # (R, N)
    partial = torch.cumsum(phasors, dim=1).abs().sum(dim=1)  # sum_k |S_k(s)|, (R,)
    steps = torch.cat([h[:-1] - h[1:], h[-1:]])  # h_{k-1} - h_k, with h_N = 0
    return float(steps.abs().max()) * partial


def _turning_pairs(dim: int, base: float, original_max_len: int) -> int:
    return critical_dimension(dim, base, original_max_len) // 2


def ntk_usable_ratio(dim: int, base: float, factor: float, original_max_len: int) -> float:
    r"""How many times :math:`L_0` NTK-aware scaling by ``factor`` reaches without unseen angles.

    Derived on the site: [NTK-aware's usable extension](extension_laws.md#laws-ntk).

    NTK-aware divides :math:`\omega_i` by :math:`s^{2i/(d-2)}`. A pair that turns at least once
    within :math:`L_0` has been seen at every angle; one that has not (:math:`i \ge i_c`, the
    first such pair) was seen only on :math:`[0, L_0\omega_i)`, and at length :math:`L` it reaches
    :math:`L\omega_i s^{-2i/(d-2)}`. All of them stay in the trained range up to

    .. math::

        \frac{L}{L_0} = \min_{i \ge i_c} s^{2i/(d-2)} = s^{2 i_c/(d-2)} \le s,

    with equality only when the slowest pair alone does not turn. ``inf`` when every pair turns.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    factor = check_positive_float("factor", factor, minimum=1.0)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    if dim < 4:
        raise ValueError(f"dim must be an even integer >= 4 for NTK scaling, got {dim!r}")
    first = _turning_pairs(dim, base, original_max_len)
    return math.inf if first == dim // 2 else factor ** (2 * first / (dim - 2))


def ntk_factor_for_ratio(dim: int, base: float, ratio: float, original_max_len: int) -> float:
    r"""The NTK-aware factor whose usable extension is ``ratio``: :math:`r^{(d-2)/(2 i_c)}`.

    Derived on the site: [NTK-aware's usable extension](extension_laws.md#laws-ntk).

    The inverse of :func:`ntk_usable_ratio`: larger than ``ratio`` unless only the slowest pair
    fails to turn within :math:`L_0`.

    Raises
    ------
    ValueError
        If no pair turns within :math:`L_0` (:math:`i_c = 0`): then no factor extends the context.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    ratio = check_positive_float("ratio", ratio, minimum=1.0)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    first = _turning_pairs(dim, base, original_max_len)
    if first == 0:
        raise ValueError(
            f"no pair turns within original_max_len={original_max_len} at base {base:g}: NTK-aware "
            "scaling keeps the fastest pair and so cannot extend the usable context"
        )
    return 1.0 if first == dim // 2 else ratio ** ((dim - 2) / (2 * first))


def extrapolation_limit(dim: int, base: float, critical: int) -> float:
    r"""Liu et al.'s limit :math:`T_{\text{extra}} = 2\pi\,\beta^{d_{\text{extra}}/d}`.

    Derived on the site: [the scaling law of RoPE extrapolation](extension_laws.md#laws-liu).

    ``critical`` is the critical dimension :math:`d_{\text{extra}}` of pre-training
    (:func:`posenc_ref.rope_extension.critical_dimension` at the pre-training base and length);
    ``base`` :math:`\beta` is the base the model is fine-tuned with. The result is the wavelength,
    under :math:`\beta`, of the first pair that never turned in pre-training: past it, that pair's
    angles are ones it never saw.
    """
    dim, base = check_dim("dim", dim), check_base("base", base)
    critical = check_int("critical", critical, minimum=0)
    if critical > dim or critical % 2:
        raise ValueError(f"critical must be an even integer in [0, dim], got {critical!r}")
    return 2 * math.pi * base ** (critical / dim)


def full_turn_base(dim: int, length: int) -> float:
    r"""The largest base whose every pair turns at least once within ``length``.

    Derived on the site: [the scaling law of RoPE extrapolation](extension_laws.md#laws-liu).

    The slowest pair has wavelength :math:`2\pi\beta^{(d-2)/d}`; it fits in :math:`T` when
    :math:`\beta \le (T/2\pi)^{d/(d-2)}`. Trained (or fine-tuned) at :math:`T` with such a base,
    every pair has been seen at every angle, which is Liu et al.'s account of why small bases
    extrapolate after fine-tuning.
    """
    dim = check_dim("dim", dim)
    length = check_int("length", length, minimum=7)  # below 2 pi no base > 1 qualifies
    if dim < 4:
        raise ValueError(f"dim must be an even integer >= 4, got {dim!r}")
    return (length / (2 * math.pi)) ** (dim / (dim - 2))


def resonance_inv_freq(dim: int, base: float = 10000.0) -> torch.Tensor:
    r"""Resonance RoPE's frequencies: each wavelength rounded to the nearest integer.

    Derived on the site: [Resonance RoPE](extension_laws.md#laws-resonance).

    :math:`\tilde\omega_i = 2\pi / \operatorname{round}(2\pi/\omega_i)`, as the authors' code does
    for every pair. A pair with an integer wavelength :math:`\lambda` takes the same angle at
    :math:`m` and :math:`m + \lambda`, so if :math:`\lambda \le L_0` every angle past :math:`L_0`
    is one it took in training, exactly (:func:`angle_gap` is 0 there).

    Returns
    -------
    torch.Tensor
        ``(dim // 2,)`` float64.
    """
    omega = _inv_freq(dim, base)
    return 2 * math.pi / torch.round(2 * math.pi / omega)


def angle_gap(inv_freq: torch.Tensor, original_max_len: int, max_len: int) -> torch.Tensor:
    r"""Per pair, how far an angle at a position in :math:`[L_0, L)` lies from every trained one.

    Derived on the site: [Resonance RoPE](extension_laws.md#laws-resonance).

    .. math::

        g_i = \max_{L_0 \le m < L}\ \min_{0 \le p < L_0}
        \bigl|\,(m - p)\,\omega_i \bmod 2\pi\bigr|_{\circ}

    (:math:`|x|_\circ` the distance to the nearest multiple of :math:`2\pi`): 0 when every angle
    the pair takes past :math:`L_0` is one it took before.

    Returns
    -------
    torch.Tensor
        ``(N,)`` float64, in :math:`[0, \pi]`.
    """
    omega = _frequencies(inv_freq)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    max_len = check_int("max_len", max_len, minimum=original_max_len)
    trained = torch.arange(original_max_len, dtype=F64)
    gaps = []
    for w in omega.tolist():
        seen = torch.remainder(trained * w, 2 * math.pi).sort().values  # (L0,)
        worst = 0.0
        for start in range(original_max_len, max_len, 4096):
            m = torch.arange(start, min(start + 4096, max_len), dtype=F64)
            new = torch.remainder(m * w, 2 * math.pi)
            # distance to the nearest seen angle on the circle: its neighbours in the sorted list
            at = torch.searchsorted(seen, new)  # (R,): seen[at - 1] <= new < seen[at], circularly
            below, above = seen[(at - 1) % original_max_len], seen[at % original_max_len]
            near = torch.minimum(_circular(new, below), _circular(new, above))
            worst = max(worst, float(near.max()))
        gaps.append(worst)
    return torch.tensor(gaps, dtype=F64)


def _circular(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    d = torch.remainder(a - b, 2 * math.pi)
    return torch.minimum(d, 2 * math.pi - d)
