r"""The released configs shipped with the package, and the model zoo's rows."""

from __future__ import annotations

import json
import math
from importlib import resources
from typing import Any

from .read_rope import rope_spec

__all__ = ["released_configs", "released_config", "zoo_rows"]


def released_configs() -> list[dict[str, Any]]:
    """The released RoPE configs of the model zoo, from the data file shipped with the package.

    Each entry has ``name`` (the family), ``model`` (the Hugging Face repository the config comes
    from), ``source`` (where the numbers were read), ``config`` (the RoPE-relevant keys of the
    model's ``config.json``, in the form it was released in) and ``layer_types`` (the layer types
    to read, for configs with one RoPE per layer type; else absent).

    Returns
    -------
    list of dict
        A fresh copy on each call.
    """
    text = resources.files("posenc_ref").joinpath("released_rope_configs.json").read_text()
    return json.loads(text)["models"]


def zoo_rows() -> list[dict[str, Any]]:
    r"""One row per released family (and per layer type), computed through :func:`rope_spec`.

    The model zoo's table: HF ``rope_type``, base, head and rotary width, pair layout, original
    and extended context, attention factor, and how many pairs complete at least one full turn
    inside the original context (:math:`L\,\omega_i / 2\pi \ge 1`, with the frequencies used
    there). The extended context is ``max_position_embeddings``, or :math:`s L` where a YaRN
    config extends past it (Qwen2.5's recommended block).

    Returns
    -------
    list of dict
        Keys ``name``, ``model``, ``layer_type``, ``spec`` (the :class:`RopeSpec`),
        ``original`` and ``extended`` (int or None), ``full_turns`` (int or None: ``None`` when
        the config does not state the original context).
    """
    rows = []
    for entry in released_configs():
        for layer_type in entry.get("layer_types", [None]):
            spec = rope_spec(entry["config"], layer_type=layer_type)
            original = spec.original_max_len
            extended = spec.max_len
            if spec.rope_type == "yarn" and original is not None and spec.factor is not None:
                extended = max(extended or 0, round(spec.factor * original))
            turns = None
            if original is not None:
                turns = sum(original * w / (2 * math.pi) >= 1 for w in spec.inv_freq_values)
            rows.append(
                {
                    "name": entry["name"],
                    "model": entry["model"],
                    "layer_type": layer_type,
                    "spec": spec,
                    "original": original,
                    "extended": extended,
                    "full_turns": turns,
                }
            )
    return rows


def released_config(name: str) -> dict[str, Any]:
    """The config dict of one released family by its ``name`` in :func:`released_configs`.

    Parameters
    ----------
    name
        For example ``"Phi-4-mini"``.

    Returns
    -------
    dict
    """
    entries = released_configs()
    for entry in entries:
        if entry["name"] == name:
            return entry["config"]
    raise ValueError(f"no released config named {name!r}; known: {[e['name'] for e in entries]}")
