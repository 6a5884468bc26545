r"""Beyond RoPE: no encoding at all, and the rotary variants that papers and released models use.

- **NoPE** (no positional encoding): nothing is added. A causal decoder still recovers absolute
  position: :func:`uniform_attention` over a beginning-of-sequence marker gives
  :math:`1/(m+1)` at position :math:`m` (:func:`nope_position_signal`).
- **p-RoPE** (Barbero et al., 2025; Gemma 4's ``"proportional"`` RoPE): the slowest pairs get
  frequency 0 and pass through unrotated (:func:`p_rope`).
- **xPos** (Sun et al., 2023): RoPE whose pair :math:`i` is also scaled by
  :math:`\zeta_i^{m/B}` on the query at :math:`m` and :math:`\zeta_i^{-p/B}` on the key at
  :math:`p`, so that scores decay with distance (:func:`xpos_scale`, :func:`xpos_cos_sin`).
- **FoPE** (Hua et al., 2025; Intern-S1-Pro in vLLM and SGLang): frequencies that do not complete
  a turn within the training length are clipped to 0 (:func:`fope_inv_freq`), and each pair's cos
  and sin become a Fourier series over the kept frequencies (:func:`fope_cos_sin`).
- **RoPE-Mixed** (Heo et al., 2024): 2-D RoPE whose pair :math:`i` turns by
  :math:`\omega^y_i\,y + \omega^x_i\,x`, learned frequencies over both axes
  (:func:`rope_mixed_cos_sin`; axial RoPE is the case where one of the two is 0 for every pair,
  :func:`axial_as_mixed`).

Every rotary variant here only builds ``cos`` and ``sin`` tables (or frequencies) for
:func:`posenc_ref.rope.apply_rope`, which is unchanged. Tables are computed in float64 and cast
once at the end, as everywhere in the package.

Derived on the site: [Beyond RoPE](beyond_rope.md).
"""

from __future__ import annotations

import math

import torch

from ._checks import check_base, check_bool, check_dim, check_int, check_positive_float, shown
from ._tensor_checks import (
    check_float_dtype,
    check_inv_freq,
    check_positions,
    check_table_dtype,
    check_tensor,
)
from .absolute import inv_freq as _inv_freq
from .device import check_device, compute_device

__all__ = [
    "uniform_attention",
    "nope_position_signal",
    "p_rope",
    "xpos_scale",
    "xpos_cos_sin",
    "fope_inv_freq",
    "fope_cos_sin",
    "rope_mixed_angles",
    "rope_mixed_cos_sin",
    "rope_mixed_frequencies",
    "axial_as_mixed",
]


# --------------------------------------------------------------------------- NoPE


