"""The kit on real outside implementations: mlx-lm and mlx-vlm over MLX, keras-hub, ONNX Runtime.

Each runs on the CPU and is installed by the frameworks extra (CI installs it); each test skips
cleanly without its library. Where one differs from transformers, the test pins the diagnosis
the kit gives, and the site says what differs ([other frameworks](frameworks.md)).
"""

import os

import numpy as np
import pytest
import torch

from posenc_ref import RotaryEmbedding, rope_cos_sin
from posenc_ref.models import released_config
from posenc_ref.testing import assert_rope_equal, offset_fn, positions_fn, qk_fn

pytestmark = pytest.mark.peers
BOTH = (torch.float32, torch.bfloat16)


def diagnosis(check, *args, **kwargs) -> list[str]:
    with pytest.raises(AssertionError) as info:
        check(*args, **kwargs)
    lines = str(info.value).splitlines()
    return [line.split(":")[0].strip(" -") for line in lines if line.startswith("    - ")]


def llama(rope_scaling=None, theta=10000.0, max_len=4096, **extra):
    config = {
        "model_type": "llama",
        "hidden_size": 256,
        "num_attention_heads": 4,
        "max_position_embeddings": max_len,
        "rope_theta": theta,
        **extra,
    }
    if rope_scaling is not None:
        config["rope_scaling"] = rope_scaling
    return config


# --------------------------------------------------------------------------- mlx-lm over MLX

LLAMA3 = {
    "rope_type": "llama3",
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}


@pytest.mark.parametrize(
    "name, config, traditional",
    [
        ("default", llama(), False),
        ("traditional", llama(), True),
        ("linear", llama({"rope_type": "linear", "factor": 4.0}), False),
        ("dynamic", llama({"rope_type": "dynamic", "factor": 4.0}), False),
        ("llama3", llama(LLAMA3, theta=500000.0, max_len=131072), False),
        ("yarn", llama(YARN, theta=1e6, max_len=131072), False),
        ("partial", {**llama(), "model_type": "phi", "partial_rotary_factor": 0.5}, False),
    ],
)
def test_mlx_lm_agrees_with_transformers(name, config, traditional):
    """mlx-lm's initialize_rope (over mx.fast.rope) matches HF's RoPE for the same config.

    ``traditional=True`` is MLX's name for the interleaved layout.
    """
    pytest.importorskip("mlx.core")
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils")
    reference = RotaryEmbedding.from_hf_config(config)
    if traditional:  # Meta's layout for the same frequencies
        reference = RotaryEmbedding(reference.head_dim, base=reference.base, layout="interleaved")
    mlx_rope = rope_utils.initialize_rope(
        reference.rotary_dim,
        reference.base,
        traditional,
        config.get("rope_scaling"),
        config["max_position_embeddings"],
    )
    assert_rope_equal(offset_fn(mlx_rope, arrays="mlx"), reference, dtypes=BOTH)


def test_mlx_lm_longrope_uses_the_long_factors_at_every_length():
    """mlx-lm's SuScaledRoPE (its Phi-3 RoPE) never switches to short_factor.

    transformers uses short_factor while a call stays inside original_max_position_embeddings
    and long_factor past it; mlx-lm uses long_factor always.
    """
    pytest.importorskip("mlx.core")
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils")
    config = released_config("Phi-3.5-mini (LongRoPE)")
    reference = RotaryEmbedding.from_hf_config(config)
    scaling = config["rope_scaling"]
    mlx_rope = rope_utils.SuScaledRoPE(
        reference.rotary_dim,
        base=reference.base,
        max_position_embeddings=config["max_position_embeddings"],
        original_max_position_embeddings=config["original_max_position_embeddings"],
        short_factor=scaling["short_factor"],
        long_factor=scaling["long_factor"],
    )
    fn = offset_fn(mlx_rope, arrays="mlx")
    found = diagnosis(assert_rope_equal, fn, reference)
    assert found == ["the LongRoPE switch fixed at load time (long factors)"]
    # past the original context the two agree
    long_only = RotaryEmbedding(
        reference.head_dim,
        base=reference.base,
        layout="half",
        rotary_dim=reference.rotary_dim,
        scaling=reference.frequencies(config["max_position_embeddings"]),
    )
    assert_rope_equal(fn, long_only, dtypes=BOTH)


