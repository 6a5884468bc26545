"""RoPE under torch.compile and torch.export (posenc_ref/_rotate.py's traced path).

Compiling is slow (seconds per graph on a small machine), so each test compiles one small
shape. Everything skips cleanly where torch.compile cannot run (no C++ compiler for inductor,
an unsupported Python); tests never assert times.
"""

import functools

import pytest
import torch

from posenc_ref import RotaryEmbedding, apply_rope, apply_rope_loop, inv_freq, rope_cos_sin

LAYOUTS = ["interleaved", "half"]
DTYPES = [torch.float32, torch.bfloat16]


@functools.cache
def _compile_problem() -> str | None:
    """Why torch.compile cannot run here, or None when it can (tried once per session).

    The probe is benchmarks/rope.py's compiled clone floor in its --quick float32 case (same
    function, shape and dtype), so that tests/test_benchmarks.py's quick run, in the same
    session, finds that graph in inductor's FX graph cache instead of compiling a second one.
    """
    x = torch.arange(2 * 3 * 12 * 16, dtype=torch.float32).reshape(2, 3, 12, 16)
    try:
        got = torch.compile(torch.clone, fullgraph=True)(x)
        if got.data_ptr() == x.data_ptr() or not torch.equal(got, x):
            return "torch.compile gave a wrong result for torch.clone"
    except Exception as exc:  # noqa: BLE001 (any failure means: no compiler here)
        return f"torch.compile is unavailable: {type(exc).__name__}: {exc}"
    return None


@pytest.fixture(autouse=True)
def _needs_compile():
    problem = _compile_problem()
    if problem:
        pytest.skip(problem)
    torch._dynamo.reset()  # a fresh cache per test: no test depends on another's graphs


def _inputs(dtype, head_dim=16, seq_len=12, rotary_dim=None):
    # (2, 3, 12, 16) is also benchmarks/rope.py's QUICK_SHAPES: the two share compiled graphs
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, seq_len, head_dim, generator=generator, dtype=torch.float64)
    positions = torch.arange(40, 40 + seq_len)
    cos, sin = rope_cos_sin(positions, inv_freq(rotary_dim or head_dim))
    return x.to(dtype), positions, cos, sin


