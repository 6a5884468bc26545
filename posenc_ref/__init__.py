"""posenc_ref: the reference for transformer positional encodings.

Pure functions first, thin ``nn.Module`` wrappers second. Modules:

- ``device``: :func:`select_device`, one policy for cpu / cuda / mps.
- ``absolute``: the sinusoidal table (loop oracle and vectorized), closed forms, baselines.
- ``relative``: T5 relative buckets, ALiBi slopes and biases, Shaw-style clipping, KERPLE, FIRE.
- ``relative_terms``: Transformer-XL's and DeBERTa's relative terms, CoPE.
- ``beyond_rope``: NoPE's position signal, p-RoPE, xPos, FoPE, RoPE-Mixed.
- ``rope``: rotary embeddings, both pair layouts, the loop oracle, the module.
- ``rope_scaling``: context extension as transforms of the frequencies.
- ``plots``: the site's figures (matplotlib, imported only when ``plots`` is).

``import posenc_ref`` imports neither torch nor NumPy: the names below are loaded on first use
(PEP 562's module ``__getattr__``), so ``posenc_ref --version`` and the config reader
(``posenc_ref.models``, ``posenc_ref.encodings``) answer without them, while
``from posenc_ref import apply_rope`` works as before (it imports ``rope`` and torch then).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers and mkdocstrings read; at run time, __getattr__ below
    from .absolute import (
        LearnedPositionalEmbedding,
        SinusoidalPositionalEncoding,
        adjacent_distance,
        binary_encoding,
        inv_freq,
        offset_dot_product,
        relative_rotation,
        sinusoidal,
        sinusoidal_loop,
        wavelengths,
    )
    from .device import available_devices, select_device
    from .relative import (
        FireWeights,
        alibi_bias,
        alibi_slopes,
        fire_bias,
        kerple_log_bias,
        kerple_power_bias,
        relative_positions,
        shaw_relative_index,
        t5_relative_bucket,
    )
    from .rope import (
        RotaryEmbedding,
        apply_rope,
        apply_rope_loop,
        permute_qk_weight,
        rope_cos_sin,
        to_half_layout,
        to_interleaved_layout,
    )
    from .rope_scaling import ScaledFrequencies

# The one place the version is written: pyproject.toml reads it from here at build time
# ([tool.setuptools.dynamic]); CITATION.cff and CHANGELOG.md repeat it, checked by a test.
__version__ = "0.1.0"

__all__ = [
    "FireWeights",
    "LearnedPositionalEmbedding",
    "SinusoidalPositionalEncoding",
    "adjacent_distance",
    "alibi_bias",
    "alibi_slopes",
    "available_devices",
    "binary_encoding",
    "fire_bias",
    "inv_freq",
    "kerple_log_bias",
    "kerple_power_bias",
    "offset_dot_product",
    "relative_positions",
    "relative_rotation",
    "select_device",
    "shaw_relative_index",
    "sinusoidal",
    "sinusoidal_loop",
    "t5_relative_bucket",
    "wavelengths",
    "RotaryEmbedding",
    "ScaledFrequencies",
    "apply_rope",
    "apply_rope_loop",
    "permute_qk_weight",
    "rope_cos_sin",
    "to_half_layout",
    "to_interleaved_layout",
]


# Where each name of __all__ is defined (the imports above, for the run time): a test checks that
# the two agree.
_SOURCES = {
    **dict.fromkeys(
        ["LearnedPositionalEmbedding", "SinusoidalPositionalEncoding", "adjacent_distance",
         "binary_encoding", "inv_freq", "offset_dot_product", "relative_rotation", "sinusoidal",
         "sinusoidal_loop", "wavelengths"],
        "absolute",
    ),
    **dict.fromkeys(["available_devices", "select_device"], "device"),
    **dict.fromkeys(
        ["FireWeights", "alibi_bias", "alibi_slopes", "fire_bias", "kerple_log_bias",
         "kerple_power_bias", "relative_positions", "shaw_relative_index", "t5_relative_bucket"],
        "relative",
    ),
    **dict.fromkeys(
        ["RotaryEmbedding", "apply_rope", "apply_rope_loop", "permute_qk_weight", "rope_cos_sin",
         "to_half_layout", "to_interleaved_layout"],
        "rope",
    ),
    "ScaledFrequencies": "rope_scaling",
}  # fmt: skip


def __getattr__(name: str) -> object:
    """A name of ``__all__``, or a submodule, imported on first use (PEP 562)."""
    if name in _SOURCES:
        value = getattr(importlib.import_module(f".{_SOURCES[name]}", __name__), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f".{name}", __name__)  # posenc_ref.rope_scaling, ...
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # once: the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
