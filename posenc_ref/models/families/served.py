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

Several ``model_type`` values stand for more than one model: Baichuan's 7B rotates and its 13B
uses ALiBi (vLLM decides by ``hidden_size``), MiniCPM-V picks its language model by ``version``.
:data:`SERVED_TYPES` and :data:`SERVED_ARCHITECTURES` map a ``model_type`` or an architecture to
the row that reads it, through such a rule where one is needed.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
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

__all__ = ["SERVED", "SERVED_TYPES", "SERVED_ARCHITECTURES", "Served", "VLLM_COMMIT"]

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
    """PLaMo 2: layer i is attention iff ``i % mamba_step == mamba_step // 2`` (the last one
    where the model has fewer than ``mamba_step // 2 + 1`` layers); the others are Mamba."""
    step = length("mamba_step", config.get("mamba_step", 2), 2)
    n = count or 0
    if n <= step // 2:
        return [i == n - 1 for i in range(n)]
    return [i % step == step // 2 for i in range(n)]


def minimax_text_layers(config: Mapping[str, Any], count: int | None) -> list[bool]:
    """MiniMax-Text-01 / M1: ``attn_type_list[i]`` is 1 for softmax attention (with RoPE), 0
    for lightning linear attention (no positions)."""
    listed = config.get("attn_type_list")
    if listed is None:
        return [True] * (count or 0)
    if not isinstance(listed, (list, tuple)) or any(v not in (0, 1) for v in listed):
        raise ValueError(f"attn_type_list must be a list of 0 and 1, got {shown(listed)}")
    return [bool(v) for v in listed]


def baichuan(config: Mapping[str, Any]) -> tuple[str, str]:
    """vLLM decides by ``hidden_size``: 4096 (Baichuan2-7B) rotates, any other uses ALiBi."""
    hidden = config.get("hidden_size")
    if hidden == 4096:
        return "baichuan", "hidden_size 4096: Baichuan2-7B's RoPE"
    return "baichuan_alibi", f"hidden_size {hidden!r}: Baichuan-13B's ALiBi"


def minicpmv(config: Mapping[str, Any]) -> tuple[str, str]:
    """MiniCPM-V: the language model by ``version`` (vLLM minicpmv.py:471-481, 2434-2466)."""
    version = config.get("version")
    if version is None:
        if config.get("hidden_size") == 2304 and config.get("query_num") == 64:
            return "minicpm", "no version, hidden_size 2304 and query_num 64: MiniCPM-V 2.0"
        return "llama", "no version: MiniCPM-V 2.5 (Llama 3)"
    chosen = {"2.0": "minicpm", "2.5": "llama", "2.6": "qwen2", "4.0": "llama", "4.5": "qwen3"}
    key = str(version)
    if key not in chosen:
        raise ValueError(
            f"MiniCPM-V version {version!r}: its code knows {', '.join(chosen)} (vLLM "
            "minicpmv.py _SUPPORT_VERSION)"
        )
    return chosen[key], f"version {key}: its language model is {chosen[key]}'s"


def minicpmo(config: Mapping[str, Any]) -> tuple[str, str]:
    """MiniCPM-o: Qwen2 (version absent or 2.6), Qwen3 (4.5) (vLLM minicpmo.py:1006-1035)."""
    version = str(config.get("version", "2.6"))
    chosen = {"2.6": "qwen2", "4.5": "qwen3"}
    if version not in chosen:
        raise ValueError(f"MiniCPM-o version {version!r}: its code knows 2.6 and 4.5")
    return chosen[version], f"version {version}: its language model is {chosen[version]}'s"


def telechat(config: Mapping[str, Any]) -> tuple[str, str]:
    """TeleChat 2 and 3 are served as Llama; TeleChat (1) runs its own NTK-alpha RoPE."""
    names = config.get("architectures") or ()
    for name in ("TeleChat2ForCausalLM", "TeleChat3ForCausalLM"):
        if isinstance(names, list) and name in names:
            return "telechat2", f"architectures {name}: Llama's RoPE"
    return "telechat", "TeleChat (1)"


def openpangu(config: Mapping[str, Any]) -> tuple[str, str]:
    """openPangu's attention kind, by the keys its config has (vLLM openpangu.py:790-800)."""
    mla = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")
    if all(key in config for key in mla):
        return "pangu_mla", "qk_nope_head_dim, qk_rope_head_dim, v_head_dim and kv_lora_rank: MLA"
    sink = config.get("param_sink_number")
    if isinstance(sink, (int, float)) and not isinstance(sink, bool) and sink > 0:
        return "pangu_sink", "param_sink_number > 0: sink attention"
    return "pangu_embedded", "neither MLA keys nor param_sink_number: Llama's attention"


def deepseek_language(config: Mapping[str, Any]) -> tuple[str, str]:
    """DeepSeek-VL2's language model: MHA where ``use_mla`` is false or both qk widths are 0."""
    mha = config.get("use_mla") is False or (
        config.get("qk_rope_head_dim") == 0 and config.get("qk_nope_head_dim") == 0
    )
    if mha:
        return "deepseek", "use_mla false: DeepSeek's multi-head attention (the whole head)"
    return str(config.get("model_type") or "deepseek_v2"), "MLA"


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
    "configuration_internlm.py:91,106 (rotary default {base 10000, type dynamic}); " + V14
    + "registry.py:131 serves it as LlamaForCausalLM, which never reads rotary (the same "
    "within max_position_embeddings)"
)

