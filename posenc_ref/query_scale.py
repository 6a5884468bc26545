r"""A position-dependent scaling of the queries: :math:`q \leftarrow \sigma(t)\, q`.

Some models multiply their queries by a factor that grows with the position, beside (or instead
of) their RoPE: Ministral 3 and Mistral 4 (``llama_4_scaling_beta``), Llama 4's layers without
RoPE (attention-temperature tuning), Beam's (a scalable softmax). :class:`QueryScale` is that
factor as a function of the position; it is maths, not config reading, so
:class:`~posenc_ref.rope.RotaryEmbedding` applies it without importing the config reader.
:func:`~posenc_ref.models.rope_spec` builds one from a config's keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._checks import check_int, check_positive_float

if TYPE_CHECKING:  # the config reader builds a QueryScale without torch; calling it needs it
    import torch

__all__ = ["QueryScale", "QUERY_SCALE_FORMS", "target_weight", "focus_keeping_scale",
           "log_length_scale"]  # fmt: skip

QUERY_SCALE_FORMS = ("floor", "power")
"""The two forms in use: the staircase ``"floor"`` and the smooth ``"power"``."""


@dataclass(frozen=True)
class QueryScale:
    r"""A query scaling that grows with the position: :math:`q \leftarrow \sigma(t)\, q`.

    Two forms are in use. The staircase (``form="floor"``):

    .. math::

        \sigma(t) = 1 + \beta \ln\!\left(1 + \left\lfloor \frac{t + c}{T} \right\rfloor
        \right)

    Ministral 3 and Mistral 4 multiply every query by it (``llama_4_scaling_beta``
    :math:`\beta`, :math:`T` = ``original_max_position_embeddings``, :math:`c = 0`);
    Llama 4 multiplies the queries of its layers *without* RoPE by it
    (``attn_scale`` :math:`\beta`, ``floor_scale`` :math:`T`, :math:`c = 1`: its
    "attention-temperature tuning"). :math:`\sigma = 1` for every position below
    :math:`T - c`, so it changes nothing inside the window it was trained on, and it grows
    by :math:`\beta \ln 2` at the first multiple of :math:`T`, :math:`\beta \ln 3` at the
    second, ...

    The smooth power (``form="power"``, Beam's layers without RoPE, a scalable softmax):

    .. math::

        \sigma(t) = \left(1 + \frac{t + c}{T}\right)^{\beta}

    with :math:`\beta = 0.1`, :math:`T = 2048`, :math:`c = 1` fixed in its code: it grows from
    the first position on, by :math:`2^{0.1} \approx 1.072` at :math:`t + 1 = T`.

    Since only the query is scaled, the attention logits grow by :math:`\sigma(m)`: a sharper
    softmax far from the start. Derived on the site:
    [position-dependent query scaling](models.md#models-query-scale).

    Attributes
    ----------
    beta : float
        :math:`\beta > 0`.
    length : int
        :math:`T \ge 1`.
    shift : int
        :math:`c`: 0 (Ministral 3, Mistral 4) or 1 (Llama 4, Beam).
    source : str
        The config keys (or the code) it comes from.
    form : str
        ``"floor"`` (the staircase) or ``"power"``.
    """

    beta: float
    length: int
    shift: int = 0
    source: str = ""
    form: str = "floor"

    def __post_init__(self) -> None:
        if self.form not in QUERY_SCALE_FORMS:
            raise ValueError(f"form must be one of {QUERY_SCALE_FORMS}, got {self.form!r}")

    def __call__(self, positions: torch.Tensor) -> torch.Tensor:
        r""":math:`\sigma(t)` of integer positions ``(..., seq_len)``, float64."""
        import torch

        from ._tensor_checks import check_positions

        positions = check_positions("positions", positions, integer_only=True)
        shifted = positions.to(torch.float64) + self.shift
        if self.form == "power":
            return torch.exp(self.beta * torch.log1p(shifted / self.length))
        steps = torch.div(shifted, self.length, rounding_mode="floor")
        return 1.0 + self.beta * torch.log1p(steps)

    def value(self, position: int) -> float:
        r""":math:`\sigma(t)` of one position, in Python floats (no tensor)."""
        position = check_int("position", position)
        if self.form == "power":
            return math.exp(self.beta * math.log1p((position + self.shift) / self.length))
        return 1.0 + self.beta * math.log1p((position + self.shift) // self.length)

    def describe(self) -> str:
        """The formula with its numbers, for messages and ``inspect``."""
        if self.form == "power":
            return f"(1 + (t + {self.shift}) / {self.length}) ** {self.beta:g}"
        return f"1 + {self.beta:g} ln(1 + floor((t + {self.shift}) / {self.length}))"

    @classmethod
    def checked(cls, beta: object, length: object, shift: int, source: str) -> QueryScale:
        """A staircase from a config's values: ``beta`` named by ``source``'s first key.

        ``beta`` must be a finite number > 0 and ``length`` an integer >= 1; the error names the
        config key that gave the bad value.
        """
        beta = check_positive_float(source.split(",")[0], beta)
        return cls(beta, check_int("length", length, minimum=1), shift, source)


def target_weight(keys: int, margin: float, scale: float = 1.0) -> float:
    r"""The attention one key gets when its logit leads ``keys - 1`` equal others by ``margin``.

    Derived on the site: [why NoPE fails past L0](beyond_rope.md#beyond-nope-length).

    .. math::

        w(n) = \frac{e^{\lambda\Delta}}{e^{\lambda\Delta} + n - 1}
        = \frac{1}{1 + (n - 1)\,e^{-\lambda\Delta}}

    for :math:`n` = ``keys``, :math:`\Delta` = ``margin`` and a logit multiplier :math:`\lambda`
    = ``scale``: with the same logits, more keys leave less for the one that matters.
    """
    keys = check_int("keys", keys, minimum=1)
    margin, scale = check_positive_float("margin", margin), check_positive_float("scale", scale)
    return 1.0 / (1.0 + (keys - 1) * math.exp(-scale * margin))


def focus_keeping_scale(keys: int, original_keys: int, margin: float) -> float:
    r"""The logit multiplier that gives a leading key at ``keys`` the weight it had at fewer.

    Derived on the site: [why NoPE fails past L0](beyond_rope.md#beyond-nope-length).

    Asking :math:`w(n)` with multiplier :math:`\lambda` to equal :math:`w(n_0)` with 1
    (:func:`target_weight`) gives :math:`\lambda\Delta = \Delta + \ln\frac{n - 1}{n_0 - 1}`:

    .. math::

        \lambda(n) = 1 + \frac{1}{\Delta}\,\ln\frac{n - 1}{n_0 - 1},

    logarithmic in the number of keys, like YaRN's :math:`0.1\ln s + 1` and the entropy argument
    (:func:`posenc_ref.rope_extension.entropy_keeping_scale`). With
    :math:`\Delta = \ln(n_0 - 1)` (the key held half the attention at :math:`n_0`) it is
    :math:`\ln(n-1)/\ln(n_0-1)`: :func:`log_length_scale`.
    """
    keys = check_int("keys", keys, minimum=2)
    original_keys = check_int("original_keys", original_keys, minimum=2)
    margin = check_positive_float("margin", margin)
    return 1.0 + math.log((keys - 1) / (original_keys - 1)) / margin


def log_length_scale(positions: torch.Tensor, original_max_len: int) -> torch.Tensor:
    r"""A query scale :math:`\max(1,\ \ln m / \ln(L_0 - 1))` for a query at position :math:`m`.

    Derived on the site: [why NoPE fails past L0](beyond_rope.md#beyond-nope-length).

    A causal query at :math:`m` sees :math:`m + 1` keys; :func:`focus_keeping_scale` with
    :math:`\Delta = \ln(L_0 - 1)` keeps, at every :math:`m`, the weight a key held with half the
    attention among :math:`L_0` keys. Inside the training length it is 1 (nothing changes).

    Parameters
    ----------
    positions
        Integer positions ``(..., seq_len)``, ``>= 0``.
    original_max_len
        :math:`L_0 \ge 3`.

    Returns
    -------
    torch.Tensor
        float64, the shape of ``positions``.
    """
    import torch  # here, not at the top: the config reader imports this module without torch

    from ._tensor_checks import check_positions

    positions = check_positions("positions", positions, integer_only=True)
    original_max_len = check_int("original_max_len", original_max_len, minimum=3)
    m = positions.to(torch.float64).clamp(min=1.0)
    return (torch.log(m) / math.log(original_max_len - 1)).clamp(min=1.0)
