"""Read transformers' config classes into ``posenc_ref/models/class_data.json``.

The RoPE reader fills a key a config leaves out with its config class's default, applies the
class's own rewrites, and finds a wrapper's language model where its class keeps it; it reads
all of that from the committed data file, so that its answer does not depend on whether
transformers is installed. This module writes the file from the installed transformers, by
instantiating each class, never by copying a value by hand:

- ``defaults``: the value of each key the reader reads (widths, counts, lengths, the family's
  own keys, the default RoPE dict) in the class's default instance, where that value is a
  constant: a key whose value moves when the widths, the layer count or the context move is a
  rule of the class (``derived``), not a default, and is left to the reader's rules;
- ``overwritten``: a key the class sets whatever the config gives, and the rule it follows, found
  by giving it a value and seeing what the class keeps (``PixtralVisionConfig`` sets
  ``head_dim = hidden_size // num_attention_heads``);
- ``attribute_map``: the class's other names for standard keys;
- ``text``: for a class that holds its language model in a sub-config, where
  (``get_text_config()``'s attribute path), the ``model_type`` it builds there by default, and
  whether the class builds that sub-config from the top-level keys when the file has none
  (``flat``; otherwise from the sub-config class's defaults).

``python -m tests.class_data --write`` rewrites the file; ``tests/test_class_data.py`` checks the
committed file against the installed transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

FILE = Path(__file__).resolve().parents[1] / "posenc_ref" / "models" / "class_data.json"

# Keys every RoPE family's reader reads (the family keys come from the family table).
STANDARD = (
    "hidden_size",
    "num_attention_heads",
    "head_dim",
    "num_hidden_layers",
    "max_position_embeddings",
    "partial_rotary_factor",
    "rope_parameters",
)

# The probe's widths: distinct from every class default seen, and consistent (512 / 8 = 64).
PROBE = {"hidden_size": 520, "num_attention_heads": 8, "num_hidden_layers": 3,
         "max_position_embeddings": 1234}  # fmt: skip

# An integer the probe gives a key to see whether the class keeps it.
ODD_VALUE = 24

# The rules a class may follow when it overwrites a key (checked against the probe's values).
RULES = {
    "hidden_size // num_attention_heads": lambda c: c["hidden_size"] // c["num_attention_heads"],
}


def relevant_keys() -> tuple[str, ...]:
    """The standard keys and every key some family's row reads (with its other names)."""
    from posenc_ref.models import FAMILIES
    from posenc_ref.models.families import keys_read_by
    from posenc_ref.models.traits import Aliases, Defaults, LayerHeadDims

    keys = dict.fromkeys(STANDARD)
    keys.update(dict.fromkeys(keys_read_by()))
    for row in FAMILIES.values():
        for trait in row.traits:
            if isinstance(trait, Aliases):
                keys.update(dict.fromkeys(trait.names.values()))
            elif isinstance(trait, Defaults):
                keys.update(dict.fromkeys(trait.values))
            elif isinstance(trait, LayerHeadDims):
                keys.update(dict.fromkeys(key for key, _ in trait.widths.values()))
    return tuple(k for k in keys if "." not in k)


def quiet():
    """transformers, imported with its warnings off (the probe gives odd values on purpose)."""
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


def build(cls: type, **kwargs: Any):
    """An instance, or None where the class refuses the values."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return cls(**kwargs)
        except Exception:  # noqa: BLE001 (a refusal of the probe's values is an answer)
            return None


def jsonable(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def text_part(config: Any) -> tuple[str, list[str], Any] | None:
    """``(attribute path, model_type at each level, sub-config)`` of the language model."""
    try:
        text = config.get_text_config(decoder=True)
    except Exception:  # noqa: BLE001 (an ambiguous composite: no single language model)
        return None
    if text is config:
        return None
    for name, value in vars(config).items():
        if value is text:
            return name, [text.model_type], text
    for name, value in vars(config).items():
        for inner, sub in vars(value).items() if hasattr(value, "to_dict") else ():
            if sub is text:
                return f"{name}.{inner}", [value.model_type, text.model_type], text
    return None


def wrapper_entry(cls: type, default: Any) -> dict[str, Any] | None:
    """Where the class keeps its language model, its default types, and whether it is flat."""
    found = text_part(default)
    if found is None:
        return None
    path, types, _ = found
    probe = build(cls, num_hidden_layers=PROBE["num_hidden_layers"])
    flat = None
    if probe is not None:
        part = text_part(probe)
        flat = part is not None and getattr(part[2], "num_hidden_layers", None) == 3
    return {"path": path, "model_type": types[-1], "types": types, "flat": flat}


def values_of(config: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    values = config.to_dict()
    return {k: values[k] for k in keys if k in values and jsonable(values[k])}


def probe_values(cls: type, base: dict[str, Any], leave: str | None = None) -> dict[str, Any]:
    """The probe's widths, under the names the class takes (never one that stands for ``leave``)."""
    names = dict(getattr(cls, "attribute_map", {}) or {})
    out = {}
    for key, value in PROBE.items():
        own = names.get(key, key)
        if own in base and own != leave:
            out[key] = value
    return out