def uniform_attention(values: torch.Tensor, *, causal: bool = True) -> torch.Tensor:
    r"""Attention whose scores are all equal: each query averages the values it may see.

    Explained on the site: [NoPE](beyond_rope.md#beyond-nope).

    This is what an attention head computes when its query (or key) projection is zero, the
    construction behind NoPE's first layer. With the causal mask, query :math:`m` sees keys
    :math:`0 .. m` and returns :math:`\frac{1}{m+1}\sum_{p \le m} v_p`; without it, every query
    returns the same mean of all :math:`L` values.

    Parameters
    ----------
    values
        ``(..., seq_len, dim)`` floating tensor.
    causal
        Whether query :math:`m` sees only keys :math:`p \le m` (a decoder) or all keys.

    Returns
    -------
    torch.Tensor
        Same shape and dtype as ``values``.
    """
    values = check_tensor("values", values)
    causal = check_bool("causal", causal)
    if values.dim() < 2 or not values.is_floating_point():
        raise ValueError(
            f"values must be a floating tensor of shape (..., seq_len, dim), got shape "
            f"{tuple(values.shape)} and dtype {values.dtype}"
        )
    length = values.shape[-2]
    scores = torch.zeros(length, length, dtype=values.dtype, device=values.device)
    if causal:
        future = torch.ones(length, length, dtype=torch.bool, device=values.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.softmax(scores, dim=-1) @ values  # (L, L) @ (..., L, dim)


def nope_position_signal(
    seq_len: int, *, causal: bool = True, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    r"""What one uniform attention head reads from a beginning-of-sequence marker: :math:`1/(m+1)`.

    Explained on the site: [NoPE](beyond_rope.md#beyond-nope).

    The value at position 0 is 1 (the marker) and 0 elsewhere; :func:`uniform_attention` then
    gives :math:`1/(m+1)` at position :math:`m` with the causal mask, a strictly decreasing, so
    invertible, function of the absolute position. Without the mask every position gets
    :math:`1/L`: a bidirectional model without an encoding cannot tell positions apart.

    Parameters
    ----------
    seq_len
        Number of positions, ``>= 1``.
    causal
        With (decoder) or without (encoder) the causal mask.
    dtype
        Floating dtype of the result.

    Returns
    -------
    torch.Tensor
        Shape ``(seq_len,)``.

    Examples
    --------
    >>> nope_position_signal(4)
    tensor([1.0000, 0.5000, 0.3333, 0.2500], dtype=torch.float64)
    """
    seq_len = check_int("seq_len", seq_len, minimum=1)
    dtype = check_float_dtype("dtype", dtype)
    marker = torch.zeros(seq_len, 1, dtype=dtype)  # (L, 1): the marker's one feature
    marker[0] = 1.0
    return uniform_attention(marker, causal=causal)[:, 0]


# --------------------------------------------------------------------------- p-RoPE


def p_rope(inv_freq: torch.Tensor, fraction: float) -> torch.Tensor:
    r"""p-RoPE: keep the fastest ``fraction`` of the pairs rotating and set the others to 0.

    Derived on the site: [p-RoPE](beyond_rope.md#beyond-p-rope).

    With :math:`P` pairs the first :math:`\lfloor pP \rfloor` frequencies are kept and the rest
    become 0, so those pairs are never rotated (cos 1, sin 0): they carry content only, as in
    NoPE. :math:`p = 1` is RoPE and :math:`p = 0` is NoPE. HF transformers' ``"proportional"``
    RoPE (Gemma 4's global layers, :math:`p = 0.25`) is ``p_rope(inv_freq(head_dim, base), p)``.
    Any frequency vector can be truncated, for example one from
    :mod:`posenc_ref.rope_scaling`.

    Parameters
    ----------
    inv_freq
        ``(pairs,)`` frequencies, fastest first, float32 or float64.
    fraction
        :math:`p \in [0, 1]`.

    Returns
    -------
    torch.Tensor
        ``(pairs,)`` float64, on ``inv_freq``'s device.

    Examples
    --------
    >>> from posenc_ref import inv_freq
    >>> p_rope(inv_freq(8, 100.0), 0.5)
    tensor([1.0000, 0.3162, 0.0000, 0.0000], dtype=torch.float64)
    """
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise TypeError(f"fraction must be a real number in [0, 1], got {shown(fraction)}")
    if not 0.0 <= float(fraction) <= 1.0:
        raise ValueError(f"fraction must be in [0, 1] (1 is RoPE, 0 is NoPE), got {fraction!r}")
    kept = math.floor(float(fraction) * inv_freq.numel())
    out = inv_freq.to(torch.float64).clone()
    out[kept:] = 0.0
    return out


# --------------------------------------------------------------------------- xPos


def xpos_scale(
    positions: torch.Tensor,
    dim: int,
    *,
    scale_base: float = 512.0,
    gamma: float = 0.4,
    key: bool = False,
) -> torch.Tensor:
    r"""XPos's per-pair scale: :math:`\zeta_i^{m/B}` for a query, :math:`\zeta_i^{-m/B}` for a key.

    Derived on the site: [xPos](beyond_rope.md#beyond-xpos).

    .. math::

        \zeta_i = \frac{2i/d + \gamma}{1 + \gamma}, \qquad i = 0 .. d/2 - 1,

    with :math:`d` = ``dim``, :math:`\gamma` = ``gamma`` (0.4) and :math:`B` = ``scale_base``
    (512). A query at :math:`m` and a key at :math:`p` then carry
    :math:`\zeta_i^{(m-p)/B} \le 1` for :math:`m \ge p`: fast pairs (small :math:`\zeta_i`) decay
    quickly with distance, slow pairs hardly at all.

    Only differences of positions matter, so any common shift of query and key positions gives
    the same scores; torchscale subtracts :math:`\lceil L/2 \rceil` to keep both factors in
    floating-point range. Shift ``positions`` yourself the same way for long sequences
    (:math:`0.286^{m/512}` underflows float64 near :math:`m = 3 \times 10^5`); they may be
    negative here.

    Parameters
    ----------
    positions
        ``(..., seq_len)`` integer or float tensor (negative values allowed).
    dim
        Rotary width :math:`d` (positive, even).
    scale_base
        :math:`B > 0`.
    gamma
        :math:`\gamma > 0`.
    key
        ``False`` for queries (:math:`\zeta^{m/B}`), ``True`` for keys (:math:`\zeta^{-m/B}`).

    Returns
    -------
    torch.Tensor
        ``(..., seq_len, dim // 2)`` float64.
    """
    positions = check_positions("positions", positions, signed=True)
    dim = check_dim("dim", dim)
    scale_base = check_positive_float("scale_base", scale_base)
    gamma = check_positive_float("gamma", gamma)
    key = check_bool("key", key)
    where = compute_device(positions.device)
    pair = torch.arange(dim // 2, dtype=torch.float64, device=where)
    zeta = (2 * pair / dim + gamma) / (1 + gamma)  # (dim / 2,), in (0, 1)
    power = positions.to(where, torch.float64).unsqueeze(-1) / scale_base  # (..., L, 1)
    scale = zeta ** (-power if key else power)
    return scale.to(positions.device)


def xpos_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    *,
    scale_base: float = 512.0,
    gamma: float = 0.4,
    key: bool = False,
    attention_factor: float = 1.0,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The cos and sin tables of xPos: RoPE's, each pair scaled by :func:`xpos_scale`.

    Derived on the site: [xPos](beyond_rope.md#beyond-xpos).

    .. math::

        \cos_{m,i} = a\,\zeta_i^{\pm m/B} \cos(m\,\omega_i), \qquad
        \sin_{m,i} = a\,\zeta_i^{\pm m/B} \sin(m\,\omega_i)

    (``+`` for queries, ``-`` for keys). Rotate queries with ``key=False`` and keys with
    ``key=True`` through :func:`posenc_ref.rope.apply_rope`. The rotation angle uses the
    positions as given, so shift positions for range (see :func:`xpos_scale`) only if the
    rotation is shifted alike: the score depends on :math:`m - p` either way.

    Parameters
    ----------
    positions
        ``(..., seq_len)`` integer or float tensor (negative values allowed).
    inv_freq
        ``(dim // 2,)`` frequencies :math:`\omega_i` (:func:`posenc_ref.inv_freq`, or a scaled
        set from :mod:`posenc_ref.rope_scaling`).
    scale_base, gamma, key
        As in :func:`xpos_scale`.
    attention_factor
        :math:`a > 0` (1 unless a context-extension method supplies one).
    dtype
        ``torch.float32`` or ``torch.float64``.

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., seq_len, dim // 2)``.
    """
    positions = check_positions("positions", positions, signed=True)
    inv_freq = check_inv_freq("inv_freq", inv_freq)
    attention_factor = check_positive_float("attention_factor", attention_factor)
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    scale = xpos_scale(positions, 2 * inv_freq.numel(), scale_base=scale_base, gamma=gamma, key=key)
    where = compute_device(positions.device)
    angles = positions.to(where, torch.float64).unsqueeze(-1) * inv_freq.to(where, torch.float64)
    amplitude = attention_factor * scale.to(where)  # (..., L, dim / 2)
    cos, sin = amplitude * torch.cos(angles), amplitude * torch.sin(angles)
    return cos.to(positions.device, dtype), sin.to(positions.device, dtype)


# --------------------------------------------------------------------------- FoPE


def fope_inv_freq(dim: int, base: float = 10000.0, *, original_max_len: int) -> torch.Tensor:
    r"""FoPE's kept frequencies: those that complete at least one turn within the training length.

    Derived on the site: [FoPE](beyond_rope.md#beyond-fope).

    Of :math:`\omega_i = \text{base}^{-2i/d}`, keep those with :math:`\omega_i > 2\pi/L_0`
    (wavelength shorter than :math:`L_0`); the others, "under-trained" because no training
    sequence shows them a full period, are clipped to frequency 0. The kept ones are the fastest,
    so they are a prefix of :func:`posenc_ref.inv_freq`. vLLM's ``FourierRotaryEmbedding`` uses
    this rule with :math:`L_0` = ``max_position_embeddings`` unless a config fixes the count
    (``num_inv_freq``).

    Parameters
    ----------
    dim
        Rotary width :math:`d` (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    original_max_len
        Training length :math:`L_0`, ``>= 1``.

    Returns
    -------
    torch.Tensor
        ``(kept,)`` float64, ``0 <= kept <= dim // 2``.
    """
    original_max_len = check_int("original_max_len", original_max_len, minimum=1)
    omega = _inv_freq(dim, base)
    return omega[omega > 2 * math.pi / original_max_len]


# The sin of a clipped pair: FoPE's reference code, vLLM and SGLang pad with 1 (the FoPE authors,
# TsinghuaC3I/Fourier-Position-Embedding#6: zero frequency with phase 45 degrees, on purpose).
_FOPE_CLIPPED_SIN = {"reference": 1.0, "identity": 0.0}


def fope_cos_sin(
    positions: torch.Tensor,
    inv_freq: torch.Tensor,
    cos_coef: torch.Tensor,
    sin_coef: torch.Tensor,
    *,
    rotary_dim: int,
    clipped: str = "reference",
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""FoPE's cos and sin tables: per pair, a Fourier series over the kept frequencies.

    Derived on the site: [FoPE](beyond_rope.md#beyond-fope).

    .. math::

        \cos_{m,j} = \sum_k A_{kj} \cos(m\,\omega_k), \qquad
        \sin_{m,j} = \sum_k B_{kj} \sin(m\,\omega_k)

    for the kept frequencies :math:`\omega_k` (:func:`fope_inv_freq`) and coefficient matrices
    :math:`A` = ``cos_coef``, :math:`B` = ``sin_coef`` (one pair per head in vLLM's
    ``fope_sep_head``, weights of the checkpoint). Pairs :math:`j` past the coefficients' output
    width (the clipped ones) get frequency 0, with one of two phases (``clipped``):

    - ``"reference"``: cos 1 and sin 1, as in FoPE's reference code, vLLM's and SGLang's
      ``FourierRotaryEmbedding`` (the released engines that run FoPE checkpoints). The FoPE
      authors chose it on purpose (zero frequency, phase 45 degrees): a clipped pair
      :math:`(u, v)` becomes :math:`(u - v, v + u)`, the same at every position.
    - ``"identity"``: cos 1 and sin 0, the pair passes through unchanged. With :math:`A = B = I`
      this is RoPE with the clipped frequencies.

    Rotate with :func:`posenc_ref.rope.apply_rope` (vLLM:
    ``layout="half"``); the tables are not unit-modulus, so the result is a rotation and a
    scaling, and the score is no longer a function of :math:`p - m` alone.

    Parameters
    ----------
    positions
        ``(seq_len,)`` integer or float tensor, ``>= 0``.
    inv_freq
        ``(kept,)`` kept frequencies, float32 or float64.
    cos_coef, sin_coef
        ``(..., kept, out)`` floating tensors of the same shape, ``out <= rotary_dim // 2``;
        leading dimensions (heads) are carried to the result.
    rotary_dim
        Rotated width :math:`d`; the tables have :math:`d/2` pairs.
    clipped
        ``"reference"`` (sin 1 on the clipped pairs, what released engines compute) or
        ``"identity"`` (sin 0).
    dtype
        ``torch.float32`` or ``torch.float64``.

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., seq_len, rotary_dim // 2)``; for coefficients
        ``(heads, kept, out)`` that is ``(heads, seq_len, rotary_dim // 2)``, which
        :func:`posenc_ref.rope.apply_rope` broadcasts over ``(batch, heads, seq_len, head_dim)``.
    """
    positions = check_positions("positions", positions)
    if positions.dim() != 1:
        raise ValueError(f"positions must have shape (seq_len,), got {tuple(positions.shape)}")
    # No kept frequency (a training length under 2 pi) is valid: every pair is then unrotated.
    if not (isinstance(inv_freq, torch.Tensor) and inv_freq.dim() == 1 and inv_freq.numel() == 0):
        inv_freq = check_inv_freq("inv_freq", inv_freq)
    rotary_dim = check_dim("rotary_dim", rotary_dim)
    if not isinstance(clipped, str) or clipped not in _FOPE_CLIPPED_SIN:
        raise ValueError(f"clipped must be one of {tuple(_FOPE_CLIPPED_SIN)}, got {shown(clipped)}")
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    for name, coef in (("cos_coef", cos_coef), ("sin_coef", sin_coef)):
        coef = check_tensor(name, coef)
        if coef.dim() < 2 or not coef.is_floating_point() or coef.shape[-2] != inv_freq.numel():
            raise ValueError(
                f"{name} must be a floating tensor of shape (..., {inv_freq.numel()}, out) (one "
                f"row per kept frequency), got shape {tuple(coef.shape)} and dtype {coef.dtype}"
            )
        if coef.shape[-1] > rotary_dim // 2:
            raise ValueError(
                f"{name} has {coef.shape[-1]} output pairs, more than rotary_dim // 2 = "
                f"{rotary_dim // 2}"
            )
    if cos_coef.shape != sin_coef.shape:
        raise ValueError(
            f"cos_coef and sin_coef must have the same shape, got {tuple(cos_coef.shape)} and "
            f"{tuple(sin_coef.shape)}"
        )
    where = compute_device(positions.device)
    angles = positions.to(where, torch.float64)[:, None] * inv_freq.to(where, torch.float64)
    cos = torch.cos(angles) @ cos_coef.to(where, torch.float64)  # (..., L, out)
    sin = torch.sin(angles) @ sin_coef.to(where, torch.float64)
    missing = rotary_dim // 2 - cos.shape[-1]
    # Frequency 0: cos 1, and sin 1 (phase 45 degrees, the released code) or 0 (phase 0).
    cos = torch.nn.functional.pad(cos, (0, missing), value=1.0)
    sin = torch.nn.functional.pad(sin, (0, missing), value=_FOPE_CLIPPED_SIN[clipped])
    return cos.to(positions.device, dtype), sin.to(positions.device, dtype)


# --------------------------------------------------------------------------- RoPE-Mixed


def _check_mixed(positions: object, freqs: object) -> tuple[torch.Tensor, torch.Tensor]:
    positions = check_positions("positions", positions, signed=True)
    freqs = check_tensor("freqs", freqs)
    if positions.dim() < 2 or positions.shape[-1] != 2:
        raise ValueError(
            f"positions must have shape (..., num_patches, 2) (row, column), got "
            f"{tuple(positions.shape)}"
        )
    if freqs.dim() < 2 or freqs.shape[-1] != 2 or not freqs.is_floating_point():
        raise ValueError(
            f"freqs must be a floating tensor of shape (..., pairs, 2) (row and column "
            f"frequency of each pair), got shape {tuple(freqs.shape)} and dtype {freqs.dtype}"
        )
    if not bool(torch.isfinite(freqs).all()):
        raise ValueError("freqs must be finite")
    return positions, freqs


def rope_mixed_angles(positions: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    r"""RoPE-Mixed angles: pair :math:`i` at :math:`(y, x)` turns by the sum of two angles.

    Pair :math:`i` of the patch at :math:`(y, x)` turns by :math:`\omega^y_i\,y + \omega^x_i\,x`.

    Derived on the site: [RoPE-Mixed](beyond_rope.md#beyond-rope-mixed).

    Parameters
    ----------
    positions
        ``(num_patches, 2)`` grid coordinates, column 0 the row :math:`y` and column 1 the column
        :math:`x` (as :func:`posenc_ref.axial.grid_positions`); negative values allowed.
    freqs
        ``(..., pairs, 2)`` frequencies, ``[..., i, 0]`` = :math:`\omega^y_i` and
        ``[..., i, 1]`` = :math:`\omega^x_i`; leading dimensions (heads) are carried to the
        result.

    Returns
    -------
    torch.Tensor
        ``(..., num_patches, pairs)`` float64.
    """
    positions, freqs = _check_mixed(positions, freqs)
    if positions.dim() != 2:
        raise ValueError(
            f"positions must have shape (num_patches, 2), got {tuple(positions.shape)}"
        )
    where = compute_device(positions.device)
    coords = positions.to(where, torch.float64)  # (N, 2)
    return coords @ freqs.to(where, torch.float64).transpose(-1, -2)  # (..., N, pairs)


def rope_mixed_cos_sin(
    positions: torch.Tensor, freqs: torch.Tensor, *, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The cos and sin tables of RoPE-Mixed, for :func:`posenc_ref.rope.apply_rope`.

    Derived on the site: [RoPE-Mixed](beyond_rope.md#beyond-rope-mixed).

    The reference code rotates interleaved pairs (complex numbers), so pass
    ``layout="interleaved"``. Queries and keys use the same tables: the score of a query at
    :math:`(y_m, x_m)` and a key at :math:`(y_p, x_p)` depends on the offset only, through
    :math:`\omega^y_i (y_p - y_m) + \omega^x_i (x_p - x_m)` per pair.

    Parameters
    ----------
    positions, freqs
        As in :func:`rope_mixed_angles`.
    dtype
        ``torch.float32`` or ``torch.float64``.

    Returns
    -------
    tuple of torch.Tensor
        ``(cos, sin)``, each ``(..., num_patches, pairs)``.
    """
    dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
    angles = rope_mixed_angles(positions, freqs)
    return torch.cos(angles).to(positions.device, dtype), torch.sin(angles).to(
        positions.device, dtype
    )


def rope_mixed_frequencies(
    dim: int,
    num_heads: int,
    *,
    base: float = 10.0,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    r"""RoPE-Mixed's initial frequencies: axial magnitudes, one random direction per head.

    Derived on the site: [RoPE-Mixed](beyond_rope.md#beyond-rope-mixed).

    With magnitudes :math:`\mu_k = \text{base}^{-4k/d}`, :math:`k = 0 .. d/4 - 1` (those of
    axial RoPE), and one angle :math:`\phi_h \sim U[0, 2\pi)` per head, the first :math:`d/4`
    pairs get :math:`\mu_k(\sin\phi_h, \cos\phi_h)` and the next :math:`d/4` the perpendicular
    :math:`\mu_k(\sin(\phi_h + \pi/2), \cos(\phi_h + \pi/2))`, as ``(y, x)``. Training then
    learns them (per head and per layer); ``base`` is 10 or 100 in the reference ViTs.

    Parameters
    ----------
    dim
        Head width :math:`d`, a positive multiple of 4.
    num_heads
        ``>= 1``.
    base
        Finite and > 1.
    generator
        Source of the angles (a fixed seed gives fixed frequencies).
    device
        Where to return the result (the CPU when ``None``).

    Returns
    -------
    torch.Tensor
        ``(num_heads, dim // 2, 2)`` float64, ``[..., 0]`` the row and ``[..., 1]`` the column
        frequency.
    """
    dim = check_dim("dim", dim)
    if dim % 4:
        raise ValueError(f"dim must be a positive multiple of 4 (two axes of pairs), got {dim}")
    num_heads = check_int("num_heads", num_heads, minimum=1)
    base = check_base("base", base)
    device = check_device(device)
    magnitude = base ** (-torch.arange(0, dim, 4, dtype=torch.float64) / dim)  # (dim / 4,)
    phi = torch.rand(num_heads, 1, generator=generator, dtype=torch.float64) * 2 * math.pi
    directions = torch.cat([phi, phi + math.pi / 2], dim=-1)  # (H, 2): both halves
    angle = directions.repeat_interleave(dim // 4, dim=-1)  # (H, dim / 2)
    mag = magnitude.repeat(2)  # (dim / 2,): the same magnitudes in both halves
    freqs = torch.stack([mag * torch.sin(angle), mag * torch.cos(angle)], dim=-1)
    return freqs.to(device)


def axial_as_mixed(inv_freq: torch.Tensor, pair_axes: torch.Tensor) -> torch.Tensor:
    r"""Axial RoPE written as RoPE-Mixed frequencies: each pair turns along one axis only.

    Derived on the site: [RoPE-Mixed](beyond_rope.md#beyond-rope-mixed).

    Pair :math:`i` gets :math:`(\omega_i, 0)` if it belongs to the rows and
    :math:`(0, \omega_i)` if it belongs to the columns, so :func:`rope_mixed_cos_sin` of the
    result is :func:`posenc_ref.axial.axial_cos_sin`. Every pair then sees one axis, and the
    score is a function of the row offset plus a function of the column offset: no pair can
    respond to a diagonal offset alone.

    Parameters
    ----------
    inv_freq
        ``(pairs,)`` frequencies (:func:`posenc_ref.axial.axial_inv_freq`).
    pair_axes
        ``(pairs,)`` 0 (row) or 1 (column) (:func:`posenc_ref.axial.axial_pair_axes`).

    Returns
    -------
    torch.Tensor
        ``(pairs, 2)`` float64.
    """
    inv_freq = check_inv_freq("inv_freq", inv_freq).to(torch.float64)
    pair_axes = check_tensor("pair_axes", pair_axes)
    if pair_axes.shape != inv_freq.shape or not bool(((pair_axes == 0) | (pair_axes == 1)).all()):
        raise ValueError(
            f"pair_axes must have inv_freq's shape {tuple(inv_freq.shape)} and values in "
            f"{{0, 1}} (0 row, 1 column), got shape {tuple(pair_axes.shape)}"
        )
    on_axis = torch.nn.functional.one_hot(pair_axes.long().to(inv_freq.device), 2)  # (pairs, 2)
    return inv_freq[:, None] * on_axis.to(torch.float64)
