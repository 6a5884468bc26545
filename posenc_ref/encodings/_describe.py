"""Each kind in words and numbers: the fields ``python -m posenc_ref inspect`` prints.

``describe(encoding)`` returns ``(field, text)`` pairs, the first one the headline; the command
line wraps them at 76 columns. Every number is computed from the encoding, not written here.
"""

from __future__ import annotations

import math

import torch

from ._kinds import Alibi, LearnedAbsolute, NoPE, RelativeKey, Sinusoidal, T5Buckets

_MAX_SLOPES = 8  # slopes listed; the rest are summarised


def _g(value: float) -> str:
    return f"{value:.6g}"


def _learned(e: LearnedAbsolute) -> list[tuple[str, str]]:
    if e.offset == 0:
        rows = "token t reads row t"
    elif e.padding_idx is not None:
        rows = (
            f"token t reads row t + {e.offset} (padding_idx + 1: positions count on from "
            f"the padding index {e.padding_idx}, as in fairseq)"
        )
    else:
        rows = f"token t reads row t + {e.offset} (the first {e.offset} rows are never read)"
    return [
        (
            "",
            f"Learned absolute positions (model_type {e.model_type!r}): a trained table of "
            "position vectors, added to the token embeddings",
        ),
        ("table", f"{e.rows} rows of width {e.dim}"),
        (
            "positions",
            f"{rows}; tokens 0..{e.num_positions - 1} have a row, a longer input has none",
        ),
    ]


_VARIANTS = {
    "interleaved": "sin in even columns 2i, cos in odd columns 2i+1, as in the paper: "
    "posenc_ref's table as it is",
    "halves": "every sin first (columns 0..{h1}), then every cos ({h}..{d1}); the paper "
    "interleaves them: posenc_ref's table with its even columns first, then its odd ones",
    "fairseq": "every sin first (columns 0..{h1}), then every cos ({h}..{d1}); the paper "
    "interleaves them: posenc_ref's table with its even columns first, then its odd ones",
}


def _sinusoidal(e: Sinusoidal) -> list[tuple[str, str]]:
    d, h = e.dim, e.dim // 2
    omega = e.inv_freq()
    if e.variant == "fairseq":
        formula = (
            f"omega_i = {e.base:g}^(-i/{h - 1}) (fairseq's), so the slowest pair has exactly "
            f"{_g(float(omega[-1]))} = 1/{e.base:g}; the paper's omega_i = {e.base:g}^(-2i/{d}) "
            f"with base {_g(e.table_base)} instead of {e.base:g}"
        )
    else:
        formula = (
            f"omega_i = {e.base:g}^(-2i/{d}) (the paper's): fastest 1, slowest "
            f"{_g(float(omega[-1]))}"
        )
    if e.offset:
        angle = f"token t at angle (t + {e.offset}) omega_i: positions count from {e.offset}"
        if e.padding_idx is not None:
            angle += f" (padding_idx + 1); row {e.padding_idx} is the zero padding row"
    else:
        angle = "token t at angle t omega_i"
    return [
        (
            "",
            f"Sinusoidal positions (model_type {e.model_type!r}): a fixed table of sines and "
            "cosines, added to the token embeddings",
        ),
        ("table", f"width {d}, base {e.base:g}, built for {e.num_positions} positions"),
        ("columns", _VARIANTS[e.variant].format(h1=h - 1, h=h, d1=d - 1)),
        ("frequency", formula),
        ("positions", angle),
    ]


