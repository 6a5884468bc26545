r"""The ``rope_type`` table: how each HF RoPE type is read, and which transform it is.

One entry per type HF transformers 5.23 defines (``ROPE_INIT_FUNCTIONS`` plus ``default``). An
entry says which keys of the RoPE dict the type reads and how it turns them into the arguments of
a :mod:`posenc_ref.rope_scaling` transform; the reader (:mod:`posenc_ref.models.read_rope`) does the
rest (base, widths, layout) the same way for every type.

A type whose RoPE dict holds exactly a method's keys is not written here: the method's row of
:data:`~posenc_ref.rope_scaling.METHODS` names it (``rope_types``) and :data:`ROPE_TYPES` derives
its entry (:func:`method_type`; HF ``linear`` is one). The entries written here are the types
with a reading of their own: ``default`` and ``proportional`` compute their frequencies here;
``dynamic`` takes its original context from ``max_position_embeddings``; ``ntk_alpha`` is
HunYuan's ``alpha``, read as NTK-aware's factor; ``yarn`` derives its factor, treats 0 as "not
set", and its ``mscale`` pair implies the attention factor and an MLA softmax scale; ``llama3``
requires its three factors and falls back to ``max_position_embeddings`` for the original
context; ``longrope`` checks its lists against the rotary width and derives its factor. The HF
key ``original_max_position_embeddings`` is the methods' ``original_max_len`` in each.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._checks import check_bool, check_positive_float
from ..rope_scaling import METHODS, ScaledValues, Scaling, yarn_mscale
from ..values import inv_freq_values
from ._config import is_set

__all__ = [
    "RopeType",
    "ROPE_TYPES",
    "COMMON_KEYS",
    "TypeArgs",
    "TypeResult",
    "method_type",
    "read_type",
]

# Keys every type reads: its name (new and old spelling), the base and the partial factor.
COMMON_KEYS = frozenset({"rope_type", "type", "rope_theta", "partial_rotary_factor"})


@dataclass(frozen=True)
class TypeArgs:
    """What a type's reader gets: the RoPE dict and what the reader already resolved."""

    rope: Mapping[str, Any]
    rotary_dim: int
    head_dim: int
    partial: float
    base: float
    max_len: int | None  # max_position_embeddings
    original: int | None  # original_max_position_embeddings as the config gives it, else None
    freq_dim: int | None = None  # the width in the exponents, when odd (HF rounds the part up)


@dataclass(frozen=True)
class TypeResult:
    """What a type's reader returns."""

    freqs: ScaledValues  # inside the original context, as floats
    scaling: Scaling | None  # the rope_scaling method; None: frequencies computed here
    factor: float | None  # the extension ratio s, None for types without one
    original_len: int | None  # the pre-training context the type works with


@dataclass(frozen=True)
class RopeType:
    r"""One HF ``rope_type``: the keys it reads and how it maps to a transform.

    Attributes
    ----------
    keys : frozenset of str
        Keys of the RoPE dict the type reads, besides ``rope_type``/``type``, ``rope_theta`` and
        ``partial_rotary_factor``. Any other key is refused.
    transform : str or None
        The :mod:`posenc_ref.rope_scaling` method it is (a key of ``SCALING_METHODS``), or
        ``None`` when the frequencies are computed here (``default``, ``proportional``).
    read : callable
        ``TypeArgs -> TypeResult``.
    full_width : bool
        The table covers the whole head whatever the partial factor (``proportional``: the
        pairs past the partial width get frequency 0).
    unset_when_zero : frozenset of str
        Keys for which 0 means "not set" (transformers reads them with ``or`` or truthiness:
        YaRN's ``beta_fast``, ``beta_slow``, ``mscale``, ``mscale_all_dim``; Devstral 2 releases
        ``mscale_all_dim`` 0.0). Every step of the reader applies it through one function,
        ``posenc_ref.models._config.is_set``.
    softmax_key : str or None
        The key whose value :math:`\mu` makes an MLA family multiply its softmax scale by
        :math:`g(s, \mu)^2` (:func:`~posenc_ref.rope_scaling.yarn_mscale`, outside RoPE):
        YaRN's ``mscale_all_dim``; ``None`` for the types that imply no such scale.
    """

    keys: frozenset[str]
    transform: str | None
    read: Callable[[TypeArgs], TypeResult]
    full_width: bool = False
    unset_when_zero: frozenset[str] = frozenset()
    softmax_key: str | None = None