def _assert_one_rounding(got, x, positions, layout, rotary_dim=None):
    """The result equals the float64 loop oracle up to float32 arithmetic and one final rounding."""
    width = rotary_dim or x.shape[-1]
    exact = apply_rope_loop(x.double(), positions, inv_freq(width), layout=layout, rotary_dim=width)
    eps = torch.finfo(x.dtype).eps
    if x.dtype == torch.bfloat16:
        bound = eps / 2 * exact.abs() + 1e-5  # one rounding of a float32 result
    else:
        bound = 8 * eps * (exact.abs() + 1)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert torch.all((got.double() - exact).abs() <= bound)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_compiled_apply_rope_equals_oracle(layout, dtype):
    """torch.compile(apply_rope, fullgraph=True) compiles, and rotates as the definition does."""
    x, positions, cos, sin = _inputs(dtype)
    compiled = torch.compile(apply_rope, fullgraph=True)
    got = compiled(x, cos, sin, layout=layout)
    _assert_one_rounding(got, x, positions, layout)
    eager = apply_rope(x, cos, sin, layout=layout)
    torch.testing.assert_close(got, eager, rtol=torch.finfo(dtype).eps, atol=1e-6)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_compiled_apply_rope_with_out(layout):
    """out= compiles too (the aliasing check reads data pointers only outside graphs)."""
    x, positions, cos, sin = _inputs(torch.float32)
    out = torch.empty_like(x)
    got = torch.compile(apply_rope, fullgraph=True)(x, cos, sin, layout=layout, out=out)
    assert torch.equal(out, got)
    _assert_one_rounding(out, x, positions, layout)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_compiled_partial_rotary(layout):
    """Partial rotary compiles too; the coordinates past rotary_dim come through bit for bit."""
    x, positions, cos, sin = _inputs(torch.bfloat16, head_dim=16, rotary_dim=8)
    got = torch.compile(apply_rope, fullgraph=True)(x, cos, sin, layout=layout, rotary_dim=8)
    assert torch.equal(got[..., 8:], x[..., 8:])
    _assert_one_rounding(got, x, positions, layout, rotary_dim=8)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_traced_graph_has_no_complex_numbers(layout):
    """The graph the compiler receives is real arithmetic only (fuses on CPU and GPU alike).

    Captured with a backend that records the graph instead of compiling it, so this needs no
    C++ compiler and runs fast.
    """
    graphs = []

    def record(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    x, _, cos, sin = _inputs(torch.bfloat16)
    torch.compile(apply_rope, backend=record, fullgraph=True)(x, cos, sin, layout=layout)
    (graph,) = graphs
    values = [node.meta.get("example_value", node.meta.get("val")) for node in graph.graph.nodes]
    dtypes = {value.dtype for value in values if isinstance(value, torch.Tensor)}
    assert dtypes and not any(dtype.is_complex for dtype in dtypes), dtypes


def test_compiled_rope_is_one_kernel():
    """Inductor turns the half-layout rotation of bfloat16 into a single generated kernel.

    (Upcast, rotation, rounding and concatenation fused: the result is written once.)
    """
    metrics = pytest.importorskip("torch._inductor.metrics")
    if not hasattr(metrics, "generated_kernel_count"):
        pytest.skip("this torch's inductor does not count generated kernels")
    x, positions, cos, sin = _inputs(torch.bfloat16)
    metrics.reset()
    got = torch.compile(apply_rope, fullgraph=True)(x, cos, sin, layout="half")
    assert metrics.generated_kernel_count == 1
    _assert_one_rounding(got, x, positions, "half")


def test_compiled_module():
    """A compiled RotaryEmbedding (rows computed in the graph) equals the eager module."""
    module = RotaryEmbedding(16, layout="half", rotary_dim=12, max_len=8)
    compiled = torch.compile(module, fullgraph=True)
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(1, 4, 12, 16, generator=generator)
    k = torch.randn(1, 2, 12, 16, generator=generator)
    for got, want in zip(compiled(q, k, offset=30), module(q, k, offset=30), strict=True):
        torch.testing.assert_close(got, want)


class _Attention(torch.nn.Module):
    """The smallest model around RoPE: rotate q and k at the given positions, then score."""

    def __init__(self, layout):
        super().__init__()
        self.rope = RotaryEmbedding(16, layout=layout, rotary_dim=8)

    def forward(self, q, k, positions):
        q, k = self.rope(q, k, positions)
        return q @ k.transpose(-1, -2)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_export_module_with_rotary_embedding(layout):
    """torch.export of a module using RotaryEmbedding: same scores, at a new length too."""
    model = _Attention(layout)
    generator = torch.Generator().manual_seed(2)
    q, k = torch.randn(2, 2, 10, 16, generator=generator), torch.randn(2, 2, 10, 16)
    seq = torch.export.Dim("seq", min=2, max=1024)
    exported = torch.export.export(
        model,
        (q, k, torch.arange(10)),
        dynamic_shapes={"q": {2: seq}, "k": {2: seq}, "positions": {0: seq}},
    )
    for seq_len, start in ((10, 0), (33, 500)):
        q, k = torch.randn(2, 2, seq_len, 16), torch.randn(2, 2, seq_len, 16)
        positions = torch.arange(start, start + seq_len)
        got = exported.module()(q, k, positions)
        torch.testing.assert_close(got, model(q, k, positions))


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_interleaved_storage_offsets(dtype):
    """The compiled interleaved path views a contiguous x as one word per pair (vectorised code).

    An x that starts at an even element of its storage compiles and rotates as the definition
    does. On torches that take that path (>= 2.5), a contiguous x that starts inside a pair
    fails to compile with torch's view error, the documented limitation, and a clone of it
    compiles; strided inputs take the formula.
    """
    from posenc_ref._rotate import PAIR_WORDS_COMPILE

    x, positions, cos, sin = _inputs(dtype)
    flat = torch.cat([x.flatten(), x.flatten()[:2]])
    compiled = torch.compile(apply_rope, fullgraph=True)
    even = flat[2:].view(x.shape)
    _assert_one_rounding(
        compiled(even, cos, sin, layout="interleaved"), even, positions, "interleaved"
    )
    strided = torch.cat([x, x], dim=-1)[..., 1:17]
    got = compiled(strided, cos, sin, layout="interleaved")
    _assert_one_rounding(got, strided, positions, "interleaved")
    torch._dynamo.reset()
    odd = flat[1:-1].view(x.shape)
    if PAIR_WORDS_COMPILE:
        with pytest.raises(Exception, match="storage_offset"):
            compiled(odd, cos, sin, layout="interleaved")
        torch._dynamo.reset()
        odd = odd.clone()
    _assert_one_rounding(
        compiled(odd, cos, sin, layout="interleaved"), odd, positions, "interleaved"
    )
