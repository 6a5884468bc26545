"""Each kind in words and numbers: the text ``python -m posenc_ref inspect`` prints.

``describe(encoding)`` returns ``(field, text)`` pairs for a kind other than RoPE, the first one
the headline. ``describe_rope(spec)`` is the text for one RoPE: widths, layout, base, scaling,
attention factor and a per-pair table. ``describe_encoding(encoding)`` puts either together,
wrapped at 76 columns. Every number is computed from the encoding, not written here.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from ..values import inv_freq_values
from ._kinds import Alibi, LearnedAbsolute, NoPE, RelativeKey, Sinusoidal, T5Buckets

MAX_SLOPES = 8  # slopes listed; the rest are summarised


def short(value: float) -> str:
    return f"{value:.6g}"


def learned_text(e: LearnedAbsolute) -> list[tuple[str, str]]:
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


VARIANTS = {
    "interleaved": "sin in even columns 2i, cos in odd columns 2i+1, as in the paper: "
    "posenc_ref's table as it is",
    "halves": "every sin first (columns 0..{h1}), then every cos ({h}..{d1}); the paper "
    "interleaves them: posenc_ref's table with its even columns first, then its odd ones",
    "fairseq": "every sin first (columns 0..{h1}), then every cos ({h}..{d1}); the paper "
    "interleaves them: posenc_ref's table with its even columns first, then its odd ones",
}


def sinusoidal_text(e: Sinusoidal) -> list[tuple[str, str]]:
    d, h = e.dim, e.dim // 2
    omega = e.inv_freq_values()
    if e.variant == "fairseq":
        formula = (
            f"omega_i = {e.base:g}^(-i/{h - 1}) (fairseq's), so the slowest pair has exactly "
            f"{short(float(omega[-1]))} = 1/{e.base:g}; the paper's omega_i = {e.base:g}^(-2i/{d}) "
            f"with base {short(e.table_base)} instead of {e.base:g}"
        )
    else:
        formula = (
            f"omega_i = {e.base:g}^(-2i/{d}) (the paper's): fastest 1, slowest "
            f"{short(float(omega[-1]))}"
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
        ("columns", VARIANTS[e.variant].format(h1=h - 1, h=h, d1=d - 1)),
        ("frequency", formula),
        ("positions", angle),
    ]


def alibi_text(e: Alibi) -> list[tuple[str, str]]:
    n = e.num_heads
    slopes = e.slope_values()
    power = 2 ** int(math.floor(math.log2(n)))
    if power == n:
        rule = f"mu_h = 2^(-8h/{n}), h = 1..{n}"
    else:
        rule = (
            f"the {power}-head slopes 2^(-8h/{power}), then the first {n - power} odd-h slopes "
            f"of the {2 * power}-head set (not monotone)"
        )
    shown = ", ".join(short(float(s)) for s in slopes[:MAX_SLOPES])
    if n > MAX_SLOPES:
        shown += f", ... ({n} in all; the smallest {short(float(min(slopes)))})"
    if e.logit_scale == 1.0:
        scale = "added to q.k/sqrt(d_head) as they are"
        label = "slopes"
    else:
        scale = (
            f"added before the model's 1/sqrt(d_head) = {short(e.logit_scale)} scale: on the "
            f"scaled logits q.k/sqrt(d_head) the slopes are mu_h x {short(e.logit_scale)} "
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


def t5_text(e: T5Buckets) -> list[tuple[str, str]]:
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


def relative_key_text(e: RelativeKey) -> list[tuple[str, str]]:
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


def nope_text(e: NoPE) -> list[tuple[str, str]]:
    if e.attention_layers == 0:
        order = "no layer attends: the state-space layers' recurrence carries the order"
    elif e.attention_layers is None:  # the family's row says what carries order (a note)
        order = "what carries the order is in the note below"
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
    "learned": learned_text,
    "sinusoidal": sinusoidal_text,
    "alibi": alibi_text,
    "t5": t5_text,
    "relative_key": relative_key_text,
    "nope": nope_text,
}


def describe(encoding: object) -> list[tuple[str, str]]:
    """``(field, text)`` pairs for a kind other than RoPE, the headline first (field ``""``)."""
    return [*DESCRIBERS[encoding.kind](encoding), ("source", encoding.source)]


# --------------------------------------------------------------------------- RoPE, and any kind


def number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.6g}"


def shown_pairs(pairs: int, every: bool) -> list[int]:
    if every or pairs <= 16:
        return list(range(pairs))
    picked = {round(k * (pairs - 1) / 15) for k in range(16)}
    return sorted(picked)


def wrap(text: str, indent: int = 12) -> str:
    """``text`` filled to 76 columns, later lines indented (the command line's every line)."""
    # 76 columns: fits a terminal, and an output block on the site
    return textwrap.fill(text, 76, subsequent_indent=" " * indent, break_on_hyphens=False)


def field_line(name: str, text: str) -> str:
    return wrap(f"{name + ':':<12}{text}")


def describe_encoding(encoding: object, *, all_pairs: bool = False) -> str:
    """The text ``inspect`` prints for what ``positional_encoding`` returns, any kind.

    Parameters
    ----------
    encoding
        A :class:`~posenc_ref.encodings.LearnedAbsolute`, ``Sinusoidal``, ``Alibi``,
        ``T5Buckets``, ``RelativeKey``, ``NoPE`` or ``Rope``.
    all_pairs
        For a RoPE: list every pair instead of at most 16 evenly spaced ones.

    Returns
    -------
    str
        Lines of at most 76 characters.
    """
    if encoding.kind == "rope":
        text = rope_text(encoding, all_pairs)
    else:
        fields = describe(encoding)
        text = "\n".join(wrap(t) if not name else field_line(name, t) for name, t in fields)
    for note in encoding.notes:
        text += "\n" + field_line("note", note)
    return text


def layer_type_lines(encoding) -> list[str]:
    """Every layer type of the config, its layers, and whether they rotate."""
    several = list(encoding.specs) != [None]
    lines = []
    for layer_type in getattr(encoding, "layer_types", ()):
        if not layer_type.rotates:
            what = "no RoPE"
        elif several and layer_type.name not in encoding.specs:
            what = "its own RoPE, not shown (--layer-type chose another)"
        else:
            what = "its own RoPE, below" if several else "the RoPE below"
        lines.append(wrap(f"  {layer_type.name}: layers {listed(list(layer_type.layers))}: {what}"))
    return ([wrap(f"layer types: {len(lines)}", indent=0)] + lines) if lines else []


def rope_text(encoding, all_pairs: bool) -> str:
    specs = encoding.specs
    types = layer_type_lines(encoding)
    if list(specs) == [None]:
        text = describe_rope(specs[None], all_pairs=all_pairs)
        return "\n".join(types) + "\n\n" + text if types else text
    names = ", ".join(str(t) for t in specs)
    where = f"model_type {encoding.model_type!r}" if encoding.model_type else "this config"
    head = wrap(
        f"{where} has one RoPE per layer type: {names}. Each is explained below "
        "(--layer-type T shows one).",
        indent=0,
    )
    blocks = [describe_rope(spec, all_pairs=all_pairs) for spec in specs.values()]
    rule = "-" * 76
    head += "".join("\n" + line for line in types)
    return head + "\n\n" + f"\n{rule}\n".join(blocks)


def describe_rope(spec: object, *, all_pairs: bool = False) -> str:
    """The text ``inspect`` prints for a :class:`~posenc_ref.models.RopeSpec`.

    Parameters
    ----------
    spec
        A spec from :func:`posenc_ref.models.rope_spec`.
    all_pairs
        List every pair instead of at most 16 evenly spaced ones.

    Returns
    -------
    str
    """
    lines = [*rope_lines(spec), *layer_lines(spec), *pair_lines(spec, all_pairs)]
    return "\n".join(lines)


def rope_lines(spec: object) -> list[str]:
    """Type and base, widths, layout, context, attention factor, M-RoPE: one line each."""
    head_dim, rotary_dim = spec.head_dim, spec.rotary_dim
    layout = spec.layout
    model_type = getattr(spec, "model_type", None)
    layer_type = getattr(spec, "layer_type", None)
    where = f"model_type {model_type!r}" if model_type else "this config"
    if layer_type:
        where += f", layer type {layer_type!r}"
    lines = [wrap(f"RoPE of {where}: rope_type {spec.rope_type!r}, base {spec.base:.10g}")]
    partial = (
        "all of them rotated"
        if rotary_dim == head_dim
        else f"the first {rotary_dim} rotated, the last {head_dim - rotary_dim} passed through "
        f"(partial rotary, factor {rotary_dim / head_dim:g})"
    )
    lines.append(wrap(f"widths:     head_dim {head_dim}, rotary_dim {rotary_dim}: {partial}"))
    if layout == "interleaved":
        pairing = "pairs (2i, 2i+1), interleaved (Meta's Llama, GLM, torchtune)"
    else:
        pairing = f"pairs (i, i + {rotary_dim // 2}), half (HF rotate_half, GPT-NeoX)"
    output_layout = getattr(spec, "output_layout", layout)
    if output_layout not in (None, layout):
        pairing += f"; results written back in {output_layout} order"
    lines.append(wrap(f"layout:     {pairing}"))
    original = spec.original_max_len
    lines.append(
        wrap(
            "context:    original "
            + (f"{original}" if original else "not stated")
            + f", max_position_embeddings {spec.max_len}"
            + (f", factor {spec.factor:g}" if getattr(spec, "factor", None) else "")
        )
    )
    a = float(spec.attention_factor)
    lines.append(
        wrap(
            f"attention:  factor {number(a)} multiplied into cos and sin"
            + (f" (logits scale by a^2 = {number(a * a)})" if a != 1.0 else " (none)")
        )
    )
    softmax = float(getattr(spec, "softmax_scale_factor", 1.0))
    if softmax != 1.0:
        lines.append(
            wrap(
                f"            and the model multiplies its softmax scale by {number(softmax)} "
                "outside RoPE"
            )
        )
    mrope = getattr(spec, "mrope_section", None)
    if mrope:
        lines.append(
            wrap(
                f"M-RoPE:     sections {tuple(mrope)} pairs take their angles from the time, "
                "height and width position rows"
            )
        )
    return lines


def pair_lines(spec: object, all_pairs: bool) -> list[str]:
    """The pairs in a sentence, then a table of them (frequency, wavelength, turns), then a note."""
    pairs = spec.rotary_dim // 2
    original = spec.original_max_len
    omega = list(spec.inv_freq_values)
    plain = inv_freq_values(spec.rotary_dim, spec.base)
    wavelength = [wavelength_of(w) for w in omega]
    # a float: an integer context past int64 (10**20) is not a length anyone computes with
    context = float(original or spec.max_len or 0)
    label = f"{original or spec.max_len}" if context < 1e9 else f"{context:.3g}"  # fits a column
    summary = (
        f"{pairs}, the fastest turning {number(max(omega))} rad per position "
        f"(wavelength {number(min(wavelength))}), the slowest "
        f"{number(min(omega))} (wavelength {number(max(wavelength))})."
    )
    if context:
        turns = [context / length for length in wavelength]
        summary += (
            f" {sum(t >= 1 for t in turns)} of {pairs} turn at least once within {label} "
            f"positions; the slowest turns {number(min(turns))} times."
        )
    lines = [wrap("pairs:      " + summary)]
    scaled = not all_close(omega, plain)
    long_note = length_note(spec, context, omega) if context else None
    header = f"{'pair':>5} {'inv_freq':>12} {'wavelength':>12}"
    if context:
        header += f" {'turns in ' + label:>16}"
    if scaled:
        header += f" {'vs base^(-2i/d)':>16}"
    lines += ["", header]
    for i in shown_pairs(pairs, all_pairs):
        row = f"{i:>5} {number(omega[i]):>12} {number(wavelength[i]):>12}"
        if context:
            row += f" {number(context / wavelength[i]):>16}"
        if scaled:
            row += f" {'x ' + number(omega[i] / plain[i]):>16}"
        lines.append(row)
    if not all_pairs and pairs > 16:
        shown = len(shown_pairs(pairs, False))
        lines.append(f"({shown} of {pairs} pairs shown; --all-pairs lists all)")
    if long_note:
        lines += ["", wrap(long_note, indent=0)]
    return lines


def listed(layers: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in layers[:8])
    return shown + (f", ... ({len(layers)} layers)" if len(layers) > 8 else "")


def layer_lines(spec: object) -> list[str]:
    """Which layers use the spec, MLA's position-free part, query scaling: where a spec says."""
    lines = []
    layers = getattr(spec, "layers", None)
    if layers:
        lines.append(wrap(f"layers:     {listed(list(layers))} use this RoPE"))
    nope = getattr(spec, "nope_layers", None)
    if nope:
        lines.append(wrap(f"no RoPE:    layers {listed(list(nope))} rotate nothing"))
    nope_dim = getattr(spec, "nope_dim", 0)
    if nope_dim:
        lines.append(
            wrap(
                f"split head: each query/key head is {nope_dim} coordinates without position, "
                f"then the {spec.head_dim} rotated ones"
            )
        )
    lines += sparse_lines(spec)
    scale = getattr(spec, "query_scale", None)
    if scale is not None:
        lines.append(
            wrap(
                "queries:    multiplied by a factor that grows with the position t: "
                f"{scale.describe()}"
            )
        )
    scale = getattr(spec, "nope_query_scale", None)
    if scale is not None:
        lines.append(
            wrap(f"no-RoPE queries: the layers without RoPE multiply theirs by {scale.describe()}")
        )
    return lines


def sparse_lines(spec: object) -> list[str]:
    """A named table, compressed keys, K = V and the indexer's RoPE: where a spec has them."""
    lines = []
    table = getattr(spec, "table", None)
    if table is not None:
        lines.append(
            wrap(f"table:      rope_parameters[{table!r}] (the config's tables are named)")
        )
    compressed = getattr(spec, "compressed_keys", None)
    if compressed is not None:
        lines.append(wrap(f"compressed: {compressed.rule()}"))
    if getattr(spec, "values_rotated", False):
        lines.append(
            wrap(
                "values:     the rotated keys (K = V); the model turns the output's rotated part "
                "back at the query position"
            )
        )
    indexer = getattr(spec, "indexer", None)
    if indexer is not None:
        lines.append(wrap("indexer:    the lightning indexer's RoPE, a second spec (.indexer):"))
        rope = indexer.rotary_dim
        if indexer.nope_dim:
            where = f"{indexer.nope_dim} without position, then the {rope} rotated ones"
            head = indexer.nope_dim + indexer.head_dim
        else:
            where = (
                f"the {rope} rotated ones first, then {indexer.head_dim - rope} without position"
            )
            head = indexer.head_dim
        pairing = "(2i, 2i+1), interleaved" if indexer.layout == "interleaved" else (
            f"(i, i + {rope // 2}), half")  # fmt: skip
        if indexer.output_layout != indexer.layout:
            pairing += f"; written back in {indexer.output_layout} order"
        lines.append(wrap(f"              its heads: {head} coordinates, {where}", indent=14))
        lines.append(wrap(f"              pairs {pairing}", indent=14))
        lines.append(wrap("              frequencies and attention factor: this RoPE's", indent=14))
    return lines


def wavelength_of(omega: float) -> float:
    r""":math:`2\pi/\omega`; a pair that does not turn (frequency 0) has an infinite wavelength."""
    return 2 * math.pi / omega if omega else math.inf


def all_close(values: list[float], reference: list[float]) -> bool:
    """Equal to ``reference`` within a relative 1e-12 (``torch.allclose(rtol=1e-12, atol=0)``)."""
    return len(values) == len(reference) and all(
        abs(x - y) <= 1e-12 * abs(y) for x, y in zip(values, reference, strict=True)
    )


def length_note(spec: object, context: float, omega) -> str | None:
    """Say so when calls longer than the original context use other frequencies."""
    longer = int(2 * context + 1)
    if longer > 2**53:  # past float64's integers: no length-dependent type reads such a length
        return None
    later = spec.values(longer)
    if all_close(later.inv_freq, omega):
        return None
    return (
        f"length-dependent: calls longer than {int(context)} positions use other frequencies "
        f"(at length {longer}: fastest {number(max(later.inv_freq))}, "
        f"slowest {number(min(later.inv_freq))}, attention factor "
        f"{number(float(later.attention_factor))})"
    )
