r"""The RoPE reader: any transformers config -> :class:`~posenc_ref.models.RopeSpec`, in steps.

It reads every config by transformers' own conventions (``rope_parameters`` or the legacy
``rope_theta`` + ``rope_scaling``; the head width from ``head_dim``, else ``hidden_size /
num_attention_heads``; ``partial_rotary_factor``; one RoPE dict per layer type). Everything else
comes from two tables: the rope type's entry (:data:`~posenc_ref.models.ROPE_TYPES`: the keys it
reads and the transform it is) and the family's row (:data:`~posenc_ref.models.FAMILIES`: what
its code decides and its config does not say, as traits). :func:`rope_spec` is a few named steps,
each in its own module and each asking the row's traits; there is no per-family or per-type
branch, and a config passes through the modules once, in order:

1. the config, a wrapper's part that holds the rotary, and its language model (``_config.py``);
2. the family's row, or why there is none (``families/``);
3. the config class's defaults and other names for keys, from the row (``family.py``);
4. the RoPE dict, its type and base (``_rope_dict.py``);
5. widths, lengths, the pair layout, M-RoPE sections (``_shape.py``);
6. the type's frequencies (``rope_types.py``);
7. which layers rotate, and the scalings and norms around the rotation (``_layers.py``);
8. the spec (``spec.py``), with what sparse attention adds: compressed keys and an indexer's
   RoPE (``sparse.py``);
9. the keys the family's code does not read: noted, or refused where they contradict the spec
   (``_unread.py``);
10. learned factors of the frequencies that a checkpoint holds (Mistral Large 4's LeRoPE:
    ``lerope_alpha``, ``_learned.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._config import CLASS_NOTES, plain, shown
from ._language import language_of
from ._layers import around_of, layer_count
from ._learned import with_learned_scales
from ._rope_dict import choose_rope, is_nested, rope_dicts
from ._shape import shape_of
from ._unread import with_notes
from .families import find_family
from .rope_types import TypeArgs, read_type
from .sparse import with_sparse_parts
from .spec import NoRopeError, RopeSpec
from .traits import RopeLayers

__all__ = ["rope_spec", "layer_specs", "NoRopeError"]


def rope_spec(
    config: Mapping[str, Any] | object,
    *,
    layer_type: str | None = None,
    layout: str | None = None,
    lerope_alpha: Any = None,
) -> RopeSpec:
    r"""Read a model's RoPE from its config: widths, layout, base, frequencies, factors.

    Explained on the site: [Model zoo](models.md); the methods themselves on
    [Context extension](rope_scaling.md).

    Accepts the contents of ``config.json`` as a dict, or a transformers config object (through
    its ``to_dict()``; transformers is never imported here). Multimodal configs are read from
    their ``text_config``. The config is read by transformers' conventions; what a family's
    code decides and its config does not say comes from its row in
    :data:`~posenc_ref.models.FAMILIES` (pair layout, where the rotary width comes from, the
    defaults its config class fills in, layers without RoPE, a query scaling), and what a rope
    type reads from its entry in :data:`~posenc_ref.models.ROPE_TYPES`. HF's rules are followed
    where a config leaves something implicit: the rotary width is
    ``int(head_dim * partial_rotary_factor)``; ``yarn`` and ``longrope`` derive ``factor`` from
    ``max_position_embeddings / original_max_position_embeddings`` when it is absent;
    ``yarn``'s attention factor is the explicit ``attention_factor``, else
    ``g(s, mscale) / g(s, mscale_all_dim)`` when both are given, else ``0.1 ln s + 1``;
    ``dynamic`` uses ``max_position_embeddings`` as its original length.

    Parameters
    ----------
    config
        The model's configuration.
    layer_type
        For configs with one RoPE per layer type (Gemma 3: ``"sliding_attention"``,
        ``"full_attention"``): which one. For other configs, one of their ``layer_types`` or
        nothing.
    layout
        Pair layout for a ``model_type`` not in ``FAMILIES``; for a known family it must agree
        with the family's code (or be left out).
    lerope_alpha
        Mistral Large 4 only (``mistral_large4_text``, LeRoPE): the values of the checkpoint
        tensor ``model.language_model.rotary_emb.alpha`` (``lerope.alpha`` in the released
        checkpoint), ``qk_rope_head_dim / 2`` of them, as a tensor, array or list. Its code
        multiplies the inverse frequencies by ``exp(alpha)``; without them its config is
        refused, naming the tensor.

    Returns
    -------
    RopeSpec

    Raises
    ------
    NoRopeError
        The model uses no RoPE (a ``ValueError``).
    ValueError
        Unknown keys in the RoPE dict, inconsistent values (naming the key), widths that do not
        fit, an unknown family without ``layout``, a key another family reads.
    TypeError
        A value of the wrong kind (a list where a name is expected, ...).
    NotImplementedError
        A RoPE key or type posenc_ref knows but does not implement.

    Examples
    --------
    >>> spec = rope_spec({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
    ...                   "partial_rotary_factor": 0.4, "rope_theta": 10000.0,
    ...                   "max_position_embeddings": 2048})
    >>> spec.head_dim, spec.rotary_dim, spec.layout, spec.rope_type
    (80, 32, 'half', 'default')
    """
    given, model_type, said = language_of(config)  # a wrapper's language model, its family
    family, model_type = find_family(given, model_type, layout)
    config = family.resolve(given, model_type)  # names, then the config class's defaults
    said = (*said, *config.pop(CLASS_NOTES, ()))  # what a config class's rewrite ignored
    chosen = choose_rope(config, family, model_type, layer_type)
    shape = shape_of(chosen, family, model_type)
    args = TypeArgs(chosen.rope, shape.rotary_dim, shape.head_dim, shape.partial, chosen.base,
                    shape.max_len, shape.original, shape.freq_dim)  # fmt: skip
    read = read_type(chosen.kind, args, chosen.rope["rope_type"])
    around = around_of(chosen, family, read, shape.rotary_dim)
    spec = RopeSpec.from_steps(model_type, chosen, shape, read, around)
    spec = with_sparse_parts(spec, config, family)
    spec = with_notes(spec, given, family, said)  # what the code ignores: noted/refused
    return with_learned_scales(spec, family, lerope_alpha)


def layer_specs(
    config: Mapping[str, Any] | object, *, layout: str | None = None, lerope_alpha: Any = None
) -> list[RopeSpec | None]:
    """The RoPE of every layer of a model, in order: one :class:`RopeSpec` per layer, or ``None``.

    ``None`` marks a layer without RoPE (SmolLM3's and Llama 4's NoPE layers, a layer type
    whose ``rope_parameters`` is null). Layers of one layer type share one spec object. For a
    config that says nothing about its layers (no ``num_hidden_layers``), the list has one
    entry per layer type, in the order the types first appear.

    Parameters
    ----------
    config
        The model's configuration, as for :func:`rope_spec`.
    layout, lerope_alpha
        As for :func:`rope_spec`.

    Returns
    -------
    list of RopeSpec or None
    """
    # Read many times below: a transformers config object's to_dict() deep-copies the whole
    # config (a quantized model's lists every module: 0.5 s a copy), so it is made a dict once.
    config = plain(config)
    text, model_type, _ = language_of(config)
    family, key = find_family(text, model_type, layout)
    text = family.resolve(text, key)
    types = text.get("layer_types")
    count = layer_count(text)
    if types is None:
        spec = rope_spec(config, layout=layout, lerope_alpha=lerope_alpha)
        if count is None:
            return [spec]
        return [None if i in (spec.nope_layers or ()) else spec for i in range(count)]
    if not isinstance(types, (list, tuple)) or not all(isinstance(t, str) for t in types):
        raise TypeError(f"layer_types must be a list of strings, got {shown(types)}")
    if count is not None and len(types) != count:
        raise ValueError(f"layer_types has {len(types)} entries but num_hidden_layers={count}")
    rule = family.trait(RopeLayers)
    rotating = rule.rule(text, count) if rule is not None else None
    rope, _ = rope_dicts(text, family)
    null = {t for t, v in rope.items() if v is None} if is_nested(rope) else set()
    per_type: dict[str, RopeSpec | None] = {}
    for layer_type in dict.fromkeys(types):
        of_type = [j for j, t in enumerate(types) if t == layer_type]
        if rotating is not None and not any(rotating[j] for j in of_type):
            per_type[layer_type] = None  # layers its code never rotates (LFM3's conv layers)
        elif layer_type in null:
            per_type[layer_type] = None  # a layer type whose RoPE dict is null (Beam's global)
        else:
            per_type[layer_type] = rope_spec(
                config, layer_type=layer_type, layout=layout, lerope_alpha=lerope_alpha
            )
    if count is None:
        return [per_type[t] for t in dict.fromkeys(types)]
    out: list[RopeSpec | None] = []
    for i, layer_type in enumerate(types):
        spec = per_type[layer_type]
        out.append(None if spec is None or i in (spec.nope_layers or ()) else spec)
    return out
