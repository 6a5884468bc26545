r"""RoPE as released models use it: read a model's config, get its frequencies, widths and layout.

:func:`rope_spec` turns the contents of a model's ``config.json`` (a dict, or a transformers config
object when transformers is installed) into a :class:`RopeSpec`: head and rotary width, pair
layout, base, HF's ``rope_type``, the per-pair frequencies and the attention factor, the original
and extended context, the M-RoPE sections, and what the model does around the rotation (layers
without RoPE, a query scaling, MLA's split head). ``RotaryEmbedding.from_hf_config`` builds the
rotation module from the same spec. Both config forms in circulation are read:

- transformers >= 5: ``rope_parameters`` (``rope_type``, ``rope_theta``, ``factor``, ...), possibly
  one dict per layer type (Gemma 3: ``sliding_attention`` and ``full_attention``);
- older configs: ``rope_theta`` at the top level and ``rope_scaling`` with ``type`` or
  ``rope_type``, plus family-specific names (GPT-NeoX ``rotary_pct`` and ``rotary_emb_base``,
  Gemma 3 ``rope_local_base_freq``, Phi-3 ``"su"``, Qwen2-VL ``"mrope"``).

The reader is a few named steps (:mod:`posenc_ref.models.read_rope`) over two tables:

- :data:`ROPE_TYPES` (``rope_types.py``): one entry per HF ``rope_type``, saying which keys it
  reads and which :mod:`posenc_ref.rope_scaling` transform it is;
- :data:`FAMILIES` (``families/``): one :class:`Family` row per family of transformers, RoPE or
  not, keyed by the language model's ``model_type``: its pair layout, base, widths and
  encoding, and its exceptions to the conventions as traits (:mod:`posenc_ref.models.traits`:
  MLA, M-RoPE, layers without RoPE, a query scaling, a norm after the rotation, legacy keys, a
  fixed base, RoPE switched by a config key, ...). A family whose model uses no RoPE raises
  :class:`NoRopeError` (:data:`NO_ROPE` lists them); one whose RoPE needs a feature posenc_ref
  does not implement raises ``NotImplementedError`` (:data:`NOT_IMPLEMENTED`).

Nothing is ignored silently. A key inside the RoPE dict that the ``rope_type`` does not read, a
key another family's code reads, two places that give different values for the same quantity, or
widths that do not fit raise a ``ValueError`` naming the key; a RoPE key that posenc_ref knows but
does not implement raises ``NotImplementedError`` saying so. Keys unrelated to RoPE (vocabulary
size, layer count, ...) are not looked at.

Vision towers rotate a patch grid by axial (2-D) RoPE: :func:`axial_spec` reads a vision config,
or a vision-language config's ``vision_config``, into an :class:`AxialSpec` for
:mod:`posenc_ref.axial` (:data:`VISION` lists the vision families it reads).

The released configs of the families on the site's model zoo ship with the package
(:func:`released_configs`). Explained on the site: [Model zoo](models.md).
"""

from ..query_scale import QueryScale
from .families import FAMILIES, NO_ROPE, NOT_IMPLEMENTED
from .family import Family
from .read_rope import layer_specs, rope_spec
from .released import released_config, released_configs, zoo_rows
from .rope_types import ROPE_TYPES, RopeType
from .sparse import (
    CompressedKeys,
    compressed_key_positions,
    rotate_back,
    rotate_compressed_keys,
    visible_blocks,
)
from .spec import NoRopeError, RopeSpec
from .vision import VISION, AxialSpec, axial_spec

__all__ = [
    "RopeSpec",
    "QueryScale",
    "rope_spec",
    "layer_specs",
    "NoRopeError",
    "FAMILIES",
    "NO_ROPE",
    "NOT_IMPLEMENTED",
    "Family",
    "ROPE_TYPES",
    "RopeType",
    "released_configs",
    "released_config",
    "zoo_rows",
    "CompressedKeys",
    "compressed_key_positions",
    "visible_blocks",
    "rotate_compressed_keys",
    "rotate_back",
    "axial_spec",
    "AxialSpec",
    "VISION",
]
