"""transformers' side of a released config: its config object, and its text model, tiny.

Nothing here reads posenc_ref. The tiny model keeps every value that decides the RoPE (the
head width, ``rope_parameters``, the layer types and the lists per layer, the context lengths,
the MLA widths); ``tiny`` checks that it did.
"""

from __future__ import annotations

import copy
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hf_sweep import families, harness, special

FOLDER = Path(__file__).resolve().parents[2].parent / "shared" / "real_configs"
MANIFEST = FOLDER / "MANIFEST.tsv"

# Sizes beyond the sweep's TINY that released configs set and the tiny model cannot keep or
# need not: Gemma 4's 8 experts per token (of the sweep's 4 experts), Llama 4 Maverick's
# dense MLP of 16384 (slow on Llama 4's contiguous run of 8200 tokens), Gemma 4 E-size's 20
# layers that reuse an earlier layer's keys (the tiny prefix has fewer layers than that; a
# shared layer reuses keys rotated exactly as its own would be, so none is shared).
SIZES = {"top_k_experts": 2, "intermediate_size_mlp": 32, "num_kv_shared_layers": 0}

# special.py's overrides that set a RoPE value: a released config gives its own.
ROPE_OVERRIDES = {
    "rope_parameters",
    "rope_scaling",
    "rope_theta",
    "partial_rotary_factor",
    "_width",
}


def files() -> list[Path]:
    """The corpus's config files, sorted by name (empty where the folder is absent)."""
    if not FOLDER.is_dir():
        return []
    return sorted(p for p in FOLDER.glob("*.json"))


def manifest() -> dict[str, dict[str, str]]:
    """``MANIFEST.tsv`` by file name: repo, path, family (the model family it names), why."""
    if not MANIFEST.is_file():
        return {}
    lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    out = {}
    for line in lines[1:]:
        cells = line.split("\t")
        row = dict(zip(header, cells, strict=False))
        out[row["file"]] = row
    return out


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class Resolved:
    """The transformers config object of a file and how its class was found."""

    config: Any  # the object from_dict built (the wrapper's, where the file is a wrapper)
    text: Any  # its text config (get_text_config())
    how: str  # "model_type 'llama'", "text_config model_type 'kimi_linear'", ...
    family: str  # the transformers model directory of the text config's class


class CannotBuild(Exception):
    """transformers cannot build this config: the message says why (remote code, an error)."""


class NoRope(Exception):
    """The family's text model holds no rotary class: its code uses no RoPE."""


def _flat_text(raw: dict, text_type: str) -> dict:
    """A flat wrapper's top-level text keys as its text_config, as its class read them once."""
    wrapper = {k: raw[k] for k in ("model_type", "architectures", "vision_config") if k in raw}
    text = {k: v for k, v in raw.items() if k not in wrapper}
    return {**wrapper, "text_config": {**text, "model_type": text_type}}


def _moved(raw: dict, key: str, inner: str | None, text_type: str | None) -> dict:
    """The language model's sub-config moved to text_config (``inner``: a key inside it)."""
    sub = raw[key] if inner is None else raw[key][inner]
    out = {k: v for k, v in raw.items() if k != key}
    return {**out, "text_config": {**sub, **({"model_type": text_type} if text_type else {})}}


def _without_interleaved(raw: dict) -> dict:
    rope = raw["text_config"].get("rope_scaling")
    if isinstance(rope, dict):
        raw["text_config"]["rope_scaling"] = {k: v for k, v in rope.items() if k != "interleaved"}
    return raw


# Released files in a layout transformers 5.23's config class no longer reads (it builds its
# language model from defaults instead, silently): model_type -> (the key that marks the layout,
# the file in the layout the class reads, why). The model's own code read them so (the readers'
# notes cite it); transformers' modeling code is unchanged, so running it on the moved config
# runs the family's code on the release's values.
LEGACY = {
    "glm4v": (
        None,
        lambda raw: _flat_text(raw, "glm4v_text"),
        "flat GLM-4.1V: transformers 4.53's Glm4vConfig built text_config from the top level",
    ),
    "qwen3_asr": (
        "thinker_config",
        # the thinker's text model is Qwen3 with Qwen3-VL's interleaved M-RoPE (vLLM
        # qwen3_asr.py: Qwen3ForCausalLM with mrope_section + mrope_interleaved): transformers'
        # Qwen3-VL text model runs that rotation
        # (Qwen3-Omni's "interleaved" key, which no modeling code reads, is dropped: Qwen3-VL's
        # class does not list it among the RoPE keys it ignores)
        lambda raw: _without_interleaved(
            _moved(raw, "thinker_config", "text_config", "qwen3_vl_text")
        ),
        "Qwen3-ASR as released (thinker_config): its code and vLLM read thinker_config",
    ),
    "vibevoice": (
        "decoder_config",
        lambda raw: _moved(raw, "decoder_config", None, None),
        "VibeVoice as released (decoder_config): its code and vLLM read decoder_config",
    ),
}


def legacy(raw: dict) -> tuple[dict, str | None]:
    """``(the file in the layout transformers 5.23 reads, why)``; the file itself where it is."""
    entry = LEGACY.get(raw.get("model_type"))
    if entry is None or "text_config" in raw:
        return raw, None
    marker, convert, why = entry
    if marker is not None and not isinstance(raw.get(marker), dict):
        return raw, None
    return convert(copy.deepcopy(raw)), why


