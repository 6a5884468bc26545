"""Audio, speech, video and time-series families against their own code in transformers.

The rows are in posenc_ref/models/families/media.py. For each family that rotates a 1-D
sequence: its config class with tiny sizes, its own rotary module fed positions (inside and far
past its context) and its own ``apply_rotary_pos_emb`` on random q and k; posenc_ref's
``RotaryEmbedding.from_hf_config`` on the same config object, and on its dict, must agree within
HF's float32-angle bound, and the other layout must not (negative control). Where a wrapper
keeps the rotary in a sub-config, the readers read the sub-config transformers builds there.
Xcodec2 and NeuCodec turn each head by its index, which their attention scores do not see; the
Qwen2.5-Omni DiT rotates its first head only. Nothing is downloaded (random weights).
"""

import importlib
import math

import pytest
import torch

from posenc_ref import RotaryEmbedding
from posenc_ref.encodings import positional_encoding
from posenc_ref.models import NoRopeError, rope_spec
from posenc_ref.models.families import PARTS

pytestmark = pytest.mark.peers

ULP = 2.0**-24
TINY = dict(hidden_size=64, num_attention_heads=4)
POSITIONS = torch.tensor([0, 1, 2, 7, 100, 4095, 9000, 40000])  # past every default context

# model_type -> (folder of its modeling file, its rotary class, extra sizes). The config class is
# transformers' own for the model_type; the defaults not given are the class's (its released
# checkpoints': Mimi, PE Audio, TimesFM 2.5, LASR, Nemotron's encoders).
CASES = {
    "mimi": ("mimi", "MimiRotaryEmbedding", {"head_dim": 16}),
    "pocket_tts_audio_tokenizer": (
        "pocket_tts_audio_tokenizer", "PocketTTSAudioTokenizerRotaryEmbedding", {"head_dim": 16}),
    "pe_audio_encoder": ("pe_audio", "PeAudioEncoderRotaryEmbedding", {"head_dim": 16}),
    "pe_video_encoder": ("pe_video", "PeVideoEncoderRotaryEmbedding", {"head_dim": 16}),
    "pe_audio_video_encoder": (
        "pe_audio_video", "PeAudioVideoEncoderRotaryEmbedding", {"head_dim": 16}),
    "timesfm2_5": ("timesfm2_5", "TimesFm2_5RotaryEmbedding", {"head_dim": 16}),
    "lasr_encoder": ("lasr", "LasrEncoderRotaryEmbedding", {}),
    "nemotron3_5_transcribe_asr_audio": (
        "nemotron3_5_transcribe", "Nemotron3_5TranscribeRotaryEmbedding", {}),
    "nemotron3_5_transcribe_word_timestamp": (
        "nemotron3_5_transcribe", "Nemotron3_5TranscribeRotaryEmbedding", {}),
    "nemotron3_diarization_audio": (
        "nemotron3_diarization", "Nemotron3DiarizationRotaryEmbedding", {}),
}  # fmt: skip


@pytest.fixture(scope="module")
def transformers():
    return pytest.importorskip("transformers")


def modeling(folder: str):
    return importlib.import_module(f"transformers.models.{folder}.modeling_{folder}")


def config_of(model_type: str, **kwargs):
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type](**kwargs)


def their_rotation(model_type: str, config, q, k):
    """The family's own module and function on q and k (batch, heads, seq, head_dim)."""
    folder, rotary, _ = CASES[model_type]
    m = modeling(folder)
    module = getattr(m, rotary)(config)
    cos, sin = module(q, POSITIONS[None])
    return m.apply_rotary_pos_emb(q, k, cos, sin)


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, transformers):
    """(model_type, tiny config, q, k, their rotated q and k): built once per family."""
    model_type = request.param
    config = config_of(model_type, **TINY, **CASES[model_type][2])
    g = torch.Generator().manual_seed(sum(map(ord, model_type)))
    head_dim = rope_spec(config).head_dim
    q, k = (torch.randn(1, 4, len(POSITIONS), head_dim, generator=g) for _ in range(2))
    return model_type, config, q, k, their_rotation(model_type, config, q, k)


