"""Logits of tiny random-weight transformers models, with their own RoPE and with posenc_ref's.

Three families, one per kind of RoPE this project added: GLM-4 (partial rotary, interleaved
pairs), Phi-4-mini (LongRoPE on a partial rotary part, with its released factor lists) and
Qwen2-VL (M-RoPE, positions of text + an image grid + text). Each model is built from its
transformers config class with tiny sizes (no download, no weights beyond a seeded random init)
and run twice on the same tokens and positions: as transformers runs it, and with its rotary
module and ``apply_rotary_pos_emb`` replaced by ``RotaryEmbedding.from_hf_config(model.config)``.

The two runs differ only in how cos and sin are computed (HF: float32 angles; posenc_ref:
float64 angles), so the logits agree to a small fraction of their spread; a negative control per
family (the mistake a port could make: wrong layout, wrong factor list, no M-RoPE) moves them by
far more, so the comparison can fail. Skipped without transformers.
"""

import copy
import math

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.models import released_config
from posenc_ref.mrope import mrope_positions

pytestmark = pytest.mark.peers

TINY = {
    "num_hidden_layers": 2,
    "num_key_value_heads": 1,
    "intermediate_size": 64,
    "vocab_size": 97,
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
}


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def build(transformers, family: str, config: dict):
    """A seeded random-weight causal LM, its modeling module and its text model."""
    import importlib

    torch.manual_seed(0)
    config = copy.deepcopy(config)
    model_type = config.pop("model_type")
    hf_config = transformers.AutoConfig.for_model(model_type, **config)
    hf_config._attn_implementation = "eager"
    model = transformers.AutoModelForCausalLM.from_config(hf_config) if family != "qwen2_vl" else (
        transformers.Qwen2VLForConditionalGeneration(hf_config)
    )  # fmt: skip
    model.eval()
    modeling = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    return model, modeling


def text_model(model):
    inner = model.model
    return getattr(inner, "language_model", inner)


def logits(model, modeling, input_ids, position_ids, ours=None, monkeypatch=None):
    """Logits; with ``ours``, posenc_ref's module rotates q and k instead of the model's RoPE."""
    if ours is None:
        with torch.no_grad():
            return model(input_ids=input_ids, position_ids=position_ids).logits.double()
    rotary = text_model(model).rotary_emb

    def positions_as_tables(x, position_ids, *args, **kwargs):
        return position_ids, position_ids  # handed on to apply_rotary_pos_emb as "cos, sin"

    def rotate_with_posenc_ref(q, k, cos, sin, *args, **kwargs):
        positions = cos  # (batch, seq) or (3, batch, seq); q, k: (batch, heads, seq, head_dim)
        return ours(q, k, positions.unsqueeze(-2))

    with monkeypatch.context() as patch:
        patch.setattr(rotary, "forward", positions_as_tables)
        patch.setattr(modeling, "apply_rotary_pos_emb", rotate_with_posenc_ref)
        with torch.no_grad():
            return model(input_ids=input_ids, position_ids=position_ids).logits.double()


def compare(model, modeling, input_ids, position_ids, ours, wrong, monkeypatch):
    """Max |difference| of the logits, ours vs theirs and the wrong variant vs theirs."""
    theirs = logits(model, modeling, input_ids, position_ids)
    mine = logits(model, modeling, input_ids, position_ids, ours, monkeypatch)
    bad = logits(model, modeling, input_ids, position_ids, wrong, monkeypatch)
    spread = float(theirs.std())
    return float((mine - theirs).abs().max()) / spread, float((bad - theirs).abs().max()) / spread


def tolerance(largest_position: int, base: float) -> float:
    """HF's float32-angle error bound at the largest position, as a bound on logits / spread.

    The bound is the one of tests/test_peers.py.
    """
    return 2.0**-24 * (largest_position + 1) * (math.log(base) + 10) + 8 * 2.0**-24