SERVED: dict[str, Family] = {
    "qwen": by_widths(
        _QWEN_SOURCE,
        LegacyKeys({
            "rotary_emb_base": Legacy("rope_theta", None, "the base (Qwen-1's name)"),
            "rotary_pct": Legacy("partial_rotary_factor", None, "partial_rotary_factor "
                                 "(old name)"),
        }),
        ignored={"kv_channels": "sizes the projections only; the rotary width is the head's "
                 "(hidden_size // num_attention_heads)"},
    ),  # fmt: skip
    "baichuan": by_widths(
        "InternLM/InternEvo-HFModels@d335092b huggingface_model/baichuan_inc/Baichuan2_7B_Base/"
        "modeling_baichuan.py:110,138-142,179,189 (RotaryEmbedding built without a base: 10000 "
        "whatever the config says; rotate_half; head = hidden_size // heads); " + V14
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
        V33 + "deepseek_v2.py:180,203,1280 (model_type 'deepseek' takes DeepseekAttention: "
        "rotate_half on the whole head of hidden_size // num_attention_heads, rope_theta, "
        "rope_scaling)",
    ),
    "aquila": llama_like(LLAMA_14 + NEOX + "; registry.py serves Aquila as LlamaForCausalLM"),
    "xverse": llama_like(LLAMA_14 + NEOX + "; registry.py serves XVERSE as LlamaForCausalLM"),
    "orion": by_widths(V33 + "orion.py:112,135 (rotate_half on hidden_size // heads, rope_theta)"),
    "solar": llama_like(V33 + "solar.py:132-134,157 (Llama's attention: head_dim or hidden_size "
                        "// heads, rotate_half, rope_theta, rope_scaling)"),
    "teleflm": llama_like(LLAMA_33 + NEOX + "; teleflm.py is LlamaForCausalLM with muP scaling"),
    "telechat2": llama_like(V33 + "telechat2.py (TeleChat2ForCausalLM is LlamaForCausalLM with "
                            "fused key-value weights): " + NEOX),
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
        "rope_theta), rotate_half on the leading rotary_ndims, head = hidden_size // heads); " + V14 + "stablelm.py:120,149 "
        "(the same, with the width from partial_rotary_factor only: vLLM never reads rope_pct)",
        LegacyKeys({"rope_pct": Legacy("partial_rotary_factor", None,
                                       "partial_rotary_factor (StableLM-Epoch's name)")}),
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
        traits=(LegacyKeys({"rotary_dim": Legacy("rotary_dim", rules.absolute,
                            "the rotary width, ahead of partial_rotary_factor")}),),
        source=V33 + "bailing_moe.py:93,132-145 (rotate_half on rotary_dim coordinates, else "
        "int(head_dim * partial_rotary_factor); head_dim or hidden_size // heads)",
    ),  # fmt: skip
    "minimax_text_01": Family(
        traits=(
            LegacyKeys({"rotary_dim": Legacy("partial_rotary_factor", rules.fraction_of_head,
                        "the rotary width, as rotary_dim / head_dim")}),
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
            Ignored({"rotary_dim": "vLLM's MiniMax-M3 builds its RoPE from rope_theta and "
                     "partial_rotary_factor only"}, compare={"rotary_dim": (None, "rotary_dim")}),
            RopeLayers(rules.rotate_types("full_attention", "minimax_m3_sparse")),
        ),
        source=V33 + "minimax_m3.py (rotate_half on int(head_dim * partial_rotary_factor), "
        "rope_theta; as transformers' minimax_m3_vl text model)",
    ),  # fmt: skip
    "pangu_embedded": llama_like(V33 + "openpangu.py:437,505-520 (OpenPanguEmbeddedAttention: "
                                 "head_dim or hidden_size // heads, " + NEOX),
    "pangu_mla": Family(
        layout="interleaved",
        traits=(Mla(), WrittenBack("interleaved"),
                Defaults({"qk_rope_head_dim": 64, "qk_nope_head_dim": 128})),
        source=V33 + "openpangu.py:328-345 (OpenPanguMLAAttention: pairs (2i, 2i+1) "
        "(is_neox_style False) on qk_rope_head_dim, base rope_theta (default 10000); its "
        "deepseek_yarn of factor 1 is the plain rotation)",
    ),
    "pangu_sink": Family(
        traits=(RopeNotImplemented(
            "openPangu's sink attention: vLLM's OpenPanguSinkAttention (openpangu.py:576-590) "
            "builds its RoPE from partial_rotary_factor = qk_rope_dim / head_dim alone, with "
            "get_rope's default base 10000, whatever the config's rope_theta and rope_scaling "
            "say; the model's own code is in no public repository posenc_ref could read"),),
        source=V33 + "openpangu.py:576-590",
    ),  # fmt: skip
    "jais": Family(
        encoding="alibi",
        instead="ALiBi attention biases, plus a learned absolute table added to the embeddings "
        "unless position_embedding_type is 'alibi'",
        traits=(
            AlibiBias(("n_head", 16)),
            Aliases({"num_attention_heads": "n_head", "hidden_size": "n_embd",
                     "num_hidden_layers": "n_layer", "max_position_embeddings": "n_positions"}),
            SwitchedBy("position_embedding_type", {"alibi": "alibi", "learned": "learned"},
                       default="learned", refused_elsewhere=False),
        ),
        source=V14 + "jais.py:68,98,121-128,252-256 (ALiBi slopes in every attention layer; a "
        "learned wpe as well unless position_embedding_type is 'alibi', JAISConfig's default "
        "'learned'; alibi_scaling is not applied)",
    ),  # fmt: skip
    "molmo": by_widths(
        V33 + "molmo.py:193,429,456 (MolmoAttention: rotate_half on hidden_size // heads, "
        "rope_theta)",
    ),
    "keye": Family(
        head_dim=128,
        traits=(MRope("consecutive"), LegacyTypes({"mrope": "default"})),
        source=V33 + "keye.py:1231 (the whole config is the language model's: Qwen3's "
        "attention, head_dim, rotate_half; mrope_section in rope_scaling: M-RoPE)",
    ),
}
"""``model_type`` (or, where a family has none, a name for its kind) -> its row."""