# --------------------------------------------------------------------------- small readers


def _given(rope: Mapping[str, Any], key: str) -> bool:
    return rope.get(key) is not None


def _required(args: TypeArgs, key: str, name: str) -> float:
    if not _given(args.rope, key):
        raise ValueError(f"rope_type {name!r} needs the key {key!r}")
    return check_positive_float(key, args.rope[key])


def _factor_at_least_1(factor: float) -> float:
    if factor < 1:
        raise ValueError(f"factor must be >= 1 (a context extension), got {factor!r}")
    return factor


def _original_or_max(args: TypeArgs, name: str) -> int:
    """HF's rule: an absent original context defaults to max_position_embeddings."""
    original = args.original if args.original is not None else args.max_len
    if original is None:
        raise ValueError(
            f"rope_type {name!r} needs original_max_position_embeddings (or "
            "max_position_embeddings)"
        )
    return original


def _ratio_factor(args: TypeArgs, name: str) -> float:
    """``factor``, else max_position_embeddings / original_max_position_embeddings (HF)."""
    if _given(args.rope, "factor"):
        return check_positive_float("factor", args.rope["factor"])
    if args.max_len is None or args.original is None:
        raise ValueError(
            f"rope_type {name!r} needs factor, or max_position_embeddings and "
            "original_max_position_embeddings to derive it (transformers refuses it without)"
        )
    return args.max_len / args.original


def _result(scaling: dict[str, Any], args: TypeArgs, factor, original) -> TypeResult:
    method = Scaling.from_mapping(scaling)
    return TypeResult(method.values(args.rotary_dim, args.base), method, factor, original)


# --------------------------------------------------------------------------- one reader per type


def _default(args: TypeArgs) -> TypeResult:
    # HF: base^(-2i / width) for the ceil(width / 2) pairs of an odd width
    freqs = ScaledValues(inv_freq_values(args.freq_dim or args.rotary_dim, args.base), 1.0)
    return TypeResult(freqs, None, None, args.original or args.max_len)


def _dynamic(args: TypeArgs) -> TypeResult:
    factor = _required(args, "factor", "dynamic")
    if args.max_len is None:
        raise ValueError("rope_type 'dynamic' needs max_position_embeddings (its L)")
    scaling = {"method": "dynamic_ntk", "factor": factor, "original_max_len": args.max_len}
    return _result(scaling, args, factor, args.max_len)


def _ntk_alpha(args: TypeArgs) -> TypeResult:
    """HunYuan's NTK-alpha: a static base ``rope_theta * alpha ** (d / (d - 2))``, factor 1.

    transformers 5.23 (modeling_hunyuan_v1_dense.py, compute_ntk_alpha_rope_parameters) reads a
    ``dynamic`` dict with a truthy ``alpha`` so and ignores its ``factor``; vLLM, SGLang and
    llama.cpp compute the same base. It is :func:`~posenc_ref.rope_scaling.ntk_aware` with
    ``s = alpha`` (tests/test_peers.py proves it against transformers).
    """
    alpha = check_positive_float("alpha", args.rope.get("alpha"))
    if args.rotary_dim != args.head_dim:
        raise NotImplementedError(
            "NTK-alpha on a partial rotary width: transformers' exponent uses head_dim, "
            "vLLM's the rotary width; no released config has it"
        )
    exponent = args.rotary_dim / (args.rotary_dim - 2) if args.rotary_dim > 2 else 1.0
    if math.log(args.base) + exponent * math.log(alpha) > math.log(sys.float_info.max):
        raise ValueError(
            f"alpha={alpha!r} makes the base rope_theta * alpha ** (d / (d - 2)) overflow a "
            "float: no model's"
        )
    if alpha < 1:  # transformers' formula holds for any alpha > 0: here a smaller base
        base = args.base * alpha**exponent
        freqs = ScaledValues(inv_freq_values(args.rotary_dim, base), 1.0)
        return TypeResult(freqs, None, alpha, args.original or args.max_len)
    scaling = {"method": "ntk_aware", "factor": alpha}
    return _result(scaling, args, alpha, args.original or args.max_len)