def rotate(config, q, k, *, layout=None):
    spec = rope_spec(config)
    module = RotaryEmbedding.from_hf_config(config)
    if layout is not None:  # the negative control: the same widths and base, the other layout
        module = RotaryEmbedding(spec.head_dim, rotary_dim=spec.rotary_dim, base=spec.base,
                                 layout=layout, max_len=int(POSITIONS.max()) + 1)  # fmt: skip
    return module.to(torch.float64)(q.double(), k.double(), positions=POSITIONS)


def bound(config, q, k, largest: int = int(POSITIONS.max())) -> float:
    """HF's float32-angle bound at positions up to ``largest``, on vectors as large as q and k."""
    spec = rope_spec(config)
    angle = ULP * (largest + 1) * (math.log(spec.base) + 10)
    return angle * 2 * float(max(q.abs().max(), k.abs().max())) + 16 * ULP


def gap(ours, theirs) -> float:
    return max(float((a - b.double()).abs().max()) for a, b in zip(ours, theirs, strict=True))


def test_rotation_agrees_with_the_family_code(case):
    """The config object and its dict both read to the family's rotation, within the bound."""
    model_type, config, q, k, theirs = case
    limit = bound(config, q, k)
    assert gap(rotate(config, q, k), theirs) <= limit, model_type
    assert gap(rotate(config.to_dict(), q, k), theirs) <= limit, model_type
    spec = rope_spec(config)
    assert spec.model_type == model_type and spec.head_dim == 16


def test_the_other_layout_misses(case):
    """Negative control: the same widths and base with the other pair layout miss by far."""
    model_type, config, q, k, theirs = case
    other = "half" if rope_spec(config).layout == "interleaved" else "interleaved"
    near = slice(0, 5)  # positions up to 100, where the bound is tight
    ours = rotate(config, q, k, layout=other)
    missed = gap([t[..., near, :] for t in ours], [t[..., near, :] for t in theirs])
    assert missed > 100 * bound(config, q, k, largest=100)


def test_the_base_is_read(case):
    """A base other than the class's is read from rope_parameters (and changes the rotation)."""
    model_type, config, q, k, theirs = case
    rope = {**config.rope_parameters, "rope_theta": 12345.0}
    other = config_of(model_type, **TINY, **CASES[model_type][2], rope_parameters=rope)
    assert rope_spec(other).base == 12345.0
    mine = their_rotation(model_type, other, q, k)
    assert gap(rotate(other, q, k), mine) <= bound(other, q, k)
    near = slice(0, 5)
    missed = gap([t[..., near, :].double() for t in mine], [t[..., near, :] for t in theirs])
    assert missed > 100 * bound(config, q, k, largest=100)


def test_nemotron_transcribe_rotates_the_first_half_of_each_head(transformers):
    spec = rope_spec(config_of("nemotron3_5_transcribe_asr_audio"))
    assert (spec.head_dim, spec.rotary_dim, spec.layout) == (128, 64, "half")


# --------------------------------------------------------------------------- wrappers


def sub_config(config, path: str):
    for part in path.split("."):
        config = getattr(config, part)
    return config


@pytest.mark.parametrize("wrapper", sorted(PARTS))
def test_a_wrapper_is_read_through_the_part_transformers_builds(transformers, wrapper):
    """The wrapper's class default reads as the sub-config its class builds, and says which."""
    config = config_of(wrapper)
    path, inner = [], config
    while inner.model_type in PARTS:
        part = PARTS[inner.model_type]
        inner = sub_config(inner, part.path)
        assert inner.model_type == part.model_type
        path.append(part.path)
    try:
        expected = rope_spec(inner)
    except NotImplementedError as error:  # the Qwen2.5-Omni DiT: refused the same way
        with pytest.raises(NotImplementedError, match=str(error)[:60].replace("(", r"\(")):
            rope_spec(config)
        return
    for given in (config, config.to_dict()):
        spec = rope_spec(given)
        assert spec.inv_freq.equal(expected.inv_freq)
        assert (spec.head_dim, spec.rotary_dim, spec.layout, spec.base) == (
            expected.head_dim, expected.rotary_dim, expected.layout, expected.base)  # fmt: skip
        assert f"read from {'.'.join(path)} " in spec.notes[0]
    encoding = positional_encoding(config.to_dict())
    assert encoding.kind == "rope" and f"read from {'.'.join(path)} " in encoding.notes[0]