def resolve(raw: dict) -> Resolved:
    """The config object transformers builds from ``raw``, as ``from_pretrained`` would.

    The class is the one ``model_type`` names; for a wrapper unknown to transformers whose
    ``text_config`` names a known ``model_type``, that text config alone; else a transformers
    class named in ``architectures`` (Kimi K2's file names ``DeepseekV3ForCausalLM``, whose code
    its remote code copies), as serving engines resolve a family.
    """
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    raw, moved = legacy(raw)
    model_type = raw.get("model_type")
    text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else None
    choices = []
    if model_type in CONFIG_MAPPING:
        choices.append((CONFIG_MAPPING[model_type], raw, f"model_type {model_type!r}"))
    elif text is not None and text.get("model_type") in CONFIG_MAPPING:
        name = text["model_type"]
        choices.append((CONFIG_MAPPING[name], text, f"text_config model_type {name!r}"))
    else:
        for arch in raw.get("architectures") or []:
            cls = getattr(transformers, arch, None) if isinstance(arch, str) else None
            if cls is not None and getattr(cls, "config_class", None) is not None:
                choices.append((cls.config_class, raw, f"architectures {arch!r}"))
                break
    if not choices:
        raise CannotBuild(
            f"remote code: transformers knows neither model_type {model_type!r} nor the "
            f"architectures {raw.get('architectures')}"
        )
    config_class, values, how = choices[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            # a deep copy: from_dict edits nested dicts in place (Kimi K2.5's wrapper renames
            # its text_config's model_type), and the file's dict is read again afterwards
            config = config_class.from_dict(copy.deepcopy(values))
        except Exception as exc:  # noqa: BLE001 (transformers' own refusal is the result)
            message = f"{config_class.__name__}.from_dict: {type(exc).__name__}: {exc}"
            raise CannotBuild(message) from exc
        text_config = config.get_text_config()
    family = type(text_config).__module__.split(".")[2]
    return Resolved(config, text_config, how + (f" ({moved})" if moved else ""), family)


def model_class(family: str, text_config: Any) -> type:
    """The family's text model class that takes this text config (the sweep's choice)."""
    rule = special.SPECIAL.get(family, {})
    found = families.classify(family)
    name = rule.get("model_class", found.model_class)
    if name is None:
        raise NoRope(f"{family}: no text model holds a rotary class")
    cls = getattr(harness.modeling(family), name)
    if not isinstance(text_config, cls.config_class):
        raise CannotBuild(
            f"{family}: the text model {name} takes {cls.config_class.__name__}, the file "
            f"gives {type(text_config).__name__}"
        )
    return cls


def rope_values(config: Any) -> dict:
    """What decides the RoPE, from a config object: compared between released and tiny."""
    values = config.to_dict()
    keep = (
        "rope_parameters",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "partial_rotary_factor",
        "rotary_dim",
        "max_position_embeddings",
        "rope_interleave",
        "llama_4_scaling_beta",
        "attn_scale",
        "floor_scale",
        "attn_temperature_tuning",
    )
    out = {k: values[k] for k in keep if k in values}
    out["head_width"] = harness.head_width(config)
    return out


def layer_lists(config: Any) -> dict[str, list]:
    """The config's lists with one entry per layer (layer types, NoPE flags, MLP kinds, ...)."""
    n = getattr(config, "num_hidden_layers", None)
    if not isinstance(n, int) or n < 1:
        return {}
    return {
        k: v
        for k, v in config.to_dict().items()
        if isinstance(v, list) and len(v) == n and k not in harness._DERIVED
    }


def layer_prefix(config: Any) -> dict[str, Any]:
    """The first layers of the released model, enough to hold every value of every list.

    Returns the overrides for ``harness.tiny_config``: ``_layers`` (the count: one past the
    last first occurrence of a value in a list that repeats values, at least 2 unless the
    model has one layer; a list of
    distinct values is a list of layer indices) and each per-layer list cut to it, so that
    the tiny model's layer ``i`` is the released model's layer ``i`` (the config class does
    not rebuild the lists from a pattern that may differ from the released one).
    """
    lists = layer_lists(config)
    if not lists:
        return {}
    last_first = 1
    for values in lists.values():
        if len(set(map(repr, values))) == len(values):  # layer indices (Llama 4's moe_layers)
            continue
        seen: set[str] = set()
        for i, value in enumerate(values):
            if repr(value) not in seen:
                seen.add(repr(value))
                last_first = max(last_first, i)
    n = min(last_first + 1, config.num_hidden_layers)  # a one-layer model keeps its one layer
    return {"_layers": n, **{k: v[:n] for k, v in lists.items()}}


def _prefix(config: Any, key: str, released: list) -> bool:
    got = config.to_dict().get(key)
    return isinstance(got, list) and got == released[: len(got)]


def tiny(resolved: Resolved) -> tuple[Any, type]:
    """The text config with tiny sizes, and the model class to build from it.

    Raises ``CannotBuild`` where the tiny config would change a RoPE value (a sign that the
    shrinking touched one): the comparison would then not be the released RoPE's.
    """
    family = resolved.family
    cls = model_class(family, resolved.text)
    overrides = dict(layer_prefix(resolved.text))
    have = resolved.text.to_dict()
    overrides.update((k, v) for k, v in SIZES.items() if k in have)
    overrides.update(
        (k, v)
        for k, v in special.SPECIAL.get(family, {}).get("overrides", {}).items()
        if k not in ROPE_OVERRIDES
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, config, _, _ = harness.tiny_config(
            type(resolved.text), family, overrides, default=resolved.text
        )
    released, got = rope_values(resolved.text), rope_values(config)
    changed = {k: (released[k], got.get(k)) for k in released if got.get(k) != released[k]}
    per_layer = layer_lists(resolved.text)
    n = config.num_hidden_layers
    changed.update(
        {
            k: (v[:n], config.to_dict().get(k))
            for k, v in per_layer.items()
            if not _prefix(config, k, v)
        }
    )
    if changed:
        raise CannotBuild(f"the tiny config changes RoPE values: {changed}")
    return config, cls
