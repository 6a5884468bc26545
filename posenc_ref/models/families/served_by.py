r"""How a config of a family vLLM serves reaches its row: by ``model_type``, else architecture.

vLLM picks a model's implementation from ``architectures`` alone (its registry, at commit
0002bff0b6cb, and vLLM 0.33.0's additions). :data:`SERVED_ARCHITECTURES` maps each architecture
that transformers 5.23 does not define to the row that reads it
(:mod:`~posenc_ref.models.families.served` and the other family files), or to the sub-config a
wrapper keeps its language model in; :data:`SERVED_TYPES` maps the released ``model_type`` values
whose row is not their own name. Several stand for more than one model, decided by a key as
vLLM decides it: Baichuan's 7B rotates and its 13B uses ALiBi (``hidden_size``), MiniCPM-V picks
its language model by ``version``, openPangu its attention by the keys its config has.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .served import V14, V33

__all__ = ["Served", "SERVED_TYPES", "SERVED_ARCHITECTURES"]


def baichuan(config: Mapping[str, Any]) -> tuple[str, str]:
    """VLLM decides by ``hidden_size``: 4096 (Baichuan2-7B) rotates, any other uses ALiBi."""
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
    """OpenPangu's attention kind, by the keys its config has (vLLM openpangu.py:790-800)."""
    mla = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")
    if all(key in config for key in mla):
        return "pangu_mla", "qk_nope_head_dim, qk_rope_head_dim, v_head_dim and kv_lora_rank: MLA"
    sink = config.get("param_sink_number")
    if isinstance(sink, (int, float)) and not isinstance(sink, bool) and sink > 0:
        return "pangu_sink", "param_sink_number > 0: sink attention"
    return "pangu_embedded", "neither MLA keys nor param_sink_number: Llama's attention"


def deepseek_language(config: Mapping[str, Any]) -> tuple[str, str]:
    """DeepSeek-V2's code with both qk widths 0 is multi-head attention (DeepSeek-VL2-tiny)."""
    if config.get("qk_rope_head_dim") == 0 and config.get("qk_nope_head_dim") == 0:
        return "deepseek", "qk_rope_head_dim and qk_nope_head_dim 0: multi-head attention"
    return "deepseek_v2", ""


# --------------------------------------------------------------------------- the tables


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


_MINICPMV = Served(
    minicpmv,
    V33 + "minicpmv.py:471-481,2434-2466 (the flat config is the "
    "language model's, chosen by version)",
)
_MINICPMO = Served(
    minicpmo, V33 + "minicpmo.py:1006-1035 (the flat config is Qwen2's or Qwen3's, by version)"
)
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
    "phi3_v": _same(
        "phi3", V33 + "phi3v.py:575 (the whole config read as Llama's, with Phi-3's su/longrope)"
    ),
    "Keye": _same("keye"),
    "keye_vl": _same("keye"),
    "kimi_audio": _same("qwen2", V33 + "kimi_audio.py:426 (the whole config, read as Qwen2's)"),
    "deepseek_v2": Served(
        deepseek_language,
        V33 + "deepseek_v2.py:1280 (use_mha: model_type "
        "'deepseek', or qk_nope_head_dim == qk_rope_head_dim == 0)",
    ),
    "deepseek_ref": _same(
        "deepseek_v4",
        "DOUBTFUL: model_type 'deepseek_ref' is no released "
        "model's; its architectures DeepseekV4ForCausalLM is transformers' "
        "DeepSeek-V4",
    ),
}
"""A served ``model_type`` whose row is not its own name -> how it is read."""

SERVED_ARCHITECTURES: dict[str, Served] = {
    # text-generation table
    "QWenLMHeadModel": _same("qwen"),
    "BaiChuanForCausalLM": _same("baichuan"),
    "BaichuanForCausalLM": _BAICHUAN,
    "InternLMForCausalLM": _same("internlm"),
    "InternLM3ForCausalLM": _same("internlm3"),
    "IQuestCoderForCausalLM": _same("iquestcoder"),
    "PhiMoEForCausalLM": _same(
        "phimoe", V33 + "registry.py (transformers' class is PhimoeForCausalLM)"
    ),
    "WhisperForConditionalGeneration": _same("whisper"),
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
    "MistralLarge3ForCausalLM": _same(
        "deepseek_v3", V33 + "mistral_large_3.py (a subclass of DeepseekV3ForCausalLM)"
    ),
    "OuroForCausalLM": _same("llama", V14 + "ouro.py (Llama's attention and RoPE, looped layers)"),
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
    "GLM4VForCausalLM": _same(
        "chatglm", V33 + "glm4v.py (GLM-4V-9B: ChatGLM's language model on the flat config)"
    ),
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
        for name in (
            "BeeForConditionalGeneration",
            "InternS1ForConditionalGeneration",
            "LightOnOCRForConditionalGeneration",
            "MiDashengLMModel",
            "OpenCUAForConditionalGeneration",
            "PixtralForConditionalGeneration",
            "RForConditionalGeneration",
            "UltravoxModel",
            "MantisForConditionalGeneration",
            "TarsierForConditionalGeneration",
            "VoxtralStreamingGeneration",
            "IsaacForConditionalGeneration",
            "Phi4MMForCausalLM",
        )
    },  # fmt: skip
}
"""An architecture vLLM serves (and transformers 5.23 does not define) -> how it is read."""