# --------------------------------------------------------------------------- how a config reaches a row


@dataclass(frozen=True)
class Served:
    """How a served ``model_type`` or architecture is read.

    ``family``: the row's key, or a rule ``config -> (row key, why)`` where the code decides by
    a key. ``language``: where a wrapper keeps its language model's config (``"llm_config"``);
    the language model's own ``model_type`` or ``architectures`` then name its row.
    ``source``: where that is decided.
    """

    family: str | Callable[[Mapping[str, Any]], tuple[str, str]] | None
    source: str
    language: str | None = None

    def row_key(self, config: Mapping[str, Any]) -> tuple[str | None, str]:
        """``(the row's key, why)`` for this config."""
        if callable(self.family):
            return self.family(config)
        return self.family, ""


def _same(key: str, why: str = "") -> Served:
    return Served(key, why)


def _wrapper(language: str, source: str) -> Served:
    return Served(None, source, language)


_MINICPMV = Served(minicpmv, V33 + "minicpmv.py:471-481,2434-2466 (the flat config is the "
                   "language model's, chosen by version)")
_MINICPMO = Served(minicpmo, V33 + "minicpmo.py:1006-1035 (the flat config is Qwen2's or "
                   "Qwen3's, by version)")
_BAICHUAN = Served(baichuan, V14 + "baichuan.py:475-492")
_TELECHAT = Served(telechat, V33 + "registry.py and telechat2.py")
_PANGU = Served(openpangu, V33 + "openpangu.py:790-870")
_INTERNVL = "llm_config (vLLM remaps it to text_config: transformers_utils/config.py:195-197)"
_LANGUAGE_CONFIG = "language_config (vLLM's DeepseekVLV2Config maps it to text_config)"

