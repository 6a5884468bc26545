r"""The input plan and the tolerance: which calls the kit makes, and how closely they must agree.

The kit chooses the inputs: random queries and keys at a few windows of contiguous positions
(:func:`plan_windows`), each window a call of the user's function (:func:`run_call`). Each output
coordinate may then differ from the float64 expectation by an allowance built from an explicit
error model (:func:`rope_allowance`); :func:`excess_ratio` is the error divided by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..rope import RotaryEmbedding
from ._arrays import RopeFn, call_qk
from ._common import ANGLE_MARGIN, ANGLE_ULPS, OUTPUT_ROUNDINGS, UNIT_ROUNDOFF
from ._model import Model, dtype_name, pair_index, pair_parts

# Windows of positions: the start (small positions, and 255/256/257 where bfloat16 positions
# collide), around the original context (where length-dependent methods switch), and the far end.
FIRST_WINDOW = 300
WINDOW = 128
DEFAULT_CONTEXT = 4096
DEFAULT_FAR = 1 << 17

# --------------------------------------------------------------------------- calls


@dataclass(frozen=True)
class Window:
    start: int
    stop: int
    batch: int
    heads: int

    def describe(self) -> str:
        return f"positions {self.start}..{self.stop - 1}"


@dataclass
class Call:
    """One call of the user's fn: its inputs, outputs and the expected outputs (float64, CPU)."""

    window: Window
    dtype: torch.dtype
    positions: torch.Tensor  # (n,) int64, CPU
    inputs: tuple[torch.Tensor, torch.Tensor]  # q, k as float64 (exactly the values passed)
    outputs: tuple[torch.Tensor, torch.Tensor]  # the user's q_rot, k_rot as float64
    expected: tuple[torch.Tensor, torch.Tensor] = ()
    allowed: tuple[torch.Tensor, torch.Tensor] = ()

    @property
    def seq_len(self) -> int:
        return self.window.stop

    def describe(self) -> str:
        shape = tuple(self.inputs[0].shape)
        return f"{self.window.describe()}, {dtype_name(self.dtype)}, q and k of shape {shape}"


def original_context(reference: RotaryEmbedding) -> int | None:
    params = getattr(reference, "scaling_params", None) or {}
    if isinstance(params.get("original_max_len"), int):
        return params["original_max_len"]
    spec = getattr(reference, "spec", None)  # from_hf_config keeps the config's spec
    if spec is not None and getattr(spec, "original_max_len", None):
        return int(spec.original_max_len)
    for name in ("original_max_len", "original_max_position_embeddings"):
        value = getattr(reference, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def plan_windows(reference: RotaryEmbedding, max_position: int | None) -> list[Window]:
    context = original_context(reference) or DEFAULT_CONTEXT
    far = max_position if max_position is not None else max(8 * context, DEFAULT_FAR)
    windows = [Window(0, min(FIRST_WINDOW, far + 1), batch=2, heads=2)]
    if context - WINDOW // 2 >= windows[-1].stop and context + WINDOW // 2 <= far + 1:
        windows.append(Window(context - WINDOW // 2, context + WINDOW // 2, batch=1, heads=2))
    if far + 1 > windows[-1].stop:
        windows.append(Window(max(far + 1 - WINDOW, windows[-1].stop), far + 1, 1, 1))
    return windows


def run_call(
    fn: RopeFn,
    window: Window,
    dtype: torch.dtype,
    head_dim: int,
    generator: torch.Generator,
    device: torch.device,
) -> Call:
    shape = (window.batch, window.heads, window.stop - window.start, head_dim)
    q = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    k = torch.randn(shape, generator=generator).to(device=device, dtype=dtype)
    positions = torch.arange(window.start, window.stop, device=device)
    where = f"({window.describe()}, {dtype_name(dtype)} q and k of shape {shape})"
    outputs = call_qk(fn, q, k, positions, where)
    return Call(
        window,
        dtype,
        positions.to("cpu"),
        (q.to("cpu", torch.float64), k.to("cpu", torch.float64)),
        outputs,
    )


# --------------------------------------------------------------------------- tolerance


def rope_allowance(
    model: Model,
    x: torch.Tensor,
    positions: torch.Tensor,
    seq_len: int,
    dtype: torch.dtype,
    *,
    float32_angles: bool,
    rtol: float | None,
    atol: float,
    attention_factor: float | None = None,
    rounding_step: bool = False,
) -> torch.Tensor:
    """Allowed absolute error per coordinate of the output, same shape as ``x``.

    Rotated coordinate of pair ``i`` at position ``m``:
    ``a * |pair| * (rtol + angle_i(m)) + atol`` with ``rtol = 8 u(dtype)`` by default and
    ``angle_i(m) = 2 u32 m w_i (ln(1/w_i) + 4)`` when float32 angles are accepted (else 0), for
    the frequency ``w_i`` the coordinate's table entry holds. Coordinates past ``rotary_dim`` are
    copied: ``u(dtype) |x| + atol``. ``rounding_step`` adds one rounding step of the quantity a
    low-precision model rounds (where the user's float32 value and ours may round apart).
    """
    r = model.rotary_dim
    freqs = model.frequencies(seq_len)
    a = float(freqs.attention_factor) if attention_factor is None else attention_factor
    u, v = pair_parts(x, model.layout, r)
    norm = torch.sqrt(u * u + v * v)[..., pair_index(model.layout, r)]  # (..., n, r)
    omega = freqs.inv_freq.detach().to("cpu", torch.float64).clamp(min=1e-300)
    m = positions.to(torch.float64).abs()[:, None]
    out_rel = rtol if rtol is not None else OUTPUT_ROUNDINGS * UNIT_ROUNDOFF[dtype]
    relative = torch.full((1, r // 2), out_rel, dtype=torch.float64)
    if float32_angles:
        angle = ANGLE_MARGIN * UNIT_ROUNDOFF[torch.float32] * m * omega
        relative = relative + angle * (torch.log(1 / omega).clamp(min=0) + ANGLE_ULPS)
    if rounding_step and model.precision is not None:
        _, w_dt, a_dt, t_dt = model.precision
        relative = relative + 3 * UNIT_ROUNDOFF[t_dt]  # one step of cos and of sin
        relative = relative + 2 * (UNIT_ROUNDOFF[w_dt] + UNIT_ROUNDOFF[a_dt]) * m * omega
    relative = relative.expand(positions.numel(), r // 2)
    relative = relative[:, pair_index(model.table_layout or model.layout, r)]  # (n, r)
    rotated = model.written(a * norm * relative + atol)
    copied = UNIT_ROUNDOFF[dtype] * x[..., r:].abs() + atol
    return torch.cat([rotated, copied], dim=-1)


def excess_ratio(got: torch.Tensor, expected: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Error divided by its allowance (> 1: disagreement); infinite where only one side is finite.

    Where both are non-finite (a float16 overflow the model reproduces) the ratio is 0.
    """
    error = (got - expected).abs()
    ratio = error / allowed  # 0/0 (an exact copy with no allowance) is NaN: fixed below
    ratio.masked_fill_(error == 0, 0.0)
    if not (bool(torch.isfinite(got).all()) and bool(torch.isfinite(expected).all())):
        ratio.masked_fill_(~torch.isfinite(got) & ~torch.isfinite(expected), 0.0)
    return torch.nan_to_num_(ratio, nan=math.inf, posinf=math.inf)
