"""Hypothesis strategies shared by the test modules."""

from hypothesis import strategies as st

# Even widths, small enough for the loop oracle; 2 is the edge case (a single pair).
dims = st.integers(min_value=1, max_value=64).map(lambda half: 2 * half)
# Bases from just above 1 to the Llama 3 value and beyond.
bases = st.sampled_from([1.5, 2.0, 100.0, 10000.0, 500000.0]) | st.floats(
    min_value=1.01, max_value=1e6, allow_nan=False, allow_infinity=False
)
positions = st.integers(min_value=0, max_value=10_000)
offsets = st.integers(min_value=-2_000, max_value=2_000)
table_lengths = st.integers(min_value=0, max_value=64)

# --- rope strategies (rope.py, rope_scaling.py) ---

# Rotary widths small enough for the loop oracle; 2 (a single pair) is the edge case.
head_dims = st.integers(min_value=1, max_value=16).map(lambda half: 2 * half)
# NTK-style methods need at least two pairs (the exponent is dim / (dim - 2)).
ntk_dims = st.integers(min_value=2, max_value=64).map(lambda half: 2 * half)
layouts = st.sampled_from(["interleaved", "half"])
# RoPE positions up to 2**17: long-context values, still cheap for float64 angles.
rope_positions = st.integers(min_value=0, max_value=1 << 17)
# Context-extension ratios s >= 1; 1 is the identity edge case.
factors = st.sampled_from([1.0, 2.0, 4.0, 8.0, 16.0, 32.0]) | st.floats(
    min_value=1.0, max_value=64.0, allow_nan=False, allow_infinity=False
)
original_max_lens = st.sampled_from([512, 2048, 4096, 8192]) | st.integers(
    min_value=16, max_value=1 << 17
)
attention_factors = st.floats(min_value=0.5, max_value=2.0, allow_nan=False)
# Seeds for torch.Generator: hypothesis shrinks the seed, torch draws the tensor.
seeds = st.integers(min_value=0, max_value=2**32 - 1)
