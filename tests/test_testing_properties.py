"""Property checks on a user's fn, the kit's strategies, and the optional hypothesis dependency."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc_ref.testing as kit
from posenc_ref import RotaryEmbedding
from posenc_ref.testing import (
    assert_composition,
    assert_layout_permutation,
    assert_norm_preserved,
    assert_relative_property,
)
from tests.rope_implementations import hf_rope, meta_style, user_rope

CORRECT = {
    "ours interleaved": lambda: RotaryEmbedding(64),
    "ours half, base 500000": lambda: RotaryEmbedding(64, layout="half", base=500000.0),
    "ours partial": lambda: RotaryEmbedding(64, rotary_dim=16),
    "float32 user code": lambda: user_rope(64),
    "meta style": lambda: meta_style(64),
    "llama3 frequencies": lambda: RotaryEmbedding(64, base=500000.0, scaling={"method": "llama3"}),
}


@pytest.mark.parametrize("make", CORRECT.values(), ids=CORRECT)
def test_correct_implementations_have_every_property(make):
    fn = make()
    assert_relative_property(fn, 64)
    assert_norm_preserved(fn, 64)
    assert_composition(fn, 64)
    assert_composition(fn, 64, shift=0)


@pytest.mark.peers
def test_hf_transformers_has_every_property():
    pytest.importorskip("transformers")
    fn = hf_rope(64, 10000.0)
    assert_relative_property(fn, 64)
    assert_norm_preserved(fn, 64)
    assert_composition(fn, 64)


def test_attention_factor_is_passed_to_the_norm_and_composition_checks():
    """YaRN's cos and sin carry a: norms scale by a; composing two rotations carries a^2."""
    fn = RotaryEmbedding(64, scaling={"method": "yarn", "factor": 8.0, "original_max_len": 4096})
    a = fn.attention_factor
    with pytest.raises(AssertionError, match="A constant ratio is an attention factor"):
        assert_norm_preserved(fn, 64)
    assert_norm_preserved(fn, 64, attention_factor=a)
    assert_composition(fn, 64, attention_factor=a, positions=torch.arange(100), shift=50)
    assert_relative_property(fn, 64, attention_factor=a)


BROKEN = {
    "table laid out for the other layout": {"table_layout": "interleaved"},
    "positions in bfloat16": {"positions_dtype": torch.bfloat16},
    "angles in bfloat16": {"angle_dtype": torch.bfloat16},
}


@pytest.mark.parametrize("bug", BROKEN.values(), ids=BROKEN)
def test_relative_property_catches_non_rotations_and_rounded_positions(bug):
    with pytest.raises(AssertionError, match="scores depend on more than the offset"):
        assert_relative_property(user_rope(64, **bug), 64)


def test_norm_check_catches_a_mixed_layout_table():
    with pytest.raises(AssertionError, match="a varying one means your fn does not rotate"):
        assert_norm_preserved(user_rope(64, table_layout="interleaved"), 64)


def test_composition_catches_shifted_positions_and_identity_at_zero():
    fn = user_rope(64, position_shift=1)
    assert_relative_property(fn, 64)  # a constant shift keeps scores relative ...
    with pytest.raises(AssertionError, match="R\\(1000\\) R\\(0\\) x differs"):
        assert_composition(fn, 64)  # ... but not R(m)R(n) = R(m + n)
    with pytest.raises(AssertionError, match="does not leave position 0 unrotated"):
        assert_composition(fn, 64, shift=0)


def test_layout_permutation_pairs():
    assert_layout_permutation(RotaryEmbedding(64), RotaryEmbedding(64, layout="half"), 64)
    assert_layout_permutation(meta_style(64), user_rope(64, layout="half"), 64)
    partial = {"rotary_dim": 16}
    assert_layout_permutation(
        RotaryEmbedding(64, **partial), RotaryEmbedding(64, layout="half", **partial), 64, **partial
    )
    with pytest.raises(AssertionError, match="not the same RoPE in the two layouts"):
        assert_layout_permutation(meta_style(64), user_rope(64, layout="half", base=20000.0), 64)
    with pytest.raises(AssertionError):  # the same layout twice is not the pair
        assert_layout_permutation(RotaryEmbedding(64), RotaryEmbedding(64), 64)


