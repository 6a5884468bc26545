r"""RoPE context extension as pure transforms of the frequencies: the methods themselves.

Every method here keeps :func:`posenc_ref.rope.apply_rope` unchanged and only replaces the
per-pair frequencies :math:`\omega_i = \text{base}^{-2i/\text{dim}}` (see
:func:`posenc_ref.absolute.inv_freq`) by new ones :math:`\omega'_i`, sometimes together with an
``attention_factor`` :math:`a` that multiplies both cos and sin (so attention logits get
:math:`a^2`). Notation: ``factor`` :math:`s = L'/L_0`, ``original_max_len`` :math:`L_0`, pair index
:math:`i = 0 .. \text{dim}/2 - 1`.

Each function returns a :class:`ScaledFrequencies` ``(inv_freq, attention_factor)`` with a
float64 ``inv_freq`` of shape ``(dim // 2,)``; feed it to
:func:`posenc_ref.rope.rope_cos_sin` or to ``RotaryEmbedding(scaling=...)``.

Each method is written once, on Python floats (float64): its body computes a list, which
:func:`tensor_method` returns as a tensor, and ``method.values`` (the body itself, returning a
:class:`~posenc_ref.values.ScaledValues`) is what the config reader uses without torch.

:mod:`posenc_ref.rope_scaling` re-exports every function here and names them in its table
:data:`~posenc_ref.rope_scaling.METHODS`, for use by name
(:class:`~posenc_ref.rope_scaling.Scaling`).

API decisions (where this module departs from, or picks between, the systems people run; the
full list is on the "Context extension" page):

- One function per method, keyword-only method parameters, names from the glossary
  (``factor``, ``original_max_len``, ``attention_factor``), never a config object: HF's
  functions read a model config, which hides which numbers matter.
- ``dynamic_ntk`` takes the current ``seq_len`` explicitly and is stateless; the state HF keeps
  (the longest length seen since the last reset) is the caller's business. Its ``original_max_len``
  plays the role of HF's ``max_position_embeddings``.
- ``yarn`` follows the widely deployed code (HF transformers, the YaRN reference repository), not
  the paper, where they differ: the ramp is linear in the pair index, the correction range is
  floored/ceiled (``truncate=True``) and clamped to ``[0, dim - 1]``; an explicit
  ``attention_factor`` is the *final* value (HF semantics), not a multiplier.
- ``longrope``, like ``dynamic_ntk``, takes the current ``seq_len`` and is stateless: which of its
  two factor lists applies is decided per call, from that call's length.
- ``factor < 1`` is refused everywhere: it would compress the context, which none of these
  methods is meant for (HF silently returns attention factor 1 for it).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from ._checks import check_base, check_bool, check_dim, check_int, check_positive_float
from .values import ScaledValues, inv_freq_values

if TYPE_CHECKING:
    import torch

__all__ = [
    "ScaledFrequencies",
    "ScaledValues",
    "tensor_method",
    "linear",
    "ntk_aware",
    "dynamic_ntk",
    "yarn",
    "yarn_mscale",
    "llama3",
    "longrope_attention_factor",
    "longrope",
]


class ScaledFrequencies(NamedTuple):
    r"""Result of a context-extension method.

    Attributes
    ----------
    inv_freq : torch.Tensor
        The new per-pair frequencies :math:`\omega'_i`, shape ``(dim // 2,)``, float64.
    attention_factor : float
        The scalar multiplied into cos and sin (1.0 for methods that have none).
    """

    inv_freq: torch.Tensor
    attention_factor: float


def tensor_method(formula: Callable[..., ScaledValues]) -> Callable[..., ScaledFrequencies]:
    """The public method from its formula on floats: the same call, a float64 tensor returned.

    ``formula`` (the decorated function) computes the frequencies as Python floats; the method
    returns them as :class:`ScaledFrequencies`, and keeps ``formula`` as ``method.values`` for
    callers that need no tensor. torch is imported here, on the first call, not with the module.
    The decorated function is annotated with what its callers get (a ScaledFrequencies); its
    body returns the floats.
    """

    @functools.wraps(formula)
    def method(*args, **kwargs) -> ScaledFrequencies:
        import torch

        values = formula(*args, **kwargs)
        inv_freq = torch.tensor(values.inv_freq, dtype=torch.float64, device="cpu")
        return ScaledFrequencies(inv_freq, values.attention_factor)

    method.values = formula  # type: ignore[attr-defined]
    return method


def _check_factor(factor: object) -> float:
    return check_positive_float("factor", factor, minimum=1.0)


def _check_ntk_dim(dim: object) -> int:
    dim = check_dim("dim", dim)
    if dim < 4:
        # With one pair, omega_0 = 1 for every base: the base has nothing to change, and
        # "keep omega_0, map the slowest pair like PI" contradicts itself (exponent d/(d-2)).
        raise ValueError(f"dim must be an even integer >= 4 for NTK scaling, got {dim!r}")
    return dim


@tensor_method
def linear(dim: int, base: float = 10000.0, *, factor: float) -> ScaledFrequencies:
    r"""Linear scaling / Position Interpolation: every frequency divided by ``factor``.

    Derived on the site: [linear scaling](rope_scaling.md#scaling-linear).

    .. math::

        \omega'_i = \omega_i / s

    Equivalent to rotating position :math:`m` by the angles of position :math:`m/s`. HF
    ``rope_type="linear"``, rotary-embedding-torch ``interpolate_factor``.

    Parameters
    ----------
    dim
        Rotary width (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    factor
        :math:`s \ge 1`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64; ``attention_factor`` 1.0.
    """
    factor = _check_factor(factor)
    return ScaledValues([w / factor for w in inv_freq_values(check_dim("dim", dim), base)], 1.0)


@tensor_method
def ntk_aware(dim: int, base: float = 10000.0, *, factor: float) -> ScaledFrequencies:
    r"""NTK-aware scaling: a larger base, chosen so the slowest pair is interpolated like PI.

    Derived on the site: [NTK-aware scaling](rope_scaling.md#scaling-ntk).

    .. math::

        \text{base}' = \text{base} \cdot s^{\text{dim}/(\text{dim}-2)}, \qquad
        \omega'_i = \text{base}'^{-2i/\text{dim}}

    :math:`\omega'_0 = \omega_0 = 1` and
    :math:`\omega'_{\text{dim}/2-1} = \omega_{\text{dim}/2-1}/s`
    (YaRN paper, eq. 16; rotary-embedding-torch ``theta_rescale_factor``).

    Parameters
    ----------
    dim
        Rotary width (even, ``>= 4``: with a single pair the base has no effect).
    base
        The constant :math:`n`; finite and > 1.
    factor
        :math:`s \ge 1`.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64; ``attention_factor`` 1.0.
    """
    dim = _check_ntk_dim(dim)
    base = check_base("base", base)
    factor = _check_factor(factor)
    return ScaledValues(inv_freq_values(dim, base * factor ** (dim / (dim - 2))), 1.0)


@tensor_method
def dynamic_ntk(
    dim: int,
    base: float = 10000.0,
    *,
    factor: float,
    seq_len: int,
    original_max_len: int,
) -> ScaledFrequencies:
    r"""Dynamic NTK scaling: the NTK base recomputed from the current sequence length.

    Explained on the site: [dynamic NTK](rope_scaling.md#scaling-dynamic-ntk).

    .. math::

        \text{base}' = \text{base} \cdot
        \left(s\,\frac{\max(L, L_0)}{L_0} - (s - 1)\right)^{\text{dim}/(\text{dim}-2)}

    with current length :math:`L` = ``seq_len``. The bracket is 1 for :math:`L \le L_0` (no
    change inside the original context) and grows linearly after it (HF ``rope_type="dynamic"``,
    where :math:`L_0` is ``max_position_embeddings``). Plugging in :math:`L = sL_0` gives the
    bracket :math:`s^2 - (s - 1)`, the static value vLLM uses under the same name. With
    :math:`s = 1` the bracket is :math:`L / L_0`: unlike the other methods, factor 1 is the
    identity only inside the original context.

    Keys already in a KV cache keep the rotation they were written with: once the frequencies
    change, an old key and a new query are rotated with different frequencies and their score
    no longer depends only on their distance. See :class:`posenc_ref.rope.RotaryEmbedding` for
    what the module does about it.

    Parameters
    ----------
    dim
        Rotary width (even, ``>= 4``).
    base
        The constant :math:`n`; finite and > 1.
    factor
        :math:`s \ge 1`.
    seq_len
        Current length :math:`L` (the largest position + 1), ``>= 0``.
    original_max_len
        Pre-training context :math:`L_0`, ``>= 1``.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64; ``attention_factor`` 1.0.
    """
    dim = _check_ntk_dim(dim)
    base = check_base("base", base)
    factor = _check_factor(factor)
    seq_len = check_int("seq_len", seq_len)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    length = max(seq_len, original_max_len)
    ratio = factor * length / original_max_len - (factor - 1)
    return ScaledValues(inv_freq_values(dim, base * ratio ** (dim / (dim - 2))), 1.0)


def yarn_mscale(factor: float, mscale: float = 1.0) -> float:
    r"""YaRN's attention-factor curve :math:`g(s, \mu) = 0.1\,\mu \ln s + 1`, or 1 for s <= 1.

    Explained on the site: [the YaRN conventions](rope_scaling.md#scaling-yarn-conventions).

    ``yarn_mscale(s)`` is YaRN's default ``attention_factor``. Configs that give ``mscale`` and
    ``mscale_all_dim`` (DeepSeek) mean ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)``
    in HF transformers; pass that ratio as ``yarn(..., attention_factor=...)``.

    Returns
    -------
    float
    """
    factor = check_positive_float("factor", factor)
    mscale = check_positive_float("mscale", mscale, minimum=0.0)
    return 1.0 if factor <= 1.0 else 0.1 * mscale * math.log(factor) + 1.0


def _check_betas(beta_fast: object, beta_slow: object) -> tuple[float, float]:
    beta_fast = check_positive_float("beta_fast", beta_fast)
    beta_slow = check_positive_float("beta_slow", beta_slow)
    if beta_fast < beta_slow:  # equal is a step (Kimi K2 releases 1.0 and 1.0)
        raise ValueError(
            f"beta_fast must be >= beta_slow (32 and 1 in the paper), got "
            f"beta_fast={beta_fast!r}, beta_slow={beta_slow!r}"
        )
    return beta_fast, beta_slow


def _yarn_pair_index(rotations: float, dim: int, base: float, original_max_len: int) -> float:
    # Pair index i* where the pair completes `rotations` turns within the original context:
    # L * omega_i / (2 pi) = rotations  <=>  i = dim * ln(L / (2 pi rotations)) / (2 ln base).
    return dim * math.log(original_max_len / (2 * math.pi * rotations)) / (2 * math.log(base))


@tensor_method
def yarn(
    dim: int,
    base: float = 10000.0,
    *,
    factor: float,
    original_max_len: int,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    truncate: bool = True,
    attention_factor: float | None = None,
) -> ScaledFrequencies:
    r"""YaRN ("NTK-by-parts" frequencies plus an attention factor).

    Derived on the site: [YaRN](rope_scaling.md#scaling-yarn) and
    [its conventions](rope_scaling.md#scaling-yarn-conventions).

    .. math::

        \omega'_i = (1 - \gamma_i)\,\omega_i + \gamma_i\,\frac{\omega_i}{s}, \qquad
        \gamma_i = \operatorname{clamp}\!\left(\frac{i - \text{low}}{\text{high} - \text{low}},
        0, 1\right), \qquad a = 0.1 \ln s + 1

    ``low`` and ``high`` are the (fractional) pair indices at which a pair completes
    ``beta_fast`` and ``beta_slow`` turns within the original context,
    :math:`i^*(r) = \text{dim}\,\ln(L_0 / 2\pi r) / (2 \ln \text{base})`. Pairs turning more than
    ``beta_fast`` times keep their frequency; pairs turning fewer than ``beta_slow`` times are
    divided by :math:`s`; the ramp in between is linear in the pair index (as in the code people
    run; the paper writes it linear in the number of turns). With ``truncate=True`` ``low`` is
    floored and ``high`` ceiled; either way they are clamped to ``[0, dim - 1]`` (not
    ``dim/2 - 1``: the deployed code does this), and ``high`` becomes ``low + 0.001`` if it is not
    above ``low`` (the reference code does so only when they are equal; see the comment in the
    code for the one regime where this matters).

    The attention factor multiplies cos *and* sin, so logits are scaled by :math:`a^2`, the
    paper's :math:`\sqrt{1/t}` applied to both q and k.

    Parameters
    ----------
    dim
        Rotary width (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    factor
        :math:`s \ge 1`.
    original_max_len
        Pre-training context :math:`L_0` (HF ``original_max_position_embeddings``), ``>= 1``.
    beta_fast, beta_slow
        Turn counts bounding the ramp, ``beta_fast >= beta_slow > 0`` (32 and 1 in the paper;
        Kimi K2 releases 1 and 1).
    truncate
        Floor/ceil the correction range (default, as in HF and the reference code); ``False``
        keeps the fractional bounds (some released configs, e.g. gpt-oss).
    attention_factor
        The final :math:`a`; ``None`` means :func:`yarn_mscale` ``(factor)``. Engines that read
        this as a multiplier of :math:`0.1\ln s + 1`, or as :math:`\mu` inside it, mean
        something else: convert before passing.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64, and :math:`a`.

    Examples
    --------
    With ``dim=8`` and ``L=64`` pair 0 is kept, pair 1 is half way, pairs 2 and 3 are divided by 4:

    >>> yarn(8, factor=4.0, original_max_len=64).inv_freq
    tensor([1.0000e+00, 6.2500e-02, 2.5000e-03, 2.5000e-04], dtype=torch.float64)
    """
    dim = check_dim("dim", dim)
    base = check_base("base", base)
    factor = _check_factor(factor)
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    beta_fast, beta_slow = _check_betas(beta_fast, beta_slow)
    truncate = check_bool("truncate", truncate)
    if attention_factor is None:
        attention_factor = yarn_mscale(factor)
    else:
        attention_factor = check_positive_float("attention_factor", attention_factor)

    gamma = _yarn_ramp(dim, base, original_max_len, beta_fast, beta_slow, truncate)
    omega = inv_freq_values(dim, base)
    scaled = [(1 - g) * w + g * w / factor for g, w in zip(gamma, omega, strict=True)]
    return ScaledValues(scaled, float(attention_factor))


def _yarn_ramp(
    dim: int, base: float, original_max_len: int, beta_fast: float, beta_slow: float,
    truncate: bool,
) -> list[float]:  # fmt: skip
    # gamma_i per pair, dim // 2 floats: 0 keeps the frequency, 1 divides it by the factor
    low = _yarn_pair_index(beta_fast, dim, base, original_max_len)
    high = _yarn_pair_index(beta_slow, dim, base, original_max_len)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if high <= low:
        # The reference code adds 0.001 when low == high (a step at `low`). When `low` itself is
        # clamped past dim - 1 (original_max_len >= 2 pi beta_fast base^2 roughly; every pair
        # turning more than beta_fast times is not enough) the clamps leave high < low, and
        # HF's ramp then interpolates *every* pair; keeping them all is what the method means,
        # so the step is used there too. No released config is in that regime.
        high = low + 0.001
    return [min(max((pair - low) / (high - low), 0.0), 1.0) for pair in range(dim // 2)]


@tensor_method
def llama3(
    dim: int,
    base: float = 500000.0,
    *,
    factor: float = 8.0,
    low_freq_factor: float = 1.0,
    high_freq_factor: float = 4.0,
    original_max_len: int = 8192,
) -> ScaledFrequencies:
    r"""Llama 3.1 scaling: three wavelength bands.

    Derived on the site: [Llama 3 scaling](rope_scaling.md#scaling-llama3).

    With wavelength :math:`\lambda_i = 2\pi/\omega_i`,

    .. math::

        \omega'_i = \begin{cases}
            \omega_i & \lambda_i < L_0 / f_{\text{high}} \\
            \omega_i / s & \lambda_i > L_0 / f_{\text{low}} \\
            (1 - \sigma_i)\,\omega_i / s + \sigma_i\,\omega_i,
            \quad \sigma_i
            = \dfrac{L_0/\lambda_i - f_{\text{low}}}{f_{\text{high}} - f_{\text{low}}}
            & \text{otherwise}
        \end{cases}

    for ``low_freq_factor`` :math:`f_{\text{low}}` and ``high_freq_factor``
    :math:`f_{\text{high}}`; continuous at both
    band edges. Defaults are Meta's Llama 3.1 values (base 500000, s 8, f_low 1, f_high 4,
    L_0 8192), as in
    HF ``rope_type="llama3"`` and torchtune ``Llama3ScaledRoPE`` (whose base default is 10000).
    ``l == h`` (Llama 4 Scout) leaves no middle band.

    Parameters
    ----------
    dim
        Rotary width (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    factor
        :math:`s \ge 1`.
    low_freq_factor, high_freq_factor
        :math:`0 < f_{\text{low}} \le f_{\text{high}}`.
    original_max_len
        Pre-training context :math:`L_0`, ``>= 1``.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64; ``attention_factor`` 1.0.
    """
    factor = _check_factor(factor)
    low = check_positive_float("low_freq_factor", low_freq_factor)
    high = check_positive_float("high_freq_factor", high_freq_factor)
    if high < low:
        raise ValueError(
            f"high_freq_factor must be >= low_freq_factor (4 and 1 in Llama 3.1), got "
            f"high_freq_factor={high!r}, low_freq_factor={low!r}"
        )
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    result = []
    for omega in inv_freq_values(check_dim("dim", dim), base):
        turns = original_max_len * omega / (2 * math.pi)  # L / lambda_i
        slow, middle = _llama3_bands(turns, low, high)
        if slow:
            omega = omega / factor
        elif middle and high > low:
            sigma = (turns - low) / (high - low)
            omega = (1 - sigma) * omega / factor + sigma * omega
        result.append(omega)
    return ScaledValues(result, 1.0)


def _llama3_bands(turns, low: float, high: float):
    # Llama 3's band of a pair from its turns L / lambda_i: (slow, middle), for one float or
    # elementwise for a tensor of them (the command line's `compare` groups pairs by them).
    # slow: lambda > L/l, divided by the factor; middle: L/h <= lambda <= L/l, blended; the rest
    # (the fast pairs) keep their frequency.
    return turns < low, (turns >= low) & (turns <= high)


def _check_factor_list(name: str, values: object, pairs: int) -> list[float]:
    torch = sys.modules.get("torch")  # a tensor can only come from a program that imported it
    if torch is not None and isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float64).flatten().tolist()
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a list of {pairs} positive numbers, got {values!r}")
    values = list(values)
    if len(values) != pairs:
        raise ValueError(
            f"{name} must have dim // 2 = {pairs} entries (one per rotary pair), got {len(values)}"
        )
    for i, value in enumerate(values):
        check_positive_float(f"{name}[{i}]", value)
    return [float(v) for v in values]


def _longrope_factor(factor: object, max_len: object, original_max_len: int) -> float:
    # s as given, else max_len / original_max_len (HF's rule, which Phi-3 configs rely on)
    if factor is None:
        if max_len is None:
            raise ValueError(
                "longrope needs factor, or max_len to derive it as max_len / original_max_len "
                "(HF: max_position_embeddings / original_max_position_embeddings)"
            )
        max_len = check_int("max_len", max_len, minimum=1)
        factor = max_len / original_max_len
        if factor < 1.0:
            raise ValueError(
                f"max_len={max_len} must be >= original_max_len={original_max_len} (the derived "
                f"factor max_len / original_max_len is {factor:g} < 1)"
            )
    return _check_factor(factor)


def longrope_attention_factor(factor: float, original_max_len: int) -> float:
    r"""LongRoPE's default attention factor :math:`\sqrt{1 + \ln s / \ln L_0}`, or 1 for s <= 1.

    Explained on the site: [LongRoPE](rope_scaling.md#scaling-longrope).

    Parameters
    ----------
    factor
        Extension ratio :math:`s > 0`.
    original_max_len
        Pre-training context :math:`L_0`, ``>= 2`` (the formula divides by :math:`\ln L_0`).

    Returns
    -------
    float
    """
    factor = check_positive_float("factor", factor)
    original_max_len = check_int("original_max_len", original_max_len, minimum=2)
    if factor <= 1.0:
        return 1.0
    return math.sqrt(1.0 + math.log(factor) / math.log(original_max_len))


@tensor_method
def longrope(
    dim: int,
    base: float = 10000.0,
    *,
    short_factor: list[float],
    long_factor: list[float],
    original_max_len: int,
    seq_len: int,
    factor: float | None = None,
    max_len: int | None = None,
    attention_factor: float | None = None,
) -> ScaledFrequencies:
    r"""LongRoPE (Phi-3, Phi-3.5, Phi-4-mini): a searched rescale factor per pair, two lists.

    Derived on the site: [LongRoPE](rope_scaling.md#scaling-longrope).

    .. math::

        \omega'_i = \frac{\omega_i}{\varphi_i}, \qquad
        \varphi_i = \begin{cases} \varphi^{\text{short}}_i & L \le L_0 \\
        \varphi^{\text{long}}_i & L > L_0 \end{cases}, \qquad
        a = \sqrt{1 + \frac{\ln s}{\ln L_0}} \;(a = 1 \text{ for } s \le 1)

    with the lists :math:`\varphi^{\text{short}}` = ``short_factor`` and
    :math:`\varphi^{\text{long}}` = ``long_factor``, current length :math:`L` = ``seq_len``
    (the largest position + 1) and pre-training context :math:`L_0` = ``original_max_len``. The
    lists are not derived from a formula: they were found by a search over perplexity (the
    LongRoPE paper) and are shipped in the model's config.
    The switch at :math:`L_0` is the rule of HF transformers' ``rope_type="longrope"``.

    :math:`s` is ``factor`` when given; otherwise it is ``max_len / original_max_len`` (HF reads
    ``max_position_embeddings / original_max_position_embeddings``, the rule Phi-3 configs rely
    on). It only sets the default attention factor; an explicit ``attention_factor`` is the final
    value (HF semantics), as in :func:`yarn`.

    Keys already in a KV cache keep the rotation they were written with: once a generation grows
    past :math:`L_0` new queries use the long list while earlier keys were rotated with the short
    one, and scores between them no longer depend only on their distance (see the site).

    Parameters
    ----------
    dim
        Rotary width (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    short_factor, long_factor
        ``dim // 2`` positive numbers each (lists or 1-D tensors), :math:`\varphi_i`.
    original_max_len
        Pre-training context :math:`L_0` (HF ``original_max_position_embeddings``), ``>= 2``.
    seq_len
        Current length :math:`L`, ``>= 0``.
    factor
        :math:`s \ge 1`, or ``None`` to derive it from ``max_len``.
    max_len
        Extended context (HF ``max_position_embeddings``), ``>= 1``; used only when ``factor`` is
        ``None``.
    attention_factor
        The final :math:`a > 0`; ``None`` means the default above.

    Returns
    -------
    ScaledFrequencies
        ``inv_freq`` of shape ``(dim // 2,)``, float64, and :math:`a`.

    Examples
    --------
    >>> short, long = [1.0, 1.0], [1.0, 4.0]
    >>> longrope(4, short_factor=short, long_factor=long, original_max_len=64,
    ...          seq_len=65, max_len=256).inv_freq
    tensor([1.0000, 0.0025], dtype=torch.float64)
    """
    dim = check_dim("dim", dim)
    base = check_base("base", base)
    short = _check_factor_list("short_factor", short_factor, dim // 2)
    long = _check_factor_list("long_factor", long_factor, dim // 2)
    original_max_len = check_int("original_max_len", original_max_len, minimum=2)
    seq_len = check_int("seq_len", seq_len)
    factor = _longrope_factor(factor, max_len, original_max_len)
    if attention_factor is None:
        attention_factor = longrope_attention_factor(factor, original_max_len)
    else:
        attention_factor = check_positive_float("attention_factor", attention_factor)
    rescale = long if seq_len > original_max_len else short
    scaled = [w / r for w, r in zip(inv_freq_values(dim, base), rescale, strict=True)]
    return ScaledValues(scaled, float(attention_factor))