def _alibi(e: Alibi) -> list[tuple[str, str]]:
    n = e.num_heads
    slopes = e.slopes()
    power = 2 ** int(math.floor(math.log2(n)))
    if power == n:
        rule = f"mu_h = 2^(-8h/{n}), h = 1..{n}"
    else:
        rule = (
            f"the {power}-head slopes 2^(-8h/{power}), then the first {n - power} odd-h slopes "
            f"of the {2 * power}-head set (not monotone)"
        )
    shown = ", ".join(_g(float(s)) for s in slopes[:_MAX_SLOPES])
    if n > _MAX_SLOPES:
        shown += f", ... ({n} in all; the smallest {_g(float(slopes.min()))})"
    if e.logit_scale == 1.0:
        scale = "added to q.k/sqrt(d_head) as they are"
        label = "slopes"
    else:
        scale = (
            f"added before the model's 1/sqrt(d_head) = {_g(e.logit_scale)} scale: on the "
            f"scaled logits q.k/sqrt(d_head) the slopes are mu_h x {_g(e.logit_scale)} "
            "(listed above)"
        )
        label = "on logits"
    return [
        (
            "",
            f"ALiBi (model_type {e.model_type!r}): no position vectors; head h adds "
            "-mu_h (m - p) to the logit of query m and key p",
        ),
        ("heads", f"{n}; {rule}"),
        (label, shown),
        ("bias", scale),
    ]


def _t5(e: T5Buckets) -> list[tuple[str, str]]:
    both, past = e.num_buckets // 2, e.num_buckets
    shared = (
        "every layer has its own table"
        if e.per_layer
        else "the table sits in the first layer of each stack and serves every layer"
    )
    return [
        (
            "",
            f"T5 relative buckets (model_type {e.model_type!r}): a learned scalar per "
            "bucket and head, added to the logits (which T5 does not scale by 1/sqrt(d))",
        ),
        (
            "buckets",
            f"{e.num_buckets}, max_distance {e.max_distance}, {e.num_heads} heads; {shared}",
        ),
        (
            "encoder",
            f"bidirectional: {both} buckets per direction, distances 0..{both // 2 - 1} "
            f"exact, then log-spaced; every distance from "
            f"{e.saturation(bidirectional=True)} on shares the last bucket",
        ),
        (
            "decoder",
            f"causal: {past} buckets for the past, 0..{past // 2 - 1} exact; from "
            f"{e.saturation(bidirectional=False)} on the last bucket; future keys share "
            "bucket 0 (they are masked)",
        ),
    ]


def _relative_key(e: RelativeKey) -> list[tuple[str, str]]:
    query = " and with the key" if e.variant == "relative_key_query" else ""
    return [
        (
            "",
            f"{e.variant} (model_type {e.model_type!r}, position_embedding_type "
            f"{e.variant!r}): Huang et al. (2020), a learned vector per distance m - p "
            f"({2 * e.max_position_embeddings - 1} rows), dotted with the query{query} and "
            "added to the logits; no absolute table",
        ),
        (
            "warning",
            "transformers 5 removed it (PR #41170): its code ignores the key and adds absolute "
            "position embeddings, which this checkpoint never trained; run it with "
            "transformers 4.x. posenc_ref has no implementation of it",
        ),
    ]


def _nope(e: NoPE) -> list[tuple[str, str]]:
    if e.attention_layers == 0:
        order = "no layer attends: the state-space layers' recurrence carries the order"
    else:
        order = (
            "order reaches the attention layers only through the causal mask and the "
            "state-space (Mamba) layers between them"
        )
    lines = [
        (
            "",
            f"No positional encoding (model_type {e.model_type!r}): no position vectors, no "
            f"bias, no rotation; {order}",
        )
    ]
    if e.attention_layers and e.layers:
        lines.append(("layers", f"{e.attention_layers} of {e.layers} attend"))
    return lines


DESCRIBERS = {
    "learned": _learned,
    "sinusoidal": _sinusoidal,
    "alibi": _alibi,
    "t5": _t5,
    "relative_key": _relative_key,
    "nope": _nope,
}


def describe(encoding: object) -> list[tuple[str, str]]:
    """``(field, text)`` pairs for a kind other than RoPE, the headline first (field ``""``)."""
    with torch.no_grad():
        return [*DESCRIBERS[encoding.kind](encoding), ("source", encoding.source)]
