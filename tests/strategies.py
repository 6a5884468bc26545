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
