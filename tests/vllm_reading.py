"""What posenc_ref says of every architecture vLLM serves, from ``architectures`` alone.

vLLM picks a model's implementation from the ``architectures`` of its config and nothing else
(its model registry). :func:`reading` gives posenc_ref the same: a config naming only the
architecture, with a Llama-7B's widths and ``rope_theta`` (no ``model_type``, as MiniCPM3-4B's
released config has none), and records what ``positional_encoding`` answers: the family it
identified, and the encoding it read, or why it refused (the feature it lacks, or the part of the
config the family's code needs). ``tests/test_vllm_architectures.py`` checks every architecture
of the registry's text-generation and multimodal tables; the model zoo page lists them
(``hooks/corpus_table.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FILE = Path(__file__).resolve().parent / "data" / "vllm_architectures.json"

# A Llama-7B's widths (MiniCPM3-4B's released config gives no model_type either).
WIDTHS = {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
          "rope_theta": 10000.0, "max_position_embeddings": 4096}  # fmt: skip

# Words of the readers' refusals for a config whose family they do not know.
UNKNOWN = ("no architectures posenc_ref knows", "neither in posenc_ref's family table")

# Refusals of a wrapper whose language model lives in a sub-config this config does not have.
NEEDS_PART = "which this config does not have"


def registry() -> dict[str, Any]:
    return json.loads(FILE.read_text(encoding="utf-8"))


def reading(architecture: str) -> dict[str, Any]:
    """``{"outcome", "family", "text"}`` for a config that names only ``architecture``.

    ``outcome``: ``"rope"``, another encoding's kind (``"alibi"``, ``"learned"``, ``"nope"``),
    ``"not implemented"`` (a feature posenc_ref lacks, named in ``text``), ``"needs its
    language model's config"`` (a wrapper whose sub-config decides), ``"refused"`` (this
    config's values: ``text`` says which) or ``"unknown"`` (no family identified).
    """
    from posenc_ref.encodings import positional_encoding
    from posenc_ref.models._language import language_of

    config = {"architectures": [architecture], **WIDTHS}
    try:
        family = language_of(config)[1]
    except (ValueError, TypeError):
        family = None
    try:
        encoding = positional_encoding(config)
    except NotImplementedError as error:
        return {"outcome": "not implemented", "family": family, "text": str(error)}
    except (ValueError, TypeError) as error:
        text = str(error)
        if any(words in text for words in UNKNOWN):
            return {"outcome": "unknown", "family": None, "text": text}
        if NEEDS_PART in text:
            return {"outcome": "needs its language model's config", "family": None, "text": text}
        return {"outcome": "refused", "family": family, "text": text}
    if encoding.kind != "rope":
        return {"outcome": encoding.kind, "family": encoding.model_type, "text": ""}
    specs = [spec for spec in encoding.specs.values() if spec is not None]
    spec = specs[0]
    text = f"{spec.layout} pairs, {spec.rotary_dim} of {spec.head_dim} rotated, base {spec.base:g}"
    if len(specs) > 1:
        text += f", {len(specs)} layer types"
    return {"outcome": "rope", "family": spec.model_type, "text": text}