# vLLM 0.33.0's additions to the two tables that an existing row reads (the rest are listed on
# the model zoo page as not identified): aliases and subclasses of a family, and wrappers.
SERVED_ARCHITECTURES.update(
    {
        "ExaoneMoEForCausalLM": _same(
            "exaone_moe", V33 + "registry.py (alias of ExaoneMoeForCausalLM)"
        ),
        "IQuestLoopCoderForCausalLM": _same(
            "iquestcoder", V33 + "iquest_loopcoder.py (Llama's attention and RoPE, layers looped)"
        ),
        "LongcatFlashNgramForCausalLM": _same(
            "longcat_flash", V33 + "longcat_flash_ngram.py (LongCat-Flash with n-gram embeddings)"
        ),
        "MiMoV2ForCausalLM": _same("mimo_v2_flash", V33 + "mimo_v2.py (MiMo-V2-Flash)"),
        "MiMoV2OmniForCausalLM": _same(
            "mimo_v2_flash",
            V33 + "mimo_v2_omni.py (MiMo-V2-Flash's language model on the flat config)",
        ),
        "NemotronHPuzzleForCausalLM": _same("nemotron_h", V33 + "nemotron_h.py"),
        "MuseGlimmerForCausalLM": _same("muse_glimmer_text", V33 + "muse_glimmer.py"),
        "Step3p5ForCausalLM": _same("step3p5", V33 + "step3p5.py"),
        "DeepseekV4ForConditionalGeneration": _same("deepseek_v4", V33 + "deepseek_v4.py"),
        "DeepseekV41ForCausalLM": _same("deepseek_v4", V33 + "deepseek_v41 (DeepSeek-V4's RoPE)"),
        "KimiK25ForConditionalGeneration": _same("kimi_k25", V33 + "kimi_k25.py"),
        "KimiK3ForConditionalGeneration": _same(
            "kimi_linear", V33 + "kimi_k3.py (Kimi-Linear's layers)"
        ),
        "FireRedASR2ForConditionalGeneration": _same(
            "qwen2", V33 + "fireredasr2.py (Qwen2's decoder on the whole config)"
        ),
        "FunASRForConditionalGeneration": _same(
            "qwen3", V33 + "funasr.py (Qwen3's decoder on the whole config)"
        ),
        "Phi4ForCausalLMV": _same("phi3", V33 + "phi4siglip.py:274 (the whole config, Phi-3's)"),
        "DeepseekOCR2ForCausalLM": _wrapper("language_config", _LANGUAGE_CONFIG),
        "MossAudioModel": _wrapper("language_config", V33 + "moss_audio.py:305"),
        "Ovis2_6ForCausalLM": _wrapper("llm_config", V33 + "ovis2_5.py:455"),
        "Ovis2_6_MoeForCausalLM": _wrapper("llm_config", V33 + "ovis2_5.py:455"),
        "NemotronH_Nano_Omni_Reasoning_V3": _wrapper("llm_config", _INTERNVL),
        "NemotronH_Super_Omni_Reasoning_V3": _wrapper("llm_config", _INTERNVL),
        "Qwen3ASRRealtimeGeneration": _wrapper("thinker_config", V33 + "qwen3_asr_realtime.py"),
        **{
            name: _wrapper("text_config", V33 + "registry.py")
            for name in (
                "Alpamayo2Super",
                "Cosmos3ForConditionalGeneration",
                "UnlimitedOCRForCausalLM",
                "FunAudioChatForConditionalGeneration",
                "InternS1ProForConditionalGeneration",
                "InternS2MobiusForConditionalGeneration",
                "InternS2PreviewForConditionalGeneration",
                "KananaVForConditionalGeneration",
                "LlavaOnevision2ForConditionalGeneration",
                "OpenVLAForActionPrediction",
                "StepVLForConditionalGeneration",
                "VoxtralRealtimeGeneration",
                "HCXVisionV2ForCausalLM",
            )
        },  # fmt: skip
    }
)
