"""Write ``data/zoo.json``: the model zoo, as the explorer's model picker reads it.

One entry per row of :func:`posenc_ref.models.zoo_rows` (a family, or a layer type of one), with
the numbers :func:`posenc_ref.models.rope_spec` read from its released config: base, head and
rotary width, the ``rope_scaling`` method and its arguments (``RopeSpec.scaling``, the keyword
arguments of the :mod:`posenc_ref.rope_scaling` function, LongRoPE's factor lists included).
The explorer (``docs/javascripts/explorer.js``) computes everything else in the browser, and the
browser test checks that what it computes for each family equals ``RopeSpec.frequencies``.

A family whose frequencies the explorer cannot reproduce with one of its methods (a rope type
it does not draw) is listed with ``supported: false`` and a note, so the picker shows it
greyed out rather than wrong. Like the figures, the file is generated (nothing is written into
``docs/``) and is rebuilt from the package on every build.
"""

from __future__ import annotations

import importlib
import json
import logging

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.explorer_data")

PATH = "data/zoo.json"


def method_of(rope_type: str) -> str | None:
    """The explorer's method for an HF ``rope_type``: its ROPE_TYPES entry's transform.

    ``"none"`` for ``default``; ``None`` where the type has no method of
    ``posenc_ref.rope_scaling.METHODS`` (``proportional``). The explorer's JavaScript has a twin
    of every method (tests/site/test_explorer.py holds it to the package).
    """
    if rope_type == "default":
        return "none"
    kind = _models().ROPE_TYPES.get(rope_type)
    return kind.transform if kind is not None else None


def _models():
    # hooks/figures.py (listed before this hook) has just re-imported the package, so under
    # `mkdocs serve` this is the edited package, not the one of the first build.
    return importlib.import_module("posenc_ref.models")


def _note(row: dict, spec, method: str | None, context: int) -> str:
    parts = [f"{row['name']}: {row['model']}, rope_type {spec.rope_type!r}."]
    if spec.mrope_section is not None:
        parts.append(
            f"M-RoPE sections {tuple(spec.mrope_section)}: for text the three position rows are "
            "equal, so the rotation is the plain RoPE drawn here."
        )
    if spec.original_max_len is None and method is not None:
        parts.append(
            f"The config states no original context; L\u2080 is shown as "
            f"max_position_embeddings / factor = {context}."
        )
    if spec.softmax_scale_factor != 1.0:
        parts.append(
            f"The model also scales its softmax by {spec.softmax_scale_factor:.6g} outside RoPE "
            "(not part of the rotation)."
        )
    if method is None:
        parts.append("The explorer has no method for this rope type, so it is not drawn here.")
    return " ".join(parts)


def families() -> list[dict]:
    """The picker's entries, from ``zoo_rows()``: plain JSON types only."""
    models = _models()
    entries = []
    for row in models.zoo_rows():
        spec = row["spec"]
        method = method_of(spec.rope_type)
        scaling = dict(spec.scaling) if spec.scaling else None
        if scaling is not None and method != scaling.pop("method"):
            method = None  # a reading the explorer does not mirror: do not pretend
        if scaling is None and spec.rope_type != "default":
            method = None  # e.g. "proportional": frequencies that no explorer method gives
        context = spec.original_max_len
        if context is None:
            factor = spec.factor or 1.0
            context = round(spec.max_len / factor) if spec.max_len else 4096
        entries.append(
            {
                "name": row["name"],
                "model": row["model"],
                "layer_type": row["layer_type"],
                "rope_type": spec.rope_type,
                "method": method or "none",
                "supported": method is not None,
                "base": spec.base,
                "head_dim": spec.head_dim,
                "rotary_dim": spec.rotary_dim,
                "layout": spec.layout,
                "original": spec.original_max_len,
                "context": context,
                "max_len": spec.max_len,
                "extended": row["extended"],
                "factor": spec.factor,
                "attention_factor": spec.attention_factor,
                "full_turns": row["full_turns"],
                "scaling": scaling,
                "note": _note(row, spec, method, context),
            }
        )
    return entries


def on_files(files, config):
    if files.get_file_from_path(PATH) is not None:
        from mkdocs.exceptions import PluginError

        raise PluginError(f"docs/{PATH} exists, but it is generated: delete the file")
    entries = families()
    payload = {
        "generated_by": "hooks/explorer_data.py from posenc_ref.models.zoo_rows()",
        "families": entries,
    }
    content = json.dumps(payload, indent=1, allow_nan=False) + "\n"
    files.append(File.generated(config, PATH, content=content))
    log.info("explorer: %d model families in %s", len(entries), PATH)
    return files