def _llama3(args: TypeArgs) -> TypeResult:
    scaling: dict[str, Any] = {
        "method": "llama3",
        "original_max_len": _original_or_max(args, "llama3"),
    }
    for key in ("factor", "low_freq_factor", "high_freq_factor"):
        scaling[key] = _required(args, key, "llama3")
    return _result(scaling, args, scaling["factor"], scaling["original_max_len"])


def _yarn(args: TypeArgs) -> TypeResult:
    rope = args.rope
    factor = _ratio_factor(args, "yarn")
    original = _original_or_max(args, "yarn")
    if _given(rope, "factor") and args.max_len is not None:
        implied = args.max_len / original
        if implied not in (1.0, factor):
            raise ValueError(
                f"inconsistent factor: rope factor {factor!r} but max_position_embeddings / "
                f"original_max_position_embeddings = {args.max_len} / {original} = {implied!r}"
            )
    attention = rope.get("attention_factor")
    unset = ROPE_TYPES["yarn"].unset_when_zero  # its entry says which keys are not set when 0
    if (
        attention is None
        and is_set(rope, "mscale", unset)
        and is_set(rope, "mscale_all_dim", unset)
    ):
        attention = yarn_mscale(
            factor, check_positive_float("mscale", rope["mscale"])
        ) / yarn_mscale(factor, check_positive_float("mscale_all_dim", rope["mscale_all_dim"]))
    betas = {key: rope[key] if is_set(rope, key, unset) else paper  # the paper's, when not set
             for key, paper in (("beta_fast", 32.0), ("beta_slow", 1.0))}  # fmt: skip
    scaling: dict[str, Any] = {
        "method": "yarn",
        "factor": factor,
        "original_max_len": original,
        "beta_fast": check_positive_float("beta_fast", betas["beta_fast"]),
        "beta_slow": check_positive_float("beta_slow", betas["beta_slow"]),
        "truncate": check_bool("truncate", rope.get("truncate", True)),
    }
    if attention is not None:
        scaling["attention_factor"] = check_positive_float("attention_factor", attention)
    return _result(scaling, args, factor, original)


def _factor_list(name: str, values: object, pairs: int) -> list[float]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{name} must be a list of numbers, got {values!r}")
    if len(values) != pairs:
        raise ValueError(
            f"{name} has {len(values)} entries but the rotary part has rotary_dim // 2 = "
            f"{pairs} pairs"
        )
    return [check_positive_float(f"{name}[{i}]", v) for i, v in enumerate(values)]


def _longrope(args: TypeArgs) -> TypeResult:
    rope = args.rope
    original = _original_or_max(args, "longrope")
    pairs = args.rotary_dim // 2
    lists = {}
    for key in ("short_factor", "long_factor"):
        if not _given(rope, key):
            raise ValueError(f"rope_type 'longrope' needs the key {key!r}")
        lists[key] = _factor_list(key, rope[key], pairs)
    factor = (
        check_positive_float("factor", rope["factor"])
        if _given(rope, "factor")
        else (args.max_len or original) / original
    )
    scaling: dict[str, Any] = {"method": "longrope", **lists, "original_max_len": original}
    scaling["factor"] = factor
    if _given(rope, "attention_factor"):
        scaling["attention_factor"] = check_positive_float(
            "attention_factor", rope["attention_factor"]
        )
    return _result(scaling, args, factor, original)