def test_mlx_lm_yarn_on_gpt_oss_is_named_truncated():
    """mlx-lm's YarnRoPE floors and ceils YaRN's band edges; gpt-oss's config says not to.

    Its yarn_find_correction_range always truncates (llama.cpp's convention), so on gpt-oss
    (``truncate: false``) the kit names it; on Qwen2.5's YaRN (no ``truncate`` key, so truncated)
    it agrees.
    """
    pytest.importorskip("mlx.core")
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils")
    for name, agrees in (("gpt-oss (YaRN, truncate false)", False), ("Qwen2.5 (YaRN)", True)):
        config = released_config(name)
        reference = RotaryEmbedding.from_hf_config(config)
        mlx_rope = rope_utils.initialize_rope(
            reference.rotary_dim, reference.base, False, config["rope_scaling"],
            config["max_position_embeddings"],
        )  # fmt: skip
        fn = offset_fn(mlx_rope, arrays="mlx")
        if agrees:
            assert_rope_equal(fn, reference)
            continue
        with pytest.raises(AssertionError) as info:
            assert_rope_equal(fn, reference)
        named = [line.split(":")[0] for line in str(info.value).splitlines() if
                 line.startswith("    - ")]  # fmt: skip
        assert named == ["    - YaRN's band edges truncated"]
        assert "Wrong: pairs 9..17 of 0..31" in str(info.value)  # as the frameworks page says


# --------------------------------------------------------------------------- keras-hub on JAX


@pytest.fixture(scope="module")
def keras_rope():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    pytest.importorskip("jax")
    layers = pytest.importorskip("keras_hub.layers")
    import keras

    if keras.backend.backend() != "jax":
        pytest.skip(f"keras runs on {keras.backend.backend()}, not JAX, in this process")
    return layers.RotaryEmbedding


@pytest.mark.parametrize(
    "kwargs, scaling",
    [
        ({}, None),
        ({"scaling_factor": 4.0}, {"method": "linear", "factor": 4.0}),
        (
            {"scaling_factor": 4.0, "rope_type": "yarn", "original_max_position_embeddings": 4096},
            {"method": "yarn", "factor": 4.0, "original_max_len": 4096},
        ),
    ],
    ids=["default", "linear", "yarn"],
)
def test_keras_hub_on_jax_agrees_with_transformers(keras_rope, kwargs, scaling):
    """keras-hub's RotaryEmbedding (KerasHub's Llama, Mistral, Gemma...) on the JAX backend.

    Its inputs are (batch, seq, heads, dim) by default: sequence_axis=2 takes the kit's
    (batch, heads, seq, dim). Both of its call forms are checked.
    """
    layer = keras_rope(max_wavelength=10000, sequence_axis=2, **kwargs)
    reference = RotaryEmbedding(64, layout="half", scaling=scaling)
    assert_rope_equal(offset_fn(lambda x, o: layer(x, start_index=o), arrays="jax"), reference)
    assert_rope_equal(positions_fn(lambda x, p: layer(x, positions=p), arrays="jax"), reference)


def test_keras_hub_dynamic_divides_every_frequency(keras_rope):
    """keras-hub's rope_type="dynamic" is neither HF's dynamic NTK nor NTK-aware scaling.

    It divides every frequency by factor^(d/(d-2)), pair 0 included; NTK-aware raises the base
    to base * factor^(d/(d-2)), which leaves pair 0 alone and divides the slowest by factor.
    """
    layer = keras_rope(
        max_wavelength=10000, scaling_factor=4.0, rope_type="dynamic", sequence_axis=2
    )
    fn = offset_fn(lambda x, o: layer(x, start_index=o), arrays="jax")
    reference = RotaryEmbedding(64, layout="half", scaling={"method": "ntk_aware", "factor": 4.0})
    with pytest.raises(AssertionError) as info:
        assert_rope_equal(fn, reference)
    text = str(info.value)
    assert "- every frequency divided by one constant" in text
    assert "by 4.183 = factor^(d/(d-2)) = 4^(64/62)" in text


# --------------------------------------------------------------------------- ONNX Runtime


