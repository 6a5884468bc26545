r"""RoPE context extension: the methods by name, and :class:`Scaling`, the typed value of one.

Every method keeps :func:`posenc_ref.rope.apply_rope` unchanged and only replaces the per-pair
frequencies :math:`\omega_i` by new ones, sometimes with an attention factor that multiplies cos
and sin; the functions (:func:`linear`, :func:`ntk_aware`, :func:`dynamic_ntk`, :func:`yarn`,
:func:`llama3`, :func:`longrope`, and :class:`ScaledFrequencies`, what they return) are defined
in :mod:`posenc_ref.rope_scaling_functions`, with the API decisions they take, and importable
from here.

:data:`METHODS` is the table of methods: each name with its function, whether its frequencies
depend on the current sequence length (``dynamic_ntk``, ``longrope``) and the keys it takes.
:class:`Scaling` ``(method, params)`` is one method with its arguments: the typed value the config
reader returns, ``RotaryEmbedding`` keeps, and the conformance kit recomputes, all through the
table. Adding a method is one function and one row of :data:`METHODS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .rope_scaling_functions import (
    ScaledFrequencies,
    ScaledValues,
    dynamic_ntk,
    linear,
    llama3,
    longrope,
    longrope_attention_factor,
    ntk_aware,
    yarn,
    yarn_mscale,
)

__all__ = [
    "ScaledFrequencies",
    "ScaledValues",
    "Scaling",
    "Method",
    "METHODS",
    "SCALING_METHODS",
    "linear",
    "ntk_aware",
    "dynamic_ntk",
    "yarn",
    "yarn_mscale",
    "llama3",
    "longrope_attention_factor",
    "longrope",
]


@dataclass(frozen=True)
class Method:
    """One context-extension method, as :data:`METHODS` holds it.

    Attributes
    ----------
    function : callable
        ``function(dim, base, **params)`` -> :class:`ScaledFrequencies`; a length-dependent one
        also takes ``seq_len=``.
    length_dependent : bool
        Whether its frequencies change with the current length (the largest position + 1):
        ``dynamic_ntk`` grows its base and ``longrope`` switches lists past
        ``original_max_len``. Declared here, never guessed from the function's signature.
    keys : tuple of str
        The keyword arguments it takes besides ``dim``, ``base`` and ``seq_len``, in order.
    """

    function: Callable[..., ScaledFrequencies]
    length_dependent: bool
    keys: tuple[str, ...]

    def frequencies(
        self, dim: int, base: float, params: Mapping[str, Any], seq_len: int = 0
    ) -> ScaledFrequencies:
        """The frequencies for ``params`` at width ``dim`` and ``base`` (and ``seq_len``)."""
        if self.length_dependent:
            return self.function(dim, base, seq_len=seq_len, **params)
        return self.function(dim, base, **params)

    def values(
        self, dim: int, base: float, params: Mapping[str, Any], seq_len: int = 0
    ) -> ScaledValues:
        """The same frequencies as Python floats (the method's formula, no tensor, no torch)."""
        formula = self.function.values
        if self.length_dependent:
            return formula(dim, base, seq_len=seq_len, **params)
        return formula(dim, base, **params)


METHODS: dict[str, Method] = {
    "linear": Method(linear, False, ("factor",)),
    "ntk_aware": Method(ntk_aware, False, ("factor",)),
    "dynamic_ntk": Method(dynamic_ntk, True, ("factor", "original_max_len")),
    "yarn": Method(
        yarn,
        False,
        ("factor", "original_max_len", "beta_fast", "beta_slow", "truncate", "attention_factor"),
    ),
    "llama3": Method(
        llama3, False, ("factor", "low_freq_factor", "high_freq_factor", "original_max_len")
    ),
    "longrope": Method(
        longrope,
        True,
        (
            "short_factor",
            "long_factor",
            "original_max_len",
            "factor",
            "max_len",
            "attention_factor",
        ),  # fmt: skip
    ),
}
"""Method name -> :class:`Method`: the names a :class:`Scaling` (and
``RotaryEmbedding(scaling=...)``) accepts, each with its function, whether it depends on the
sequence length, and the keys it takes."""

SCALING_METHODS: dict[str, Callable[..., ScaledFrequencies]] = {
    name: method.function for name, method in METHODS.items()
}
"""Method name -> function (the functions of :data:`METHODS`)."""


class Scaling(Mapping[str, Any]):
    r"""A context-extension method and its arguments: the one typed form of a scaling.

    ``Scaling("yarn", {"factor": 4.0, "original_max_len": 4096})`` names a method of
    :data:`METHODS` and the keyword arguments of its function (the width and base are not part
    of it: they belong to the RoPE it scales). The method and the keys are checked when it is
    built; the values when frequencies are computed. It reads as the mapping
    ``{"method": ..., **params}``, the form ``RotaryEmbedding(scaling=...)`` takes, so
    ``dict(scaling)`` and ``scaling["factor"]`` work, and it equals that dict.

    Parameters
    ----------
    method
        A key of :data:`METHODS`.
    params
        Its keyword arguments (the ``keys`` of its :class:`Method`); a length-dependent one needs
        ``original_max_len``.

    Examples
    --------
    >>> scaling = Scaling("dynamic_ntk", {"factor": 2.0, "original_max_len": 64})
    >>> scaling.length_dependent, scaling.varies_past
    (True, 64)
    >>> scaling.frequencies(4, 10000.0, seq_len=128).inv_freq
    tensor([1.0000, 0.0033], dtype=torch.float64)
    """

    __slots__ = ("method", "params")
    method: str
    params: Mapping[str, Any]

    def __init__(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        if not isinstance(method, str) or method not in METHODS:
            raise ValueError(f"scaling['method'] must be one of {tuple(METHODS)}, got {method!r}")
        params = dict(params or {})
        accepted = list(METHODS[method].keys)
        unknown = sorted(set(params) - set(accepted), key=str)
        if unknown:
            raise ValueError(
                f"scaling keys {unknown} are not accepted by method {method!r}; accepted: "
                f"{accepted} (base and dim come from RotaryEmbedding itself)"
            )
        if METHODS[method].length_dependent and "original_max_len" not in params:
            raise ValueError(f"scaling for {method!r} needs 'original_max_len'")
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "params", MappingProxyType(params))

    @classmethod
    def from_mapping(cls, scaling: Mapping[str, Any]) -> Scaling:
        """Read the dict form ``{"method": name, **params}``."""
        params = dict(scaling)
        return cls(params.pop("method", None), params)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Scaling is immutable; use replace() (setting {name!r})")

    def __reduce__(self) -> tuple[type, tuple[str, dict[str, Any]]]:  # copy, deepcopy, pickle
        return Scaling, (self.method, dict(self.params))

    def __getitem__(self, key: str) -> Any:
        return self.method if key == "method" else self.params[key]

    def __iter__(self) -> Iterator[str]:
        yield "method"
        yield from self.params

    def __len__(self) -> int:
        return 1 + len(self.params)

    def __repr__(self) -> str:
        return f"Scaling({self.method!r}, {dict(self.params)!r})"

    @property
    def length_dependent(self) -> bool:
        """Whether the frequencies depend on the current length (the method's declaration)."""
        return METHODS[self.method].length_dependent

    @property
    def varies_past(self) -> int | None:
        """The length past which a call's frequencies depend on it, else ``None``.

        ``original_max_len`` for a length-dependent method: up to it, every call has the
        frequencies of :meth:`frequencies` with ``seq_len=0``.
        """
        return self.params["original_max_len"] if self.length_dependent else None

    def frequencies(self, dim: int, base: float, seq_len: int = 0) -> ScaledFrequencies:
        """The scaled frequencies at width ``dim`` and ``base``, for a call of ``seq_len``.

        ``seq_len`` (the largest position + 1) matters only to a length-dependent method; the
        default 0 gives the frequencies inside the original context.

        Returns
        -------
        ScaledFrequencies
            ``inv_freq`` of shape ``(dim // 2,)``, float64, and the attention factor.
        """
        return METHODS[self.method].frequencies(dim, base, self.params, seq_len)

    def values(self, dim: int, base: float, seq_len: int = 0) -> ScaledValues:
        """:meth:`frequencies` as Python floats: ``dim // 2`` of them, computed without torch."""
        return METHODS[self.method].values(dim, base, self.params, seq_len)

    def replace(self, **params: Any) -> Scaling:
        """The same method with some arguments replaced (or added)."""
        return Scaling(self.method, {**self.params, **params})