def test_a_wrapper_part_that_is_not_a_dict_is_refused():
    with pytest.raises(TypeError, match=r"audio_config must be a dict or null \(pe_audio's"):
        rope_spec({"model_type": "pe_audio", "audio_config": [1, 2]})


# --------------------------------------------------------------------------- no positions


@pytest.mark.parametrize("model_type", ["xcodec2", "neucodec"])
def test_codec_rotation_by_head_index_leaves_the_scores_unchanged(transformers, model_type):
    """Their decoder turns head h by h * w_i at every token: q . k, hence attention, is unchanged.

    The decoder's own position_ids (arange(num_attention_heads)), rotary module and
    apply_rotary_pos_emb(unsqueeze_dim=2), as its forward calls them.
    """
    m = modeling(model_type)
    config = config_of(model_type, hidden_size=64, num_attention_heads=4, head_dim=16)
    module = getattr(m, [n for n in dir(m) if n.endswith("RotaryEmbedding")][0])(config)
    g = torch.Generator().manual_seed(1)
    q, k = (torch.randn(1, 4, 9, 16, generator=g) for _ in range(2))
    cos, sin = module(q, torch.arange(4)[None])
    qr, kr = m.apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2)
    assert float((qr - q).abs().max()) > 0.1  # the heads do turn
    scores, rotated = q @ k.transpose(-1, -2), qr @ kr.transpose(-1, -2)
    torch.testing.assert_close(rotated, scores, atol=1e-5, rtol=1e-5)
    with pytest.raises(NoRopeError, match="a rotation by head index, not by position"):
        rope_spec(config)
    assert positional_encoding(config.to_dict()).kind == "nope"


# --------------------------------------------------------------------------- Qwen2.5-Omni's DiT


def test_qwen2_5_omni_dit_rotates_its_first_head_only_and_is_refused(transformers):
    """The refusal's facts, from the DiT's own attention.

    Head 0 is read interleaved and written in half order; the other heads are untouched.
    """
    from transformers import AttentionInterface

    m = modeling("qwen2_5_omni")
    config = config_of("qwen2_5_omni_dit", hidden_size=64, num_attention_heads=4, head_dim=16)
    captured = []

    def capture(module, query, key, value, *args, **kwargs):
        captured.append((query.detach().clone(), key.detach().clone()))
        return torch.zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1]), None

    AttentionInterface.register("posenc_ref_media_capture", capture)
    config._attn_implementation = "posenc_ref_media_capture"
    attention = m.DiTAttention(config).eval()
    n = 6
    x = torch.randn(1, n, 64, generator=torch.Generator().manual_seed(2))
    cos, sin = m.Qwen2_5OmniDiTRotaryEmbedding(config)(x, torch.arange(n)[None])
    with torch.no_grad():
        attention(x, position_embeddings=(cos, sin))
        q = attention.to_q(x).view(1, n, 4, 16).transpose(1, 2)
    (q_hf, _), = captured  # fmt: skip
    torch.testing.assert_close(q_hf[:, 1:], q[:, 1:], rtol=0, atol=0)  # heads 1.. unrotated
    # head 0: pairs (2i, 2i + 1) turned by t * 10000^(-2i/16), written (evens, odds)
    angle = torch.arange(n, dtype=torch.float64)[:, None] * 10000.0 ** (
        -torch.arange(0, 16, 2, dtype=torch.float64) / 16)  # fmt: skip
    head = q[0, 0].double()
    even, odd = head[:, 0::2], head[:, 1::2]
    expected = torch.cat([even * angle.cos() - odd * angle.sin(),
                          odd * angle.cos() + even * angle.sin()], -1)  # fmt: skip
    torch.testing.assert_close(q_hf[0, 0].double(), expected, atol=1e-5, rtol=0)
    with pytest.raises(NotImplementedError, match="RoPE on the first attention head only"):
        rope_spec(config)
