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

The reader is one function and two tables:

- :data:`ROPE_TYPES` (``rope_types.py``): one entry per HF ``rope_type``, saying which keys it
  reads and which :mod:`posenc_ref.rope_scaling` transform it is;
- :data:`FAMILIES` (``families.py``, the rows with an exception in ``exceptions.py``): one row
  per family of transformers, keyed by the language model's ``model_type``, with what its code
  decides and its config does not say (pair layout,
  where the rotary width comes from, the config class's defaults, layers without RoPE, a query
  scaling). Families whose model uses no RoPE are listed in :data:`NO_ROPE` and raise
  :class:`NoRopeError`; families whose RoPE needs a feature posenc_ref does not implement are
  listed in :data:`NOT_IMPLEMENTED` with that feature and raise ``NotImplementedError``.

Nothing is ignored silently. A key inside the RoPE dict that the ``rope_type`` does not read, a
key another family's code reads, two places that give different values for the same quantity, or
widths that do not fit raise a ``ValueError`` naming the key; a RoPE key that posenc_ref knows but
does not implement raises ``NotImplementedError`` saying so. Keys unrelated to RoPE (vocabulary
size, layer count, ...) are not looked at.

The released configs of the families on the site's model zoo ship with the package
(:func:`released_configs`). Explained on the site: [Model zoo](models.md).
"""

from ..query_scale import QueryScale
from .families import FAMILIES, NO_ROPE, NOT_IMPLEMENTED
from .family import Family
from .reader import NoRopeError, layer_specs, rope_spec
from .released import released_config, released_configs, zoo_rows
from .rope_types import ROPE_TYPES, RopeType
from .spec import RopeSpec

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
]
