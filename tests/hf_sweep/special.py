"""What the sweep does differently for a family, and why (everything else is generic).

Each entry may set ``model_class`` (which text model of the family to run, where the rule in
``families.py`` picks another holder of the rotary class) and ``overrides`` (config arguments
on top of the tiny sizes, and the directives ``_width`` / ``_layers`` of
``harness.tiny_config``). ``why`` says what in the family's code needs it. Most entries exist
because the family's config class, left at its defaults, cannot build or run its own model
(the released configs set what the defaults leave out); the value given is the released one
where a RoPE quantity is concerned.
"""

from __future__ import annotations

from typing import Any

import torch

NORM_AFTER = (
    "the code normalizes q and k right after the rotation, which divides out an attention "
    "factor on cos and sin (YaRN's 1.139 at s = 4) exactly only without the norm's eps: on the "
    "tiny model's small states (mean square about 1e-3) eps = 1e-5 leaves a relative 6e-4 of "
    "it, so the sweep sets eps to 1e-30 to see the rotation itself (real states are large "
    "against eps; models.md says the factor cancels up to eps)"
)


MAMBA_CHUNKS = (
    "the Mamba-2 scan pads the sequence to its chunk (256 by default, 16 here: the same "
    "recurrence, in smaller blocks; the Mamba layers have no RoPE)"
)


def learned_alpha(buffer: torch.Tensor) -> torch.Tensor:
    """Mistral Large 4's LeRoPE alpha as a checkpoint would hold it: random, seeded."""
    generator = torch.Generator().manual_seed(4)
    return torch.randn(buffer.shape, generator=generator, dtype=torch.float32) * 0.5


