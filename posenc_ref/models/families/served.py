r"""Families vLLM serves that transformers 5.23 does not define: their rows, read from code.

vLLM picks a model's implementation from ``architectures`` alone (its model registry,
``vllm/model_executor/models/registry.py``; the tables of commit 0002bff0b6cb, whose removed
entries are read in the vLLM 0.14.0 wheel and the rest in 0.33.0). Each row below states what
the family's code does with positions (the pair layout, the rotated width, the base key, the
scaling keys, anything special) and cites where it was read: vLLM's model file (``vLLM 0.33.0
vllm/model_executor/models/<file>.py:<line>``, facts only), and the model's own modeling code
where a public repository has it (``repository@commit path``). Where the two disagree, the row
follows the model's own code (the one shipped with the checkpoint) and says what vLLM does.
``tests/test_served_families.py`` proves each row with a rotation written from those facts.

Which row reads a served ``model_type`` or architecture is in
:mod:`posenc_ref.models.families.served_by`.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import _rules as rules
from .._config import length, shown
from ..family import Family
from ..traits import (
    Aliases,
    AlibiBias,
    ConfigClass,
    Defaults,
    FixedBase,
    Ignored,
    LayerTypes,
    Legacy,
    LegacyKeys,
    LegacyTypes,
    LocalBase,
    Mla,
    MRope,
    RopeLayers,
    RopeNotImplemented,
    SwitchedBy,
    WrittenBack,
)

__all__ = ["SERVED", "VLLM_COMMIT", "V14", "V33"]

VLLM_COMMIT = "0002bff0b6cb36a3c8a17364de3303664463c412"
V33 = "vLLM 0.33.0 vllm/model_executor/models/"
V14 = "vLLM 0.14.0 vllm/model_executor/models/"
LLAMA_33 = V33 + "llama.py:243 (LlamaAttention: head_dim or hidden_size // num_attention_heads, "
LLAMA_14 = V14 + "llama.py:268 (LlamaAttention: head_dim or hidden_size // num_attention_heads, "
NEOX = "get_rope with is_neox_style=True (rotate_half), base rope_theta (default 10000))"

# A key the family's code never reads where it computes the head width from the widths.
_HEAD_BY_WIDTHS = {
    "head_dim": "its attention computes the head width as hidden_size // num_attention_heads"
}


def llama_like(source: str, *traits: Any, **row: Any) -> Family:
    """A family whose code is Llama's attention and RoPE (rotate_half on the whole head)."""
    return Family(traits=traits, source=source, **row)


def by_widths(source: str, *traits: Any, ignored: Mapping[str, str] | None = None, **row: Any):
    """Llama's RoPE on a head of ``hidden_size // num_attention_heads``, ``head_dim`` unread."""
    why = {**_HEAD_BY_WIDTHS, **(ignored or {})}
    return Family(traits=(Ignored(why), *traits), source=source, **row)


# --------------------------------------------------------------------------- rules


def internlm_rotary(config: Mapping[str, Any]) -> dict[str, Any]:
    """InternLM 1's config class: the RoPE dict from ``rotary`` (class default: dynamic, 10000).

    InternEvo-HFModels configuration_internlm.py: ``rotary = {"base": 10000, "type":
    "dynamic"}``; modeling_internlm.py: ``"origin"`` is plain RoPE, ``"dynamic"`` is dynamic NTK
    with ``scaling_factor`` (default 1.0) once the length passes ``max_position_embeddings``.
    """
    out = dict(config)
    rotary = out.pop("rotary", None)
    if rotary is None:
        rotary = {"base": 10000, "type": "dynamic"}
    if not isinstance(rotary, Mapping):
        raise TypeError(f"rotary must be a dict (InternLM's RoPE: base, type), got {shown(rotary)}")
    unknown = sorted(set(rotary) - {"base", "type", "scaling_factor"})
    if unknown:
        raise ValueError(f"rotary has keys {unknown} that InternLM's code does not read")
    kind = rotary.get("type", "dynamic")
    base = rotary.get("base", 10000)
    if kind == "origin":
        rope: dict[str, Any] = {"rope_type": "default", "rope_theta": base}
    elif kind == "dynamic":
        rope = {"rope_type": "dynamic", "factor": rotary.get("scaling_factor", 1.0),
                "rope_theta": base}  # fmt: skip
    else:
        raise ValueError(
            f"rotary['type'] must be 'origin' or 'dynamic' (InternLM's code raises for any other), "
            f"got {shown(kind)}"
        )
    if out.get("rope_scaling") is not None or out.get("rope_parameters") is not None:
        raise ValueError("InternLM's code reads its RoPE from rotary, not rope_scaling")
    out["rope_parameters"] = rope
    return out