@settings(max_examples=10)
@given(kit.rope_kwargs(max_head_dim=32, partial=False), st.data())
def test_properties_hold_for_any_drawn_reference(kwargs, data):
    """Drawn with the kit's own strategies: every reference module has the four properties."""
    module = RotaryEmbedding(**kwargs)
    head_dim = kwargs["head_dim"]
    positions = data.draw(st.lists(kit.positions(4000), min_size=2, max_size=12, unique=True))
    positions = torch.tensor(positions)
    a = module.attention_factor
    assert_norm_preserved(module, head_dim, positions=positions, attention_factor=a)
    assert_relative_property(module, head_dim, positions=positions, attention_factor=a)
    if module.method not in ("dynamic_ntk",):  # its frequencies depend on the call's length
        assert_composition(module, head_dim, positions=positions, shift=7, attention_factor=a)


@settings(max_examples=10)
@given(st.data())
def test_rope_inputs_strategy_draws_valid_inputs(data):
    head_dim = data.draw(kit.head_dims(2, 16))
    q, k, positions = data.draw(kit.rope_inputs(head_dim, max_seq_len=8, max_position=1000))
    assert q.shape == k.shape and q.shape[-1] == head_dim and q.shape[-2] == positions.numel()
    assert int(positions.min()) >= 0 and int(positions.max()) <= 1000
    assert bool((positions.diff() == 1).all())


def test_bad_arguments_are_refused():
    fn = RotaryEmbedding(8)
    with pytest.raises(ValueError):
        assert_norm_preserved(fn, 7)
    with pytest.raises(ValueError):
        assert_relative_property(fn, 8, positions=[-1, 2])
    with pytest.raises(TypeError):
        assert_composition(fn, 8, shift=-1)
    with pytest.raises(TypeError):
        assert_relative_property("fn", 8)


# --- hypothesis is optional --------------------------------------------------------------------


def test_import_posenc_ref_does_not_import_hypothesis(fresh_imports):
    """In a fresh interpreter, shared with other tests (tests/fresh_interpreter.py)."""
    from tests.fresh_interpreter import modules_after

    assert "hypothesis" not in modules_after(fresh_imports, "import posenc_ref"), "imported"


def test_testing_works_without_hypothesis_except_the_strategies(fresh_imports):
    """The kit's checks run where hypothesis cannot be imported; its strategies say to install it.

    The fresh interpreter's step (tests/fresh_interpreter.py) blocks any import of hypothesis,
    after checking that neither hypothesis nor the kit was loaded before it.
    """
    from tests.fresh_interpreter import step_record

    message = step_record(fresh_imports, "the kit without hypothesis")["result"]
    assert message is not None, "no ImportError"
    assert "pip install 'posenc-ref[testing]'" in message


@pytest.mark.parametrize(
    "module_name",
    [
        "posenc_ref.testing._rope",
        "posenc_ref.testing._arrays",
        "posenc_ref.testing._adapters",
        "posenc_ref.testing._vectors",
        "posenc_ref.testing._absolute",
        "posenc_ref.testing._relative",
        "posenc_ref.testing._properties",
        "posenc_ref.testing.strategies",
        "posenc_ref.__main__",
    ],
)
def test_docstring_examples_run(module_name):
    """The kit's >>> examples, shown on the API page, run as doctests.

    The site's doctest test covers only the top-level modules of posenc_ref.
    """
    import doctest
    import importlib

    module = importlib.import_module(module_name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    for test in doctest.DocTestFinder().find(module, module_name):
        runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