def class_entry(cls: type, default: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    """Defaults, derived keys, overwritten keys and the attribute map of one class."""
    base = values_of(default, keys)
    names = dict(getattr(cls, "attribute_map", {}) or {})
    probed = set(probe_values(cls, base)) | {names.get(k, k) for k in probe_values(cls, base)}
    moved: set[str] = set()
    for name, value in probe_values(cls, base).items():  # one probe per key: which others follow
        probe = build(cls, **{name: value})
        if probe is None:
            continue
        got = values_of(probe, keys)
        own = names.get(name, name)
        moved.update(k for k in base if k not in (name, own) and got.get(k) != base[k])
    overwritten = {}
    for key, value in base.items():
        if isinstance(value, bool) or not isinstance(value, int) or key in probed:
            continue
        widths = probe_values(cls, base, leave=key)
        probe = build(cls, **{**widths, key: ODD_VALUE})
        if probe is None:
            continue
        kept = probe.to_dict().get(key)
        if kept != ODD_VALUE:
            overwritten[key] = rule_of(cls, base, widths, key, probe)
    defaults = {k: v for k, v in base.items() if k not in moved and k not in overwritten}
    out: dict[str, Any] = {"defaults": defaults}
    if moved - set(overwritten):
        out["derived"] = sorted(moved - set(overwritten))
    if overwritten:
        out["overwritten"] = overwritten
    if names:
        out["attribute_map"] = names
    return out


def rule_of(cls: type, base: dict, widths: dict, key: str, probe: Any) -> str:
    """The rule the class follows for an overwritten ``key``, confirmed by a second probe."""
    kept = probe.to_dict()[key]
    for formula, rule in RULES.items():
        if not _applies(rule, probe, kept):
            continue
        again = build(cls, **{**widths, "hidden_size": 2 * PROBE["hidden_size"], key: ODD_VALUE})
        if again is not None and _applies(rule, again, again.to_dict()[key]):
            return formula
    for other, value in probe.to_dict().items():  # a copy of another key of the class
        if other == key or other not in base or value != kept or isinstance(value, bool):
            continue
        again = build(cls, **{**widths, other: ODD_VALUE + 16, key: ODD_VALUE})
        if again is not None and again.to_dict().get(key) == ODD_VALUE + 16:
            return other
    return f"always {kept!r}"


def _applies(rule, probe: Any, kept: Any) -> bool:
    try:
        return rule(probe.to_dict()) == kept
    except (KeyError, TypeError, ZeroDivisionError):
        return False


# transformers' auto mappings of the classes a config's ``architectures`` names
ARCHITECTURE_MAPPINGS = (
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
    "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES",
    "MODEL_MAPPING_NAMES",
)


def architectures(readable: set[str]) -> dict[str, str]:
    """Class name -> the ``model_type`` of its config, for the classes of ``readable`` types.

    A class listed under several types (``LlamaForCausalLM``: llama, internlm3, iquestcoder) is
    the type whose config class shares the longest prefix with its name (``LlamaConfig``).
    """
    import transformers.models.auto.modeling_auto as auto
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    found: dict[str, set[str]] = {}
    for mapping in ARCHITECTURE_MAPPINGS:
        for model_type, names in getattr(auto, mapping, {}).items():
            for name in names if isinstance(names, (list, tuple)) else (names,):
                if model_type in readable:
                    found.setdefault(name, set()).add(model_type)

    def shared(name: str, model_type: str) -> tuple[int, str]:
        config = CONFIG_MAPPING_NAMES.get(model_type, "")
        pairs = enumerate(zip(name, config, strict=False))
        n = next((i for i, (a, b) in pairs if a != b), len(config))
        return (-n, model_type)

    return {
        name: min(types, key=lambda t: shared(name, t)) for name, types in sorted(found.items())
    }


def generate(model_types: list[str] | None = None) -> dict[str, Any]:
    """The data file's contents, for ``model_types`` (default: every type transformers defines)."""
    transformers = quiet()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES

    from posenc_ref.models import FAMILIES

    keys = relevant_keys()
    names = sorted(CONFIG_MAPPING_NAMES) if model_types is None else sorted(model_types)
    wrappers, refused = {}, {}
    defaults: dict[str, Any] = {}
    for name in names:
        cls = CONFIG_MAPPING[name]
        default = build(cls)
        if default is None:
            refused[name] = "the class refuses its own defaults"
            continue
        entry = wrapper_entry(cls, default)
        if entry is not None:
            wrappers[name] = entry
        if name in FAMILIES or entry is None:
            defaults[name] = default
    readable = set(FAMILIES) | {w["model_type"] for w in wrappers.values()}
    classes = {}
    for name, default in defaults.items():
        if name in readable:
            classes[name] = class_entry(CONFIG_MAPPING[name], default, keys)
    return {
        "about": "Generated by python -m tests.class_data --write from transformers' config "
        "classes (defaults, rewrites, where a wrapper keeps its language model); checked by "
        "tests/test_class_data.py. Do not edit by hand.",
        "transformers": transformers.__version__,
        "model_types": sorted(CONFIG_MAPPING_NAMES) if model_types is None else None,
        "keys": list(keys),
        "classes": dict(sorted(classes.items())),
        "wrappers": dict(sorted(wrappers.items())),
        "architectures": architectures(set(classes) | set(wrappers)),
        "refused": refused,
    }


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.class_data")
    parser.add_argument("--write", action="store_true", help="rewrite the committed file")
    args = parser.parse_args(argv)
    data = generate()
    if args.write:
        FILE.write_text(dumps(data), encoding="utf-8")
    print(
        f"{len(data['classes'])} classes, {len(data['wrappers'])} wrappers, "
        f"{len(data['refused'])} refused",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