def check(good, bad, largest_position, base, where):
    """Ours within the bound, the wrong variant far from ours.

    The wrong variant must also fall outside the bound where the bound is tight (near position
    0); far out, the q/k tests of test_models_hf.py are the proof.
    """
    tol = tolerance(largest_position, base)
    print(f"{where}: ours {good:.2e}, wrong {bad:.2e}, tolerance {tol:.2e}")
    assert good <= tol, (where, good, tol)
    assert bad > 20 * good, (where, bad, good)
    if largest_position < 1000:
        assert bad > 10 * tol, (where, bad, tol)


def tokens(seq_len):
    return torch.randint(
        0, TINY["vocab_size"], (2, seq_len), generator=torch.Generator().manual_seed(1)
    )


def test_glm4_partial_interleaved(transformers, monkeypatch):
    config = {**released_config("GLM-4"), **TINY, "hidden_size": 256, "num_attention_heads": 2}
    model, modeling = build(transformers, "glm4", config)
    ours = RotaryEmbedding.from_hf_config(model.config)
    assert (ours.rotary_dim, ours.layout) == (64, "interleaved")
    wrong = RotaryEmbedding(128, rotary_dim=64, layout="half")  # the usual HF layout: wrong here
    ids = tokens(12)
    for start in (0, 30000):
        positions = torch.arange(start, start + 12).expand(2, -1)
        good, bad = compare(model, modeling, ids, positions, ours, wrong, monkeypatch)
        check(good, bad, start + 11, ours.base, f"GLM-4 from {start}")


def test_phi4_mini_longrope_partial(transformers, monkeypatch):
    config = {**released_config("Phi-4-mini (LongRoPE, partial)"), **TINY}
    config.update(hidden_size=256, num_attention_heads=2)  # head_dim 128, as released
    model, modeling = build(transformers, "phi3", config)
    ours = RotaryEmbedding.from_hf_config(model.config)
    assert (ours.rotary_dim, ours.method) == (96, "longrope")
    # the mistake: the short list (plain RoPE here) kept past the original context
    spec = ours.spec
    from posenc_ref import ScaledFrequencies

    wrong = RotaryEmbedding(
        128, layout="half", rotary_dim=96,
        scaling=ScaledFrequencies(spec.inv_freq, spec.attention_factor),
    )  # fmt: skip
    ids = tokens(12)
    inside = torch.arange(100, 112).expand(2, -1)
    good, bad = compare(model, modeling, ids, inside, ours, wrong, monkeypatch)
    assert good <= tolerance(111, ours.base) and bad == pytest.approx(good, abs=1e-12)
    past = torch.arange(4090, 4102).expand(2, -1)  # largest position + 1 > 4096: the long list
    good, bad = compare(model, modeling, ids, past, ours, wrong, monkeypatch)
    check(good, bad, 4101, ours.base, "Phi-4-mini past 4096")


def test_qwen2_vl_mrope(transformers, monkeypatch):
    text = {**released_config("Qwen2-VL (M-RoPE)"), **TINY}
    text.update(hidden_size=256, num_attention_heads=2)  # head_dim 128: mrope_section 16, 24, 24
    text.pop("model_type")
    vision = {"depth": 1, "embed_dim": 32, "num_heads": 2, "hidden_size": 256}
    config = {"model_type": "qwen2_vl", "text_config": text, "vision_config": vision}
    model, modeling = build(transformers, "qwen2_vl", config)
    ours = RotaryEmbedding.from_hf_config(model.config)
    assert ours.mrope_section == (16, 24, 24)
    plain = RotaryEmbedding(128, base=ours.base, layout="half")

    def wrong(q, k, positions):  # a text-only port: one position row (time), no M-RoPE
        return plain(q, k, positions[0])

    for start in (0, 40000):
        positions = mrope_positions(4, (1, 6, 8), 4, start=start)  # (3, 56)
        ids = tokens(positions.shape[1])
        position_ids = positions[:, None, :].expand(3, 2, -1)  # (3, batch, seq)
        good, bad = compare(model, modeling, ids, position_ids, ours, wrong, monkeypatch)
        check(good, bad, int(positions.max()), ours.base, f"Qwen2-VL from {start}")
