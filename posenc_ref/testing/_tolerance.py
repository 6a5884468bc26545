r"""The tolerance: how far a correct implementation's output may be from the float64 expectation.

Explained on the site: [what is compared, and how closely](check.md#check-rope) and
[the float32 kernels it covers](check.md#check-kernels).

Two terms, per output coordinate of pair :math:`i` at position :math:`m`:

- the rounding of the result, :math:`8u_x` relative to the pair's norm (:data:`OUTPUT_ROUNDINGS`
  unit roundoffs of the input dtype);
- the error of the angle :math:`m\,\omega_i` when a kernel forms it in float32
  (:func:`float32_angle_allowance`). Real kernels compute the frequencies in several ways (a
  ``pow`` per pair, ``exp(-ln(base) 2i/d)``, ggml's repeated multiplication, float64 then a
  cast, a blend of two frequencies for YaRN or Llama 3) and form the angle as a float32
  product, or read it from a float32 cos/sin cache. The allowance is the largest first-order
  error of any of them, doubled:

.. math::

    |\Delta\theta_i(m)| \le 2\,u_{32}\,|m|\,\Bigl(\omega_i\,(4 L_i + 3 k_i + 4)
    + 2\,|\bar\omega_i - \omega_i|\Bigr),

with :math:`L_i = \ln(1/\bar\omega_i)` the size of the exponent of the plain frequency
:math:`\bar\omega_i = n^{-2i/d}` (its rounding is amplified by the power), :math:`k_i = i` the
number of float32 multiplications a ggml-style loop makes to reach pair :math:`i`, and
:math:`\bar\omega_i - \omega_i` the part a blend of two frequencies (YaRN's ramp, Llama 3's
smoothing) carries the rounding of. The derivation, kernel by kernel, is on the check page.
"""

from __future__ import annotations

import torch

from ._calls import Call
from ._common import UNIT_ROUNDOFF, excess_ratio
from ._model import Model, pair_index, pair_parts

__all__ = [
    "OUTPUT_ROUNDINGS",
    "ANGLE_MARGIN",
    "EXPONENT_ROUNDINGS",
    "LOOP_ROUNDINGS",
    "FIXED_ROUNDINGS",
    "BLEND_ROUNDINGS",
    "float32_angle_allowance",
    "angle_allowance_per_position",
    "frequency_steps",
    "relative_allowance",
    "rope_allowance",
    "excess_ratio",
]

# The rounding of a result: a few operations (two table values, two products and a sum) of the
# working dtype, each off by at most u relative to the pair's norm. 8u leaves a factor ~2 over
# the count for code that rotates in the activation dtype (HF) rather than in float32.
OUTPUT_ROUNDINGS = 8

# The float32 angle allowance, in unit roundoffs of float32 per radian of angle (see the module
# docstring and the check page for the count behind each number).
EXPONENT_ROUNDINGS = 4  # exp(-x) with x = 2i * (logf(base) / d): logf, /d, *2i roundings of x
LOOP_ROUNDINGS = 3  # per multiplication of ggml's loop: its rounding, and theta_scale's powf
FIXED_ROUNDINGS = 4  # pow (1 ulp = 2u), the reciprocal and the angle product
BLEND_ROUNDINGS = 2  # a blend w_a (1 - g) + w_b g: the rounding of g and of the larger term
ANGLE_MARGIN = 2  # for second-order terms and libm functions off by more than one ulp


