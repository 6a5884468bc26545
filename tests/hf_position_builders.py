"""transformers' own M-RoPE position builders (``get_rope_index``) as the kit calls builders.

Each family's model is built from its config classes with tiny sizes and random weights (nothing
is downloaded); ``get_rope_index`` reads only the vision config's ``spatial_merge_size`` and
``tokens_per_second``, which are set per sequence.
"""

from __future__ import annotations

import functools
import importlib

import torch

from posenc_ref.mrope_positions import MultimodalSequence

# family -> (config class, model class, module)
CLASSES = {
    "qwen2_vl": ("Qwen2VLConfig", "Qwen2VLModel", "qwen2_vl.modeling_qwen2_vl"),
    "qwen2_5_vl": ("Qwen2_5_VLConfig", "Qwen2_5_VLModel", "qwen2_5_vl.modeling_qwen2_5_vl"),
    "qwen3_vl": ("Qwen3VLConfig", "Qwen3VLModel", "qwen3_vl.modeling_qwen3_vl"),
    "glm4v": ("Glm4vConfig", "Glm4vModel", "glm4v.modeling_glm4v"),
}


@functools.cache
def hf_model(family: str):
    """A tiny model of ``family`` (one layer, width 32), for its ``get_rope_index``."""
    import transformers

    config_name, model_name, module = CLASSES[family]
    text = {
        "hidden_size": 32, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 64, "head_dim": 16,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                            "mrope_section": [2, 3, 3]},
    }  # fmt: skip
    vision = {"depth": 1, "hidden_size": 16, "out_hidden_size": 32, "intermediate_size": 16,
              "num_heads": 2, "spatial_merge_size": 2}  # fmt: skip
    config = getattr(transformers, config_name)(text_config=text, vision_config=vision)
    model_class = getattr(importlib.import_module(f"transformers.models.{module}"), model_name)
    return model_class(config).eval()


def hf_builder(family: str):
    """``builder(sequence) -> (3, seq_len)``: transformers' ``get_rope_index`` for ``family``."""

    def builder(sequence: MultimodalSequence) -> torch.Tensor:
        model = hf_model(family)
        vision = model.config.vision_config
        vision.spatial_merge_size = sequence.spatial_merge_size
        if family == "qwen2_5_vl":  # an int in its config class
            vision.tokens_per_second = int(sequence.tokens_per_second)
        types = sequence.token_types[None]
        kwargs = {
            "image_grid_thw": sequence.image_grids if len(sequence.image_grids) else None,
            "video_grid_thw": sequence.video_grids.clone() if len(sequence.video_grids) else None,
        }
        if family == "qwen2_5_vl" and len(sequence.video_grids):
            kwargs["second_per_grid_ts"] = sequence.second_per_grid.float()
        positions, _ = model.get_rope_index(torch.zeros_like(types), types, **kwargs)
        return positions[:, 0]

    return builder
