r"""The command line's JSON: what ``--json`` prints, and the schema that documents it.

Every ``--json`` output is one JSON object with ``"schema": "posenc_ref.cli"``, the
``"schema_version"`` below, the ``"command"`` that wrote it and ``"posenc_ref"`` (the package
version). The rest depends on the command and is described, field by field, by the JSON Schema
``schema.json`` beside this module (:func:`json_schema`), shown on the site's command line page.

The encodings are written generically: every field of the result objects
(:class:`~posenc_ref.encodings.Rope`'s :class:`~posenc_ref.models.RopeSpec` per layer type, and
the dataclasses of the other kinds) goes out under its own name, so a field the reader gains
appears in the JSON without a change here; the schema requires the fields it documents and
allows more. Tensors become lists, a :class:`~posenc_ref.rope_scaling.Scaling` becomes
``{"method": ..., "params": {...}}``, a :class:`~posenc_ref.query_scale.QueryScale` its fields
and its formula, and a number that is not finite (JSON has none) becomes ``null``.

Versioning: ``schema_version`` grows by one when a documented field is removed, renamed or
changes meaning; fields are added without a new version.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

from .. import __version__
from ..values import inv_freq_values

SCHEMA_VERSION = 1
"""The version of the JSON the command line writes (``schema_version`` in every output)."""

# Fields written for every RopeSpec whatever it holds: the rest follow generically.
_HIDDEN = {"inv_freq_values"}  # written once, in the per-pair table


def envelope(command: str, **body: Any) -> dict[str, Any]:
    """The fields every output starts with, then ``body``."""
    return {
        "schema": "posenc_ref.cli",
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "posenc_ref": __version__,
        **body,
    }


def plain(value: Any) -> Any:
    """``value`` as JSON values: dataclasses, mappings, tensors, tuples, floats that are finite."""
    from ..query_scale import QueryScale
    from ..rope_scaling import Scaling

    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    torch = sys.modules.get("torch")  # a tensor can only come from a program that imported it
    if torch is not None and isinstance(value, torch.Tensor):
        return plain(value.detach().to("cpu", torch.float64).tolist())
    if isinstance(value, Scaling):
        return {"method": value.method, "params": plain(dict(value.params))}
    if isinstance(value, QueryScale):
        return {**plain(fields_of(value)), "formula": value.describe()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(fields_of(value))
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)  # anything else is written as its text, never dropped


def fields_of(value: Any) -> dict[str, Any]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


def pair_table(spec: Any) -> list[dict[str, Any]]:
    """Every pair of a spec: frequency, wavelength, turns in the original context, scaling ratio.

    ``turns`` is within ``original_max_len`` (else ``max_len``; ``null`` where neither is
    stated); ``ratio`` is the frequency over the unscaled ``base ** (-2i / rotary_dim)``.
    """
    unscaled = inv_freq_values(spec.rotary_dim, spec.base)
    context = spec.original_max_len or spec.max_len
    rows = []
    for i, w in enumerate(spec.inv_freq_values):
        wavelength = 2 * math.pi / w if w > 0 else math.inf
        rows.append(
            {
                "pair": i,
                "inv_freq": plain(w),
                "wavelength": plain(wavelength),
                "turns": plain(float(context) / wavelength) if context else None,
                "ratio": plain(w / float(unscaled[i])),
            }
        )
    return rows


def spec_json(spec: Any) -> dict[str, Any]:
    """A :class:`~posenc_ref.models.RopeSpec`: every field, the per-pair table and what varies."""
    out = {k: plain(v) for k, v in fields_of(spec).items() if k not in _HIDDEN}
    out["pairs"] = pair_table(spec)
    scaling = spec.scaling
    out["length_dependent"] = bool(scaling is not None and scaling.length_dependent)
    out["varies_past"] = scaling.varies_past if scaling is not None else None
    compressed = getattr(spec, "compressed_keys", None)
    if compressed is not None:
        out["compressed_keys"] = {**plain(compressed), "rule": compressed.rule()}
    if getattr(spec, "indexer", None) is not None:  # a second spec, written as the first
        out["indexer"] = spec_json(spec.indexer)
    return out


def encoding_json(encoding: Any) -> dict[str, Any]:
    """What :func:`~posenc_ref.encodings.positional_encoding` returns, any kind."""
    out = {
        "kind": encoding.kind,
        "model_type": encoding.model_type,
        "source": encoding.source,
        "notes": list(encoding.notes),
    }
    if encoding.kind == "rope":
        out["layer_types"] = [None if t is None else str(t) for t in encoding.specs]
        out["rope"] = [spec_json(spec) for spec in encoding.specs.values()]
        return out
    common = {"model_type", "source", "notes"}
    out["parameters"] = {k: plain(v) for k, v in fields_of(encoding).items() if k not in common}
    derived = {"rows": "rows", "table_base": "table_base"}
    for name, attribute in derived.items():
        if hasattr(encoding, attribute):
            out["parameters"][name] = plain(getattr(encoding, attribute))
    if encoding.kind == "alibi":
        out["parameters"]["slopes"] = plain(encoding.slope_values())
    return out


def axial_json(tower: Any) -> dict[str, Any]:
    """A vision tower's :class:`~posenc_ref.models.AxialSpec`: its fields and its frequencies."""
    out = {k: plain(v) for k, v in fields_of(tower).items()}
    out["inv_freq"] = plain(tower.inv_freq_values)
    out["pair_axes"] = plain(tower.pair_axes_values)
    return out


def dumps(document: Mapping[str, Any]) -> str:
    """The text printed: indented, keys in the order written, strictly JSON (no NaN)."""
    return json.dumps(document, indent=2, allow_nan=False)


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of every ``--json`` output, from ``schema.json``."""
    text = resources.files(__package__).joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)