def _proportional(args: TypeArgs) -> TypeResult:
    # Gemma 4's global layers: the first pairs rotate with the frequencies of the full head
    # width, the others have frequency 0 (they pass through); the table covers the whole head.
    factor = _factor_at_least_1(check_positive_float("factor", args.rope.get("factor", 1.0)))
    rotating = int(args.partial * args.head_dim // 2)  # pairs that rotate, as HF counts them
    omega = inv_freq_values(args.head_dim, args.base)[:rotating]
    omega += [0.0] * (args.head_dim // 2 - rotating)
    freqs = ScaledValues([w / factor for w in omega], 1.0)
    return TypeResult(freqs, None, factor, args.original)


def method_type(method: str, rope_type: str | None = None) -> RopeType:
    """The entry of a type whose keys are a :mod:`posenc_ref.rope_scaling` method's own keys.

    :data:`ROPE_TYPES` makes one for each name in a row's ``rope_types``: the RoPE dict's keys go
    to the method as they are (the method checks their values), a key the method's function
    requires (a keyword-only parameter without a default) is required, and ``factor``, when the
    method has one, is the spec's extension ratio. The original context is the method's
    ``original_max_len`` when it has one, else the config's ``original_max_position_embeddings``.
    """
    row = METHODS[method]
    name = rope_type or method
    required = [
        key
        for key, parameter in inspect.signature(row.function).parameters.items()
        if key in row.keys and parameter.default is inspect.Parameter.empty
    ]

    def read(args: TypeArgs) -> TypeResult:
        for key in required:
            if not _given(args.rope, key):
                raise ValueError(f"rope_type {name!r} needs the key {key!r}")
        params = {key: args.rope[key] for key in row.keys if _given(args.rope, key)}
        if "factor" in params:
            params["factor"] = check_positive_float("factor", params["factor"])
        original = params.get("original_max_len", args.original)
        return _result({"method": method, **params}, args, params.get("factor"), original)

    return RopeType(frozenset(row.keys), method, read)


def _method_types() -> dict[str, RopeType]:
    """One entry per HF name a row of :data:`~posenc_ref.rope_scaling.METHODS` gives."""
    return {hf: method_type(name, hf) for name, row in METHODS.items() for hf in row.rope_types}


ROPE_TYPES: dict[str, RopeType] = {
    "default": RopeType(frozenset(), None, _default),
    **_method_types(),  # HF linear; the entries below have a reading of their own (see above)
    "dynamic": RopeType(frozenset({"factor"}), "dynamic_ntk", _dynamic),
    "ntk_alpha": RopeType(frozenset({"alpha", "factor"}), "ntk_aware", _ntk_alpha),
    "yarn": RopeType(
        frozenset(
            {
                "factor",
                "original_max_position_embeddings",
                "attention_factor",
                "beta_fast",
                "beta_slow",
                "mscale",
                "mscale_all_dim",
                "truncate",
            }
        ),  # fmt: skip
        "yarn",
        _yarn,
        unset_when_zero=frozenset({"mscale", "mscale_all_dim", "beta_fast", "beta_slow"}),
        softmax_key="mscale_all_dim",
    ),
    "longrope": RopeType(
        frozenset(
            {
                "short_factor",
                "long_factor",
                "original_max_position_embeddings",
                "factor",
                "attention_factor",
            }
        ),  # fmt: skip
        "longrope",
        _longrope,
    ),
    "llama3": RopeType(
        frozenset(
            {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}
        ),
        "llama3",
        _llama3,
    ),
    "proportional": RopeType(frozenset({"factor"}), None, _proportional, full_width=True),
}
"""HF ``rope_type`` -> :class:`RopeType` (the keys it reads, the transform it is): the entries
written here and one for each name in a row's ``rope_types`` of
:data:`~posenc_ref.rope_scaling.METHODS` (:func:`method_type`), made when the module is imported."""


def read_type(kind: RopeType, args: TypeArgs, rope_type: str) -> TypeResult:
    """Step 6 of reading a RoPE: the type's frequencies, factor and scaling method."""
    if args.freq_dim != args.rotary_dim and kind.transform is not None:
        raise NotImplementedError(
            f"an odd rotary width ({args.freq_dim}, rounded up to {args.rotary_dim} as HF does) "
            f"with rope_type {rope_type!r} is not implemented (only 'default' reads it)"
        )
    return kind.read(args)