SPECIAL: dict[str, dict[str, Any]] = {
    "mistral_large4": {
        "weights": {"rotary_emb.alpha": learned_alpha},
        "reader": lambda weights: {"lerope_alpha": weights["rotary_emb.alpha"]},
        "why": "the rotary module multiplies its frequencies by exp(alpha), a learned buffer "
        "the checkpoint holds (zero, i.e. no effect, until loaded): the sweep loads random "
        "values into it and hands posenc_ref the same values as lerope_alpha",
    },
    "bamba": {
        "overrides": {
            "mamba_n_heads": 8,
            "mamba_d_head": 64,
            "attn_layer_indices": [1],
            "mamba_chunk_size": 16,
        },
        "why": "Mamba heads must tile the (tiny) hidden size; the attention layers are listed by "
        "index (attn_layer_indices), so one is put inside the tiny model; " + MAMBA_CHUNKS,
    },
    "granitemoehybrid": {
        "overrides": {
            "mamba_n_heads": 8,
            "mamba_d_head": 64,
            "layer_types": ["mamba", "attention"],
            "position_embedding_type": "rope",
            "mamba_chunk_size": 16,
        },
        "why": "Mamba heads must tile the (tiny) hidden size; the default layer_types has no "
        "attention layer (every layer is Mamba), so the tiny model gets one; the default "
        "position_embedding_type (None) means no RoPE at all, 'rope' switches the rotary "
        "path on; " + MAMBA_CHUNKS,
    },
    "chameleon": {
        "overrides": {"vocabulary_map": {"<image>": 3}},
        "why": "the model reads the image token from config.vocabulary_map, which the default "
        "config leaves empty",
    },
    "cohere_compass": {
        "overrides": {
            "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 10000.0}}
        },
        "why": "the default config has no rope_parameters at all, and the rotary module reads "
        "one dict per layer type",
    },
    "dbrx": {
        "overrides": {
            "attn_config": {"kv_n_heads": 1, "rope_theta": 10000.0, "clip_qkv": 8.0},
            "ffn_config": {"ffn_hidden_size": 32, "moe_num_experts": 4, "moe_top_k": 2},
        },
        "why": "the attention reads attn_config.rope_theta and clamps with attn_config.clip_qkv, "
        "which DbrxAttentionConfig leaves undefined or None: the base given is the config's "
        "rope_theta (10000, what the rotary module uses), the clamp the released 8; the "
        "experts live in ffn_config",
    },
    "diffusion_gemma": {
        "overrides": {"num_experts": 4, "top_k_experts": 2, "moe_intermediate_size": 16},
        "why": "the default config builds a mixture-of-experts block with num_experts unset",
    },
    "glm4v": {
        "overrides": {
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.5,
                "mrope_section": [8, 12, 12],
            }
        },
        "why": "the code's default mrope_section [8, 12, 12] covers 32 pairs, half of a 128-wide "
        "head: released GLM-4.1V configs give partial_rotary_factor 0.5, the default config "
        "does not",
    },
    "glm_image": {
        "overrides": {
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "partial_rotary_factor": 0.5,
                "mrope_section": [8, 12, 12],
            }
        },
        "why": "as GLM-4V: the default mrope_section needs partial_rotary_factor 0.5",
    },
    "glm4v_moe": {
        "overrides": {"_width": 128},
        "why": "hidden_size / num_attention_heads = 4096 / 96 is not a head width the code's "
        "default mrope_section [8, 12, 12] fits; released GLM-4.5V configs give head_dim 128",
    },
    "kyutai_speech_to_text": {
        "overrides": {"vocab_size": 4001},
        "inputs": "codebooks",
        "why": "audio_pad_token_id (69569) is the last row of an embedding sized from "
        "vocab_size: the vocabulary keeps its default size; input_ids carry the text stream "
        "and one stream per audio codebook",
    },
    "idefics": {
        "inputs": "image_embeddings",
        "overrides": {"vision_config": {"num_hidden_layers": 1, "intermediate_size": 32}},
        "why": "the model needs exactly one image input; its gated cross-attention (no RoPE) is "
        "left out of the record; the image input is given as encoder embeddings, so the vision "
        "encoder the model builds never runs: one small layer of it",
    },
    "dots3_note": {
        "overrides": {
            "swa_num_attention_heads": 2,
            "swa_num_key_value_heads": 2,
            "swa_q_lora_rank": 16,
            "swa_kv_lora_rank": 16,
        },
        "why": "the sliding-window layers take their sizes from swa_* arguments (64 heads, "
        "low-rank projections of 1024), not from the sizes the sweep shrinks: the same tiny "
        "sizes there (their widths, which decide the rotary part, are kept)",
    },
    "lfm2_moe": {
        "overrides": {"layer_types": ["conv", "full_attention"]},
        "why": "the default config has no layer_types, which the model indexes per layer",
    },
    "moshi": {
        "model_class": "MoshiModel",
        "why": "the rotary module is held by MoshiAttention, used by the depth decoder and by "
        "the main text/audio transformer (MoshiModel): the main one is run",
    },
    "longcat_flash": {
        "overrides": {"_layers": ("num_layers", 1)},
        "why": "the layer count is num_layers (each holds two attention blocks)",
    },
    "moonshine_streaming": {
        "overrides": {"num_key_value_heads": 2},
        "inputs": "encoder_states",
        "why": "the decoder reads config.num_key_value_heads, which the config class does not "
        "define",
    },
    "pocket_tts": {
        "overrides": {"flow_head_config": lambda kw: {"condition_dim": kw["hidden_size"]}},
        "why": "the flow head's condition_dim must equal the backbone's hidden size",
    },
    "gradium_phonon_tts": {
        "overrides": {"flow_head_config": lambda kw: {"condition_dim": kw["hidden_size"]}},
        "why": "the flow head's condition_dim must equal the backbone's hidden size",
    },
    "qwen3_omni_moe": {
        "overrides": {"_width": 128},
        "why": "hidden_size / num_attention_heads of the default thinker text config (73) is "
        "not a width its rotary table fits (74); released Qwen3-Omni configs give head_dim 128",
    },
    "qwen4_exp": {
        "overrides": {
            "indexer_budget": 64,
            "indexer_compress_ratio": 4,
            "indexer_n_heads": 2,
            "indexer_kv_heads": 1,
            "indexer_head_dim": lambda kw: kw["head_dim"],
        },
        "why": "the sparse-attention indexer's sizes are unset in the default config (the "
        "indexer selects keys; the attention's RoPE is what is compared)",
    },
    "step3p7": {
        "overrides": {"sliding_window": 512},
        "why": "the default layer_types include sliding-window layers but sliding_window is unset",
    },
    "t5gemma": {
        "config_class": "T5GemmaModuleConfig",
        "why": "the encoder is built from the encoder's module config, not the top-level one",
    },
    "t5gemma2": {
        "overrides": {"dropout_rate": 0.0},
        "why": "the encoder reads dropout_rate, which the text config class does not define",
    },
    "muse_glimmer_assistant": {
        "inputs": "drafter",
        "why": "the drafter takes noise embeddings and the target model's hidden states instead "
        "of token ids; with no context tokens its queries and keys are the same positions",
    },
    "hunyuan_vl": {
        "overrides": {
            "rope_parameters": {
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": [16, 16, 16, 16],
            }
        },
        "why": "the rotary module needs an mrope_section (one entry per position axis; it splits "
        "the doubled cos/sin table by twice each entry), which the default config leaves out: "
        "four axes of 16 pairs are a test value",
    },
    "zaya": {
        "overrides": {"num_experts_per_tok": 1},
        "why": "the config class accepts only one expert per token",
    },
    "zamba2": {
        "overrides": {
            "_derived": [
                "attention_hidden_size",
                "attention_head_dim",
                "mamba_headdim",
                "kv_channels",
                "num_query_groups",
            ],
            "use_mem_rope": True,
            "chunk_size": 16,
        },
        "why": "the config stores widths it derives from hidden_size (the shared attention "
        "works on twice the hidden size): they are derived again for the tiny size; the "
        "default use_mem_rope=False means no RoPE at all, True switches the rotary path on; "
        + MAMBA_CHUNKS,
    },
    "voxtral_realtime": {
        "inputs": "time_condition",
        "why": "each decoder layer scales its norm by a time conditioning (t_cond)",
    },
    "deepseek_ocr2": {
        "overrides": {"mlp_layer_types": ["dense", "sparse"], "num_experts_per_tok": 2},
        "why": "the default config has no mlp_layer_types, which the model indexes per layer, "
        "and no num_experts_per_tok for its sparse layers",
    },
    "dia": {
        "inject_positions": True,
        "why": "the encoder makes its own positions 0, 1, 2, ... and takes no position_ids: the "
        "sweep's positions are handed to its rotary module instead",
    },
    "blt": {
        "inputs": "one_patch",
        "why": "the byte-level local encoder pools its bytes into patches (one patch here); its "
        "cross-attention to the patches is left out of the record",
    },
    "hrm_text": {
        "overrides": {"num_layers_per_stack": 2},
        "why": "each forward runs its two stacks H_cycles x (L_cycles + 1) = 8 times, and its "
        "config class keeps the default 16 layers per stack (num_hidden_layers becomes the "
        "count of attention slots, 128): two layers per stack give 16 attention calls per "
        "forward, each the same layer code at the same width as the 128 (they differ only in "
        "their random weights and slot index), at an eighth of the cost",
    },
    "llama4": {
        "identity_attrs": {"attn_temperature_tuning": False},
        "no_masks": True,
        "overrides": {"rms_norm_eps": 1e-30},
        "long_positions": 8200,
        "scale_by_index": True,
        "why": "the layers without RoPE scale the query by a factor of the token index "
        "(attention-temperature tuning, from arange, not from position_ids): the identity run "
        "switches it off so that it shows, and a contiguous run of 8200 tokens reaches past "
        "floor_scale (8192), where the factor leaves 1; the factor is compared at the token's "
        "index in the call, which the code counts (arange plus the cache length); its "
        "attention masks (8200 x 8200, full and chunked) are given as None: they only say which "
        "keys a query sees, and the capture returns zeros whatever they say; " + NORM_AFTER,
    },
    "deepseek_v4": {
        "long_positions": 260,
        "why": "its compressors summarise blocks of the call's tokens (4 for CSA, 128 for HCA), "
        "counted from 0 whatever position_ids say, and rotate each summary at its block's first "
        "token: a contiguous run of 260 tokens gives 65 CSA and 2 HCA compressed keys, compared "
        "at their blocks' positions beside the tokens' keys",
    },
    "recurrent_gemma": {
        "overrides": {"_layers": 3},
        "why": "block_types repeats (recurrent, recurrent, attention): the third layer is the "
        "first with attention",
    },
    "bailing_hybrid": {
        "overrides": {"layer_group_size": 2},
        "why": "each group of layer_group_size layers ends with one MLA attention layer after "
        "linear-attention ones; groups of two keep one of each (the linear attention, slow on "
        "the CPU and without RoPE, once)",
    },
    "falcon_h1": {
        "overrides": {
            "mamba_d_ssm": 64,
            "mamba_n_heads": 8,
            "mamba_d_head": 8,
            "mamba_d_state": 16,
            "mamba_chunk_size": 16,
        },
        "why": "every layer runs a Mamba-2 mixer beside attention: its widths are shrunk too",
    },
    "gemma3n": {
        "overrides": {"num_kv_shared_layers": 0},
        "why": "KV sharing needs as many layers of each type before the shared ones (the shared "
        "layers reuse keys rotated the same way)",
    },
    "phi4_multimodal": {
        "overrides": {
            "vision_config": {"num_hidden_layers": 1},
            "audio_config": {"num_blocks": 1},
        },
        "why": "the text model holds the image and audio encoders: one layer each",
    },
    "esm": {
        "overrides": {"position_embedding_type": "rotary"},
        "why": "the default config uses learned absolute positions (position_embedding_type "
        "'absolute'); the released ESM-2 configs use 'rotary', the path with the rotary class",
    },
    "glm4_moe": {
        "overrides": {"_width": 128},
        "why": "hidden_size / num_attention_heads = 4096 / 96 (42) with partial_rotary_factor "
        "0.5 gives an odd rotary width (21), which the YaRN path of the code cannot run; "
        "released GLM-4.5 configs give head_dim 128",
    },
    "hunyuan_v1_dense": {"overrides": {"rms_norm_eps": 1e-30}, "why": NORM_AFTER},
    "hunyuan_v1_moe": {"overrides": {"rms_norm_eps": 1e-30}, "why": NORM_AFTER},
    "csm": {
        "model_class": "CsmBackboneModel",
        "inputs": "audio_codebooks",
        "why": "the depth decoder ignores position_ids (it numbers its codebooks itself): the "
        "backbone, which reads them, is run, on one token per audio codebook",
    },
}