def float32_angle_allowance(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    base: float,
    plain_inv_freq: torch.Tensor | None = None,
    steps: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""The largest error of an angle :math:`m\,\omega_i` formed by a correct float32 kernel.

    Explained on the site: [the float32 kernels it covers](check.md#check-kernels).

    .. math::

        2\,u_{32}\,|m|\,\Bigl(\omega_i\,(4 L_i + 3 k_i + 4) + 2\,|\bar\omega_i - \omega_i|\Bigr)

    radians, with :math:`u_{32} = 2^{-24}`, :math:`\bar\omega_i = n^{-2i/d}` the plain frequency
    of pair :math:`i` (``plain_inv_freq``), :math:`L_i = \ln(1/\bar\omega_i)` and
    :math:`k_i = i` (``steps``). It covers a ``pow`` per pair, ``exp(-ln(n) 2i/d)``, ggml's
    repeated multiplication (``theta *= theta_scale``), frequencies computed in float64 and cast,
    blends of two frequencies (YaRN, Llama 3), and cos/sin caches computed in float32 and
    indexed by position. The check page derives each term and shows the kernels against it.

    Parameters
    ----------
    positions
        ``(n,)`` positions, or ``(n, pairs)`` when each pair has its own (M-RoPE, a patch grid).
    inv_freq
        ``(pairs,)`` the reference's frequencies :math:`\omega_i` (scaled ones included).
    base
        The base :math:`n` the plain frequencies come from (> 0).
    plain_inv_freq
        ``(pairs,)`` :math:`\bar\omega_i`; default :math:`n^{-2i/d}` with :math:`d = 2\,` pairs.
    steps
        ``(pairs,)`` :math:`k_i`; default :math:`0, 1, \dots`

    Returns
    -------
    torch.Tensor
        ``(n, pairs)`` float64, in radians.

    Examples
    --------
    >>> from posenc_ref import inv_freq
    >>> allowed = float32_angle_allowance(torch.tensor([1_000_000]), inv_freq(128), base=1e4)
    >>> f"{float(allowed.max()):.3g} rad"
    '1.28 rad'
    """
    omega = inv_freq.detach().to("cpu", torch.float64)
    pairs = omega.numel()
    if plain_inv_freq is None:
        exponents = 2.0 * torch.arange(pairs, dtype=torch.float64) / (2 * pairs)
        plain = torch.as_tensor(float(base), dtype=torch.float64) ** -exponents
    else:
        plain = plain_inv_freq.detach().to("cpu", torch.float64)
    k = torch.arange(pairs, dtype=torch.float64) if steps is None else steps.to(torch.float64)
    exponent = torch.log(1 / plain.clamp(min=1e-300)).clamp(min=0)  # L_i
    per_unit = (
        omega.abs() * (EXPONENT_ROUNDINGS * exponent + LOOP_ROUNDINGS * k + FIXED_ROUNDINGS)
        + BLEND_ROUNDINGS * (plain - omega).abs()
    )
    m = positions.detach().to("cpu", torch.float64).abs()
    m = m[:, None] if m.dim() == 1 else m
    return ANGLE_MARGIN * UNIT_ROUNDOFF[torch.float32] * m * per_unit


def frequency_steps(inv_freq: torch.Tensor) -> torch.Tensor:
    """The rank of each frequency among the distinct ones, fastest first: ``(pairs,)`` float64.

    The number of multiplications a ggml-style loop makes to reach it, where frequencies repeat
    (a patch grid's two axes, a sinusoidal table's sin and cos columns).
    """
    omega = inv_freq.detach().to("cpu", torch.float64)
    distinct = torch.unique(omega)  # ascending
    return (distinct.numel() - 1 - torch.searchsorted(distinct, omega)).to(torch.float64)


def angle_allowance_per_position(rotary_dim: int, base: float = 100.0) -> float:
    r"""The float32 angle allowance per unit of position for a frequency nobody told us.

    The property checks know no reference: they take the largest value over the pairs of
    ``rotary_dim`` of :func:`float32_angle_allowance` at position 1, for the smallest base
    released models use or below (100 by default: the largest :math:`k_i \omega_i`).
    """
    pairs = max(rotary_dim // 2, 1)
    plain = float(base) ** (-2.0 * torch.arange(pairs, dtype=torch.float64) / (2 * pairs))
    allowed = float32_angle_allowance(torch.ones(1), plain, base=base, plain_inv_freq=plain)
    return float(allowed.max())


def describe() -> str:
    """The angle term in one line, for messages and metadata."""
    return (
        f"{ANGLE_MARGIN} u32 |m| (w ({EXPONENT_ROUNDINGS} ln(1/w0) + {LOOP_ROUNDINGS} i + "
        f"{FIXED_ROUNDINGS}) + {BLEND_ROUNDINGS} |w0 - w|), w0 = base^(-2i/d) the plain frequency"
    )


def relative_allowance(
    model: Model,
    call: Call,
    *,
    float32_angles: bool,
    rtol: float | None,
    rounding_step: bool = False,
    tokens: torch.Tensor | None = None,
) -> torch.Tensor:
    """The allowance of each rotated coordinate relative to its pair's norm, before the factor.

    ``rtol + angle_i(m)`` (plus ``rounding_step``'s term) for the frequency the coordinate's
    table entry holds: ``(n, rotary_dim)`` or ``(batch, 1, n, rotary_dim)``, for the token
    indices ``tokens`` only when given. It depends on the model and the call only, so the
    queries and the keys of a call share it.
    """
    r = model.rotary_dim
    omega = model.freqs(call).inv_freq.detach().to("cpu", torch.float64)
    m = model.pair_positions(call, tokens).abs()  # (n, pairs) or (batch, 1, n, pairs)
    out_rel = rtol if rtol is not None else OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[call.dtype]
    relative = torch.full_like(m, out_rel)
    if float32_angles:
        relative = relative + float32_angle_allowance(
            m.reshape(-1, m.shape[-1]), omega, base=model.base, plain_inv_freq=model.plain,
            steps=model.steps,
        ).reshape(m.shape)  # fmt: skip
    if rounding_step and model.precision is not None:
        _, w_dt, a_dt, t_dt = model.precision
        relative = relative + 3 * UNIT_ROUNDOFF[t_dt]  # one step of cos and of sin
        relative = relative + 2 * (UNIT_ROUNDOFF[w_dt] + UNIT_ROUNDOFF[a_dt]) * m * omega
    return relative[..., pair_index(model.table_layout or model.layout, r)]


def rope_allowance(
    model: Model,
    x: torch.Tensor,
    call: Call,
    *,
    float32_angles: bool,
    rtol: float | None,
    atol: float,
    attention_factor: float | None = None,
    rounding_step: bool = False,
    relative: torch.Tensor | None = None,
) -> torch.Tensor:
    """Allowed absolute error per coordinate of the output of ``call``, same shape as ``x``.

    Rotated coordinate of pair ``i`` at position ``m``: ``a |pair| (rtol + angle_i(m)) + atol``
    with ``rtol = 8 u(dtype)`` by default and ``angle_i(m)`` from
    :func:`float32_angle_allowance` when float32 angles are accepted (else 0), for the
    frequency the coordinate's table entry holds. Coordinates past ``rotary_dim`` are copied:
    ``u(dtype) |x| + atol``. ``rounding_step`` adds one rounding step of the quantity a
    low-precision model rounds (where the user's float32 value and ours may round apart).
    ``relative``: :func:`relative_allowance` of the same model, call and options, when the
    caller has it already (the diagnosis, for q and k of every call of every model).
    """
    r = model.rotary_dim
    a = float(model.freqs(call).attention_factor) if attention_factor is None else attention_factor
    if relative is None:
        relative = relative_allowance(
            model, call, float32_angles=float32_angles, rtol=rtol, rounding_step=rounding_step
        )
    u, v = pair_parts(x, model.layout, r)
    norm = torch.sqrt(u * u + v * v)  # (..., n, pairs)
    # the norm of the coordinate's pair, the allowance of the angle its table entry holds
    norm = norm[..., pair_index(model.layout, r)]
    rotated = model.written(a * norm * relative + atol)
    copied = UNIT_ROUNDOFF[call.dtype] * x[..., r:].abs() + atol
    return torch.cat([rotated, copied], dim=-1)