SERVED_TYPES: dict[str, Served] = {
    "baichuan": _BAICHUAN,
    "minicpmv": _MINICPMV,
    "minicpmo": _MINICPMO,
    "telechat": _TELECHAT,
    "PanguEmbedded": _PANGU,
    "pangu_embedded": _PANGU,
    "pangu_ultra_moe": _PANGU,
    "minimax_m1": _same("minimax_text_01"),
    "phi3_v": _same("phi3", V33 + "phi3v.py:575 (the whole config read as Llama's, with "
                    "Phi-3's su/longrope)"),
    "Keye": _same("keye"),
    "keye_vl": _same("keye"),
    "kimi_audio": _same("qwen2", V33 + "kimi_audio.py:426 (the whole config, read as Qwen2's)"),
    "deepseek_ref": _same("deepseek_v4", "DOUBTFUL: model_type 'deepseek_ref' is no released "
                          "model's; its architectures DeepseekV4ForCausalLM is transformers' "
                          "DeepSeek-V4"),
}
"""A served ``model_type`` whose row is not its own name -> how it is read."""

SERVED_ARCHITECTURES: dict[str, Served] = {
    # text-generation table
    "QWenLMHeadModel": _same("qwen"),
    "BaiChuanForCausalLM": _same("baichuan"),
    "BaichuanForCausalLM": _BAICHUAN,
    "InternLMForCausalLM": _same("internlm"),
    "InternLM2ForCausalLM": _same("internlm2"),
    "InternLM2VEForCausalLM": _same("internlm2"),
    "MiniCPMForCausalLM": _same("minicpm"),
    "DeepseekForCausalLM": _same("deepseek"),
    "AquilaModel": _same("aquila"),
    "AquilaForCausalLM": _same("aquila"),
    "XverseForCausalLM": _same("xverse"),
    "OrionForCausalLM": _same("orion"),
    "SolarForCausalLM": _same("solar"),
    "TeleFLMForCausalLM": _same("teleflm"),
    "TeleChatForCausalLM": _TELECHAT,
    "TeleChat2ForCausalLM": _same("telechat2"),
    "ExaoneForCausalLM": _same("exaone"),
    "ArcticForCausalLM": _same("arctic"),
    "Grok1ModelForCausalLM": _same("grok-1"),
    "Grok1ForCausalLM": _same("grok-1"),
    "StableLMEpochForCausalLM": _same("stablelm_epoch"),
    "Plamo2ForCausalLM": _same("plamo2"),
    "Plamo3ForCausalLM": _same("plamo3"),
    "Step3TextForCausalLM": _same("step3_text"),
    "BailingMoeForCausalLM": _same("bailing_moe"),
    "BailingMoeV2ForCausalLM": _same("bailing_moe"),
    "MiniMaxText01ForCausalLM": _same("minimax_text_01"),
    "MiniMaxM1ForCausalLM": _same("minimax_text_01"),
    "MiniMaxM3ForCausalLM": _same("minimax_m3"),
    "MiniMaxM3SparseForCausalLM": _same("minimax_m3"),
    "PanguEmbeddedForCausalLM": _PANGU,
    "PanguProMoEV2ForCausalLM": _PANGU,
    "PanguUltraMoEForCausalLM": _PANGU,
    "JAISLMHeadModel": _same("jais"),
    "LLaMAForCausalLM": _same("llama", V14 + "registry.py (LLaMAForCausalLM: LlamaForCausalLM)"),
    "Fairseq2LlamaForCausalLM": _same("llama", V14 + "fairseq2_llama.py (Llama's model)"),
    "GritLM": _same("llama", V14 + "gritlm.py (Llama's model)"),
    "MistralLarge3ForCausalLM": _same("deepseek_v3", V33 + "mistral_large_3.py (a subclass of "
                                      "DeepseekV3ForCausalLM)"),
    "OuroForCausalLM": _same("llama", V14 + "ouro.py (Llama's attention and RoPE, looped "
                             "layers)"),
    "MPTForCausalLM": _same("mpt"),
    "HCXVisionForCausalLM": _wrapper("text_config", V33 + "hyperclovax_vision.py"),
    # multimodal table
    "MiniCPMV": _MINICPMV,
    "MiniCPMO": _MINICPMO,
    "MolmoForCausalLM": _same("molmo"),
    "Phi3VForCausalLM": SERVED_TYPES["phi3_v"],
    "QwenVLForConditionalGeneration": _same("qwen"),
    "KeyeForConditionalGeneration": _same("keye"),
    "KeyeVL1_5ForConditionalGeneration": _same("keye"),
    "MoonshotKimiaForCausalLM": SERVED_TYPES["kimi_audio"],
    "DotsOCRForCausalLM": _same("qwen2", V33 + "dots_ocr.py:646 (the whole config, Qwen2's)"),
    "Tarsier2ForConditionalGeneration": _same("qwen2_vl", V14 + "tarsier2 (Qwen2-VL's model)"),
    "GLM4VForCausalLM": _same("chatglm", V33 + "glm4v.py (GLM-4V-9B: ChatGLM's language model "
                              "on the flat config)"),
    "InternVLChatModel": _wrapper("llm_config", _INTERNVL),
    "H2OVLChatModel": _wrapper("llm_config", _INTERNVL),
    "NVLM_D": _wrapper("llm_config", _INTERNVL),
    "SkyworkR1VChatModel": _wrapper("llm_config", _INTERNVL),
    "Llama_Nemotron_Nano_VL": _wrapper("llm_config", _INTERNVL),
    "NemotronH_Nano_VL_V2": _wrapper("llm_config", _INTERNVL),
    "Eagle2_5_VLForConditionalGeneration": _wrapper("llm_config", _INTERNVL),
    "Ovis": _wrapper("llm_config", V33 + "ovis.py:425"),
    "Ovis2_5": _wrapper("llm_config", V33 + "ovis2_5.py:455"),
    "BagelForConditionalGeneration": _wrapper("llm_config", V33 + "bagel.py:360"),
    "DeepseekVLV2ForCausalLM": _wrapper("language_config", _LANGUAGE_CONFIG),
    "DeepseekOCRForCausalLM": _wrapper("language_config", _LANGUAGE_CONFIG),
    "KimiVLForConditionalGeneration": _wrapper("text_config", V33 + "kimi_vl.py:336"),
    "Qwen2_5OmniModel": _wrapper("thinker_config", V33 + "qwen2_5_omni_thinker.py:1180"),
    "Step3VLForConditionalGeneration": _wrapper("text_config", V33 + "step3_vl.py"),
    "MiniMaxVL01ForConditionalGeneration": _wrapper("text_config", V14 + "minimax_vl_01.py"),
    **{
        name: _wrapper("text_config", V33 + "registry.py")
        for name in ("BeeForConditionalGeneration", "InternS1ForConditionalGeneration",
                     "LightOnOCRForConditionalGeneration", "MiDashengLMModel",
                     "OpenCUAForConditionalGeneration", "PixtralForConditionalGeneration",
                     "RForConditionalGeneration", "UltravoxModel",
                     "MantisForConditionalGeneration", "TarsierForConditionalGeneration",
                     "VoxtralStreamingGeneration", "IsaacForConditionalGeneration",
                     "Phi4MMForCausalLM")
    },  # fmt: skip
}
"""An architecture vLLM serves (and transformers 5.23 does not define) -> how it is read."""