def plamo2_attention_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """PLaMo 2: layer i is attention iff ``i % mamba_step == mamba_step // 2``, the others Mamba.

    (The last layer is the attention one where there are at most ``mamba_step // 2`` layers.)
    """
    step = length("mamba_step", config.get("mamba_step", 2), 2)
    n = count or 0
    if n <= step // 2:
        return [i == n - 1 for i in range(n)]
    return [i % step == step // 2 for i in range(n)]


def minimax_text_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """MiniMax-Text-01 / M1: ``attn_type_list[i]``, 1 for softmax attention (with RoPE).

    0 is lightning linear attention, which takes no position.
    """
    listed = config.get("attn_type_list")
    if listed is None:
        return [True] * (count or 0)
    if not isinstance(listed, (list, tuple)) or any(v not in (0, 1) for v in listed):
        raise ValueError(f"attn_type_list must be a list of 0 and 1, got {shown(listed)}")
    return [bool(v) for v in listed]


# --------------------------------------------------------------------------- the rows

_QWEN_SOURCE = (
    "alibaba/MNN@4b3d1f81 transformers/llm/export/llm_models/Qwen-7B-Chat/modeling_qwen.py "
    "(Qwen-7B-Chat's modeling_qwen.py): RotaryEmbedding(int(head * rotary_pct), "
    "base=rotary_emb_base), _rotate_half on the leading rotary coordinates, head = hidden_size "
    "// num_attention_heads; " + V14 + "qwen.py:106 (the same; rope_theta read before "
    "rotary_emb_base, use_dynamic_ntk and use_logn_attn not implemented)"
)

_INTERNLM_SOURCE = (
    "InternLM/InternEvo-HFModels@d335092b huggingface_model/internlm/internlm_7b/"
    "modeling_internlm.py:205-210, 307-322 (rotate_half, head = hidden_size // heads; rotary "
    "'origin' plain, 'dynamic' dynamic NTK past max_position_embeddings) and "
    "configuration_internlm.py:91,106 (rotary default {base 10000, type dynamic}); "
    + V14
    + "registry.py:131 serves it as LlamaForCausalLM, which never reads rotary (the same "
    "within max_position_embeddings)"
)

SERVED: dict[str, Family] = {
    "qwen": by_widths(
        _QWEN_SOURCE,
        LegacyKeys(
            {
                "rotary_emb_base": Legacy("rope_theta", None, "the base (Qwen-1's name)"),
                "rotary_pct": Legacy(
                    "partial_rotary_factor", None, "partial_rotary_factor (old name)"
                ),
            }
        ),
        ignored={
            "kv_channels": "sizes the projections only; the rotary width is the head's "
            "(hidden_size // num_attention_heads)"
        },
    ),  # fmt: skip
    "baichuan": by_widths(
        "InternLM/InternEvo-HFModels@d335092b huggingface_model/baichuan_inc/Baichuan2_7B_Base/"
        "modeling_baichuan.py:110,138-142,179,189 (RotaryEmbedding built without a base: 10000 "
        "whatever the config says; rotate_half; head = hidden_size // heads); "
        + V14
        + "baichuan.py:475-492 (RoPE for BaiChuanForCausalLM and for hidden_size 4096)",
        FixedBase(10000.0),
    ),
    "baichuan_alibi": Family(
        encoding="alibi",
        instead="ALiBi attention biases (Baichuan-13B, Baichuan2-13B)",
        traits=(AlibiBias(("num_attention_heads", 40)),),
        source=V14 + "baichuan.py:151,475-481 (hidden_size other than 4096: ALiBi with the "
        "standard slopes of num_attention_heads, added to the scaled logits)",
    ),
    "internlm": by_widths(_INTERNLM_SOURCE, ConfigClass(internlm_rotary, frozenset({"rotary"}))),
    "internlm2": by_widths(
        "InternLM/InternEvo-HFModels@d335092b huggingface_model/internlm/internlm2_7b/"
        "modeling_internlm2.py:139-166,265-290 and configuration_internlm2.py:117-179 "
        "(rotate_half, head = hidden_size // heads, rope_theta, rope_scaling {type: linear or "
        "dynamic, factor}: dynamic NTK once the length passes max_position_embeddings, "
        "transformers' formula); " + V33 + "internlm2.py:119,143 (the same head and layout; "
        "vLLM's dynamic keeps the base unless max_trained_positions is given)",
    ),
    "minicpm": by_widths(
        V33 + "minicpm.py:264,287 (rotate_half, head = hidden_size // num_attention_heads, "
        "rope_theta and rope_scaling: longrope (MiniCPM4), dynamic (MiniCPM-2B-128k))",
    ),
    "deepseek": by_widths(
        V33 + "deepseek_v2.py:180,203,1280 (model_type 'deepseek', or both qk widths 0, takes "
        "DeepseekAttention: rotate_half on the whole head of hidden_size // num_attention_heads, "
        "rope_theta, rope_scaling)",
        ignored={
            key: "multi-head attention has no MLA split (vLLM takes it where both qk widths are 0)"
            for key in ("qk_rope_head_dim", "qk_nope_head_dim")
        },
    ),
    "internlm3": llama_like(
        LLAMA_33 + NEOX + "; registry.py serves InternLM3ForCausalLM as "
        "LlamaForCausalLM, as transformers 5.23's auto mapping runs "
        "LlamaForCausalLM on InternLM3Config"
    ),
    "iquestcoder": llama_like(
        LLAMA_33 + NEOX + "; registry.py serves IQuestCoderForCausalLM as "
        "LlamaForCausalLM, as transformers 5.23 runs LlamaForCausalLM on "
        "IQuestCoderConfig"
    ),
    "whisper": Family(
        encoding="learned",
        instead="learned absolute positions in its decoder (max_target_positions rows) and "
        "sinusoidal ones in its encoder: an encoder-decoder, which posenc_ref's readers do not "
        "build",
        source=V33 + "whisper.py:561 (the decoder's embed_positions, a learned table; the "
        "encoder's sinusoidal positions)",
    ),
    "aquila": llama_like(LLAMA_14 + NEOX + "; registry.py serves Aquila as LlamaForCausalLM"),
    "xverse": llama_like(LLAMA_14 + NEOX + "; registry.py serves XVERSE as LlamaForCausalLM"),
    "orion": by_widths(V33 + "orion.py:112,135 (rotate_half on hidden_size // heads, rope_theta)"),
    "solar": llama_like(
        V33 + "solar.py:132-134,157 (Llama's attention: head_dim or hidden_size "
        "// heads, rotate_half, rope_theta, rope_scaling)"
    ),
    "teleflm": llama_like(LLAMA_33 + NEOX + "; teleflm.py is LlamaForCausalLM with muP scaling"),
    "telechat2": llama_like(
        V33 + "telechat2.py (TeleChat2ForCausalLM is LlamaForCausalLM with "
        "fused key-value weights): " + NEOX
    ),
    "exaone": llama_like(
        V33 + "exaone.py:134-136,162 (head_dim or hidden_size // heads, rotate_half, "
        "rope_theta, rope_scaling: llama3 in EXAONE 3.5); its config names the layer count "
        "num_layers",
        Aliases({"num_hidden_layers": "num_layers"}),
    ),
    "arctic": by_widths(V14 + "arctic.py:290,315 (rotate_half on hidden_size // heads)"),
    "grok-1": by_widths(
        V14 + "grok1.py:100-127,265,286 (rotate_half on hidden_size // heads; the RoPE dict is "
        "rope_parameters, else built from the top-level rope_type, rope_theta, scaling_factor, "
        "original_max_position_embeddings, beta_fast, beta_slow; 'original' is the default "
        "type)",
    ),
    "stablelm_epoch": by_widths(
        "Zumwaltboi68/stable-code-3b@7c4583da modeling_stablelm_epoch.py (a copy of "
        "stable-code-3b's: rotary_ndims = int(head_dim * rope_pct), RotaryEmbedding(base="
        "rope_theta), rotate_half on the leading rotary_ndims, head = hidden_size // heads); "
        + V14
        + "stablelm.py:120,149 "
        "(the same, with the width from partial_rotary_factor only: vLLM never reads rope_pct)",
        LegacyKeys(
            {
                "rope_pct": Legacy(
                    "partial_rotary_factor", None, "partial_rotary_factor (StableLM-Epoch's name)"
                )
            }
        ),
        partial=0.25,
    ),  # fmt: skip
    "plamo2": Family(
        traits=(
            Aliases({"head_dim": "hidden_size_per_head"}),
            RopeLayers(plamo2_attention_layers, frozenset({"mamba_step"})),
        ),
        source=V14 + "plamo2.py:95-101,569,597 (rotate_half on hidden_size_per_head in the "
        "attention layers: layer i where i % mamba_step == mamba_step // 2; the others are Mamba)",
    ),
    "plamo3": Family(
        theta={"full_attention": 10000.0, "sliding_attention": 10000.0},
        traits=(LocalBase("rope_local_theta"),),
        source=V33 + "plamo3.py:141,163-179 (rotate_half on head_dim; a RoPE dict per layer "
        "type, or rope_theta + rope_scaling for the full layers and rope_local_theta for the "
        "sliding ones)",
    ),
    "step3_text": Family(
        theta=500_000.0,
        head_dim=256,
        traits=(Aliases({"max_position_embeddings": "max_position_embedding"}),),
        source=V33 + "step3_text.py:168,195,241 (rotate_half on head_dim, default 256; base "
        "default 500000 (transformers_utils/configs/step3_vl.py Step3TextConfig); the context "
        "is max_position_embedding)",
    ),
    "bailing_moe": Family(
        traits=(
            LegacyKeys(
                {
                    "rotary_dim": Legacy(
                        "rotary_dim",
                        rules.absolute,
                        "the rotary width, ahead of partial_rotary_factor",
                    )
                }
            ),
        ),
        source=V33 + "bailing_moe.py:93,132-145 (rotate_half on rotary_dim coordinates, else "
        "int(head_dim * partial_rotary_factor); head_dim or hidden_size // heads)",
    ),  # fmt: skip
    "minimax_text_01": Family(
        traits=(
            LegacyKeys(
                {
                    "rotary_dim": Legacy(
                        "partial_rotary_factor",
                        rules.fraction_of_head,
                        "the rotary width, as rotary_dim / head_dim",
                    )
                }
            ),
            RopeLayers(minimax_text_layers, frozenset({"attn_type_list"})),
        ),
        source=V14 + "minimax_text_01.py:245-332,500-506 (rotate_half on rotary_dim of head_dim "
        "in the softmax-attention layers, attn_type_list[i] == 1; the lightning layers take no "
        "position)",
    ),  # fmt: skip
    "minimax_m3": Family(
        theta=5_000_000.0,
        head_dim=128,
        traits=(
            Ignored(
                {
                    "rotary_dim": "vLLM's MiniMax-M3 builds its RoPE from rope_theta and "
                    "partial_rotary_factor only"
                },
                compare={"rotary_dim": (None, "rotary_dim")},
            ),
            LayerTypes(rules.minimax_m3_types, frozenset({"sparse_attention_config"})),
        ),
        source=V33 + "minimax_m3.py (rotate_half on int(head_dim * partial_rotary_factor), "
        "rope_theta; as transformers' minimax_m3_vl text model)",
    ),  # fmt: skip
    "pangu_embedded": llama_like(
        V33 + "openpangu.py:437,505-520 (OpenPanguEmbeddedAttention: "
        "head_dim or hidden_size // heads, " + NEOX
    ),
    "pangu_mla": Family(
        layout="interleaved",
        traits=(
            Mla(),
            WrittenBack("interleaved"),
            Defaults({"qk_rope_head_dim": 64, "qk_nope_head_dim": 128}),
        ),
        source=V33 + "openpangu.py:328-345 (OpenPanguMLAAttention: pairs (2i, 2i+1) "
        "(is_neox_style False) on qk_rope_head_dim, base rope_theta (default 10000); its "
        "deepseek_yarn of factor 1 is the plain rotation)",
    ),
    "pangu_sink": Family(
        traits=(
            RopeNotImplemented(
                "openPangu's sink attention: vLLM's OpenPanguSinkAttention (openpangu.py:576-590) "
                "builds its RoPE from partial_rotary_factor = qk_rope_dim / head_dim alone, with "
                "get_rope's default base 10000, whatever the config's rope_theta and rope_scaling "
                "say; the model's own code is in no public repository posenc_ref could read"
            ),
        ),
        source=V33 + "openpangu.py:576-590",
    ),  # fmt: skip
    "jais": Family(
        encoding="alibi",
        instead="ALiBi attention biases, plus a learned absolute table added to the embeddings "
        "unless position_embedding_type is 'alibi'",
        traits=(
            AlibiBias(("n_head", 16)),
            Aliases(
                {
                    "num_attention_heads": "n_head",
                    "hidden_size": "n_embd",
                    "num_hidden_layers": "n_layer",
                    "max_position_embeddings": "n_positions",
                }
            ),
            SwitchedBy(
                "position_embedding_type",
                {"alibi": "alibi", "learned": "learned"},
                default="learned",
                refused_elsewhere=False,
            ),
        ),
        source=V14 + "jais.py:68,98,121-128,252-256 (ALiBi slopes in every attention layer; a "
        "learned wpe as well unless position_embedding_type is 'alibi', JAISConfig's default "
        "'learned'; alibi_scaling is not applied)",
    ),  # fmt: skip
    "molmo": by_widths(
        V33 + "molmo.py:193,429,456 (MolmoAttention: rotate_half on hidden_size // heads, "
        "rope_theta)",
    ),
    "qwen3_asr_text": Family(
        theta=5_000_000.0,
        head_dim=128,
        traits=(
            MRope(
                "interleaved",
                (24, 20, 20),
                rope_keys=frozenset({"mrope_section", "mrope_interleaved", "interleaved"}),
            ),
        ),
        source=V33 + "qwen3_asr.py:443-461 (the thinker's text_config runs Qwen3ForCausalLM: "
        "rotate_half on head_dim; mrope_section with mrope_interleaved in rope_scaling: Qwen3-VL's "
        "interleaved M-RoPE, positions from get_mrope_input_positions) and "
        "transformers_utils/configs/qwen3_asr.py:133-283 (Qwen3ASRTextConfig: head_dim 128, "
        "rope_theta 5000000 by default)",
    ),
    "keye": Family(
        head_dim=128,
        traits=(MRope("consecutive"), LegacyTypes({"mrope": "default"})),
        source=V33 + "keye.py:1231 (the whole config is the language model's: Qwen3's "
        "attention, head_dim, rotate_half; mrope_section in rope_scaling: M-RoPE)",
    ),
}
"""``model_type`` (or, where a family has none, a name for its kind) -> its row."""
