"""Every architecture vLLM serves, identified from ``architectures`` alone (issue 38, item 3).

vLLM's model registry at commit 0002bff0b6cb (``tests/data/vllm_architectures.json``: its
text-generation and multimodal tables, and the architectures vLLM 0.33.0 adds). A config naming
only the architecture, with a Llama-7B's widths (``tests/vllm_reading.py``), must be identified:
read, or refused naming the feature posenc_ref lacks or the part of the config the family's code
needs. Each served family's rotation is proven in tests/test_served_families.py.
"""

import pytest

from tests.vllm_reading import reading, registry

ROWS = registry()["architectures"]
BY_NAME = {(row["architecture"], row["table"]): row for row in ROWS}

# vLLM 0.33.0's additions posenc_ref does not identify yet (the model zoo page lists them):
# families whose code none of posenc_ref's rows reads.
NOT_YET = {
    "AliceAIForCausalLM", "BailingMoeV2_5ForCausalLM", "BailingMoeV3ForCausalLM",
    "DomynEdgeForCausalLM", "DoryForCausalLM", "Rnj1ForCausalLM", "Glm5NextForCausalLM",
    "K2HorizonForCausalLM", "Param2MoEForCausalLM", "SarvamMoEForCausalLM",
    "SarvamMLAForCausalLM", "Step1ForCausalLM", "Step5ForCausalLM", "TeleChat3ForCausalLM",
    "BailingMoeV3VLForConditionalGeneration", "Moondream3ForCausalLM", "HfMoondream",
    "OpenPanguVLForConditionalGeneration", "Step5ForConditionalGeneration",
    "CohereAsrForConditionalGeneration", "NemotronParseForConditionalGeneration",
    "RadioMBartPrefixForCausalLM",
}  # fmt: skip


def test_the_registry_tables_are_the_issues():
    """0002bff: 119 text-generation architectures, 74 multimodal (73 decoder-only + Whisper)."""
    old = [row for row in ROWS if row["in_0002bff"]]
    assert sum(row["table"] == "text" for row in old) == 119
    assert sum(row["table"] == "multimodal" for row in old) == 74


@pytest.mark.parametrize(
    "name, table",
    [(row["architecture"], row["table"]) for row in ROWS if row["in_0002bff"]],
)
def test_every_architecture_of_the_registry_is_identified(name, table):
    got = reading(name)
    assert got["outcome"] != "unknown", got["text"]
    if got["outcome"] in ("rope", "not implemented", "refused"):
        assert got["family"] is not None


def test_the_additions_of_vllm_0_33_are_identified_or_listed():
    new = [row["architecture"] for row in ROWS if not row["in_0002bff"]]
    unknown = {name for name in new if reading(name)["outcome"] == "unknown"}
    assert unknown == NOT_YET


@pytest.mark.parametrize(
    "name, outcome, family",
    [
        ("QWenLMHeadModel", "rope", "qwen"),
        ("BaichuanForCausalLM", "rope", "baichuan"),  # hidden_size 4096: Baichuan2-7B
        ("InternLM2ForCausalLM", "rope", "internlm2"),
        ("MiniCPM3ForCausalLM", "rope", "minicpm3"),
        ("DeepseekForCausalLM", "rope", "deepseek"),
        ("JAISLMHeadModel", "not implemented", "jais"),  # learned + ALiBi by default
        ("MPTForCausalLM", "alibi", "mpt"),
        ("MolmoForCausalLM", "rope", "molmo"),
        ("MiniCPMV", "rope", "llama"),  # no version: MiniCPM-V 2.5 (Llama 3)
        ("InternVLChatModel", "needs its language model's config", None),
        ("Phi3VForCausalLM", "rope", "phi3"),
        ("MambaForCausalLM", "nope", "mamba"),
        ("WhisperForConditionalGeneration", "not implemented", "whisper"),
    ],
)
def test_what_the_reader_says_of_named_families(name, outcome, family):
    got = reading(name)
    assert (got["outcome"], got["family"]) == (outcome, family), got["text"]


def test_the_zoo_table_wraps_names_between_words_and_names_each_architecture_once(monkeypatch):
    """The model zoo's table (hooks/corpus_table.py) fits the page.

    A name may wrap only between its words, and a wrapper's sentence does not repeat the
    architecture its row names.
    """
    import re

    import tests.vllm_reading as vllm_reading
    from hooks.corpus_table import _breakable, render_vllm

    assert _breakable("Qwen2_5_VLForConditionalGeneration") == (
        "Qwen2_<wbr>5_<wbr>VLFor<wbr>Conditional<wbr>Generation"
    )
    assert _breakable("GPT2LMHeadModel") == "GPT2<wbr>LMHead<wbr>Model"
    assert _breakable("–") == "–"
    picked = [("InternVLChatModel", "multimodal"), ("LlamaForCausalLM", "text")]
    few = {**registry(), "architectures": [BY_NAME[key] for key in picked]}
    monkeypatch.setattr(vllm_reading, "registry", lambda: few)
    rows = re.findall(r"<tr><td><code>(.*?)</code></td>(.*?)</tr>", render_vllm())
    says = {name.replace("<wbr>", ""): re.findall(r"<td>(.*?)</td>", cells) for name, cells in rows}
    assert list(says) == [name for name, _ in picked]
    wrapper, llama = says["InternVLChatModel"], says["LlamaForCausalLM"]
    assert wrapper[0] == "multimodal, 0002bff" and llama[:3] == ["text, 0002bff", "llama", "RoPE"]
    assert wrapper[-1].startswith("Its language model is its llm_config, which this config")
    assert llama[-1] == "half pairs, 128 of 128 rotated, base 10000"