def _onnx_session(interleaved: int, rotary_dim: int = 0):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    node = helper.make_node(
        "RotaryEmbedding",
        ["x", "cos", "sin", "pos"],
        ["y"],
        interleaved=interleaved,
        rotary_embedding_dim=rotary_dim,
    )
    graph = helper.make_graph(
        [node],
        "rope",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "h", "s", "d"]),
            helper.make_tensor_value_info("cos", TensorProto.FLOAT, ["m", "p"]),
            helper.make_tensor_value_info("sin", TensorProto.FLOAT, ["m", "p"]),
            helper.make_tensor_value_info("pos", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "h", "s", "d"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    onnx.checker.check_model(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize(
    "layout, rotary_dim", [("half", 64), ("interleaved", 64), ("half", 32)], ids=str
)
def test_onnx_runtime_rotary_embedding_operator(layout, rotary_dim):
    """ONNX's RotaryEmbedding operator (opset 23) as ONNX Runtime's CPU kernel runs it.

    An engine kernel that takes a precomputed cos/sin table: given posenc_ref's float32 table
    (float64 angles) it meets the strict check, float32 angles refused.
    """
    session = _onnx_session(int(layout == "interleaved"), 0 if rotary_dim == 64 else rotary_dim)
    reference = RotaryEmbedding(64, layout=layout, rotary_dim=rotary_dim)
    cos, sin = rope_cos_sin(torch.arange((1 << 17) + 1), reference.inv_freq)
    cos, sin = cos.numpy(), sin.numpy()

    def ort_rope(x, positions):
        pos = np.broadcast_to(positions[None], (x.shape[0], x.shape[2])).astype(np.int64)
        return session.run(None, {"x": x, "cos": cos, "sin": sin, "pos": pos})[0]

    fn = positions_fn(ort_rope, arrays="numpy")
    assert_rope_equal(fn, reference, float32_angles=False)
    other = RotaryEmbedding(
        64, layout="half" if layout == "interleaved" else "interleaved", rotary_dim=rotary_dim
    )
    assert diagnosis(assert_rope_equal, fn, other) == ["the other pair layout"]


# ------------------------------------------------------------------- M-RoPE: mlx-vlm, mlx-lm

MROPE_MODELS = {
    "qwen2_vl": ("Qwen2-VL (M-RoPE)", "Qwen2RotaryEmbedding"),
    "qwen2_5_vl": ("Qwen2.5-VL (M-RoPE)", "Qwen2RotaryEmbedding"),
    "qwen3_vl": ("Qwen3-VL (interleaved M-RoPE)", "Qwen3VLRotaryEmbedding"),
}


@pytest.mark.parametrize("family", sorted(MROPE_MODELS))
def test_mlx_vlm_mrope_passes_with_image_positions(family):
    """mlx-vlm's language-side M-RoPE of the Qwen VL families, driven with text, image, video.

    Its rotary module takes position_ids (3, batch, seq_len); text calls get three equal rows.
    """
    mx = pytest.importorskip("mlx.core")
    import importlib

    language = importlib.import_module(f"mlx_vlm.models.{family}.language")
    name, cls = MROPE_MODELS[family]
    config = released_config(name)
    text = config.get("text_config", config)
    reference = RotaryEmbedding.from_hf_config(config)
    rope = getattr(language, cls)(
        reference.head_dim,
        max_position_embeddings=text["max_position_embeddings"],
        base=text["rope_theta"],
        rope_scaling=text.get("rope_scaling") or text.get("rope_parameters"),
    )

    def fn(q, k, positions):
        rows = positions if positions.ndim == 2 else mx.stack([positions] * 3)
        return rope.apply_rotary(q, k, rows[:, None, :])

    assert_rope_equal(qk_fn(fn, arrays="mlx"), reference, dtypes=BOTH)


def test_mlx_lm_mrope_is_the_1d_fallback():
    """mlx-lm's initialize_rope maps 'mrope' to a plain RoPE: image tokens by their index."""
    pytest.importorskip("mlx.core")
    rope_utils = pytest.importorskip("mlx_lm.models.rope_utils")
    config = released_config("Qwen2-VL (M-RoPE)")
    reference = RotaryEmbedding.from_hf_config(config)
    mlx_rope = rope_utils.initialize_rope(
        reference.rotary_dim, reference.base, False, config["rope_scaling"],
        config["max_position_embeddings"],
    )  # fmt: skip
    fn = offset_fn(lambda x, offset: mlx_rope(x, offset=offset), arrays="mlx")
    assert diagnosis(assert_rope_equal, fn, reference) == ["the 1-D fallback"]
