r"""Families that run remote code (a ``modeling_*.py`` shipped beside the checkpoint): rows.

transformers knows neither their ``model_type`` nor their ``architectures``; serving engines map
the architecture name to an implementation (vLLM's model registry). Each row states what the
family's public modeling code does (the layout, the widths, the base, which layers rotate) and
cites the repository and file it was read from; tests/test_remote_families.py proves each with a
rotation written from those facts. :data:`ARCHITECTURES` resolves a config whose ``model_type``
is in neither table from its ``architectures`` (then ``auto_map``'s class names), as vLLM does.
"""

from __future__ import annotations

from .. import _rules as rules
from ..family import Family
from ..traits import (
    Aliases,
    AlibiBias,
    BaseRatio,
    FixedBase,
    NeedsFeature,
    RopeLayers,
    RopeNotImplemented,
    SwitchedBy,
)

__all__ = ["REMOTE", "ARCHITECTURES"]

CHATGLM_2D = (
    "GLM's 2-D positions (ChatGLM-6B, position_encoding_2d): each head's two halves are rotated "
    "by two position rows (the token's position, with every generated token at the mask "
    "token's; and its position inside the generated block), each half with the whole 32-pair "
    "frequency set (THUDM/chatglm-6b modeling_chatglm.py, SelfAttention.forward)"
)
TELECHAT_NTK = (
    "TeleChat's per-call NTK-alpha: the base is 10000 * alpha ** (d / (d - 2)) with alpha = "
    "max(2 ** ceil(log2(L / 4096) + 1) - 1, 1) and L = max(the call's length, training_seqlen), "
    "and cos and sin are multiplied by 0.1 ln(L / training_seqlen) + 1 where that exceeds 1 "
    "(Tele-AI/Telechat models/7B/modeling_telechat.py, RotaryEmbedding)"
)

REMOTE: dict[str, Family] = {
    "mimo": Family(
        source="vllm-project/vllm vllm/model_executor/models/mimo.py: MiMoForCausalLM is Qwen2's "
        "model (rotate_half on the whole head, rope_theta) with next-token-prediction layers "
        "outside the main stack",
    ),
    "RefinedWebModel": Family(
        instead="ALiBi attention biases",
        traits=(
            Aliases({"num_attention_heads": "n_head", "num_hidden_layers": "n_layer"}),
            FixedBase(10000.0),
            SwitchedBy("alibi", {False: "rope", True: "alibi"}, False, refused_elsewhere=False),
            # Attention.forward: (scores + alibi) * inv_norm_factor, as transformers' Falcon
            AlibiBias(("num_attention_heads", 71), width=("hidden_size", 4544)),
        ),
        source="tiiuae/falcon-7b modelling_RW.py: RotaryEmbedding with base 10000 in the code, "
        "rotate_half on the whole head (hidden_size / n_head), positions from the cache length; "
        "ALiBi instead where alibi is true",
    ),
    "nemotron-nas": Family(
        traits=(RopeLayers(rules.decilm_attention_layers, frozenset({"block_configs"})),),
        source="vllm-project/vllm vllm/model_executor/models/nemotron_nas.py (mirrors "
        "nvidia's modeling_decilm.py): Llama's attention and RoPE (rotate_half, rope_scaling) in "
        "every layer whose block_configs[i].attention is not no_op or replace_with_linear",
    ),
    "chatglm": Family(
        layout="interleaved",
        partial=0.5,
        traits=(
            Aliases(
                {
                    "head_dim": "kv_channels",
                    "num_hidden_layers": "num_layers",
                    "max_position_embeddings": "seq_length",
                }
            ),
            FixedBase(10000.0),
            BaseRatio("rope_ratio", rules.chatglm_rope_ratio),
            NeedsFeature("position_encoding_2d", CHATGLM_2D),
        ),  # fmt: skip
        source="THUDM/chatglm2-6b modeling_chatglm.py: RotaryEmbedding(kv_channels // 2), "
        "apply_rotary_pos_emb rotates interleaved pairs (2i, 2i+1) of the first half of each "
        "head and passes the second half through; base 10000, times rope_ratio in GLM-4's "
        "revision (" + rules.CHATGLM_RATIO_SOURCES + ")",
    ),
    "telechat": Family(
        traits=(RopeNotImplemented(TELECHAT_NTK),),
        source="Tele-AI/Telechat models/7B/modeling_telechat.py: RotaryEmbedding",
    ),
    "InternLMXComposer": Family(
        traits=(
            RopeNotImplemented(
                "InternLM-XComposer's language model code (internlm/internlm-xcomposer-7b "
                "modeling_InternLM_XComposer.py) is in no public repository posenc_ref could read; "
                "its rotation is not assumed from InternLM's"
            ),
        ),
        source="internlm/internlm-xcomposer-7b modeling_InternLM_XComposer.py (not read)",
    ),  # fmt: skip
}
"""``model_type`` -> the row of a family that runs remote code, read from its public code."""

ARCHITECTURES: dict[str, str] = {
    # transformers classes a remote model_type names (Kimi K2: modeling_deepseek.py is
    # DeepSeek-V3's code; vLLM's registry maps DeepseekV3ForCausalLM so)
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "MistralForCausalLM": "mistral",
    # remote code (vLLM's registry: _TEXT_GENERATION_MODELS)
    "MiMoForCausalLM": "mimo",
    "RWForCausalLM": "RefinedWebModel",
    "DeciLMForCausalLM": "nemotron-nas",
    "ChatGLMModel": "chatglm",
    "ChatGLMForConditionalGeneration": "chatglm",
    "TelechatForCausalLM": "telechat",
    "TeleChatForCausalLM": "telechat",
    "InternLMXComposerForCausalLM": "InternLMXComposer",
}
"""An architecture class name -> the row that reads its config (a serving engine's registry)."""
