"""Figures of the benchmarks page, drawn from a results file of ``python -m benchmarks.run``.

They compute nothing: each function draws the parsed results (:func:`benchmarks.report.load`).
:func:`site_figures` names the figures the page shows; the site's figure hook
(``hooks/figures.py``) renders them from the committed ``benchmarks/results.json`` with the same
deterministic SVG settings as the package's own figures (``posenc_ref.plots``), so they are
generated at build time and never committed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "site_figures",
    "site_figure_facts",
    "bench_sinusoidal_figure",
    "bench_accuracy_figure",
    "bench_rope_figure",
]


def site_figures(results: dict) -> dict[str, Callable[[], Figure]]:
    """The benchmark page's figures for these results: file name to a no-argument drawing.

    The GPU panel exists only when the results hold GPU cases; without them the page says so
    instead of showing a figure.
    """
    figures = {
        "bench_sinusoidal.svg": lambda: bench_sinusoidal_figure(results),
        "bench_accuracy.svg": lambda: bench_accuracy_figure(results),
    }
    devices = {case["device"] for case in results["benchmarks"]["rope"]["cases"]}
    for device in ("cpu", "cuda"):
        if device in devices:
            figures[f"bench_rope_{device}.svg"] = lambda d=device: bench_rope_figure(results, d)
    return figures


def site_figure_facts(results: dict) -> dict[str, Callable[[], dict[str, str]]]:
    """The numbers the alt texts of these figures state: file name to ``{placeholder: text}``.

    Measurements, not computations: read from the results the figures are drawn from.
    """
    return {"bench_accuracy.svg": lambda: _accuracy_facts(results)}


def _accuracy_facts(results: dict) -> dict[str, str]:
    from posenc_ref.plots import sci

    accuracy = results["benchmarks"]["accuracy"]
    errors, starts = accuracy["max_abs_error"], [o["start"] for o in accuracy["octaves"]]
    ours = max(max(errors["sinusoidal"]), max(errors["rope_cos_sin"]))
    naive = errors["float32_formula"]
    threshold = 1e-3
    crossing = next(start for start, e in zip(starts, naive, strict=True) if e > threshold)
    return {
        "threshold": sci(threshold),
        "ours": sci(ours),
        "target": sci(min(t["limit"] for t in accuracy["targets"])),
        "crossing": f"{crossing:,}",
        "last": f"{naive[-1]:.1f}",
        "last_position": f"{accuracy['octaves'][-1]['stop']:,}",
    }


def _pyplot():
    # Imported only when a figure is drawn; the site's hook has chosen the Agg backend.
    import matplotlib.pyplot as plt

    return plt


_BENCH_COLORS = {
    "sinusoidal": "C0",
    "rope_cos_sin": "C2",
    "float32_formula": "C3",
    "hf_llama_rotary": "C1",
    "numpy_float64": "C4",
}


def _whiskers(ratios: list[dict]) -> tuple[list[float], list[list[float]]]:
    # Medians, and min-max as matplotlib error bar lengths below and above the median.
    medians = [r["median"] for r in ratios]
    spread = [[r["median"] - r["min"] for r in ratios], [r["max"] - r["median"] for r in ratios]]
    return medians, spread


def _label_above(ax, xs, medians, spread, fmt: str) -> None:
    # Value labels just above the upper whisker (log axes: a constant factor above it).
    for x, m, above in zip(xs, medians, spread[1], strict=True):
        ax.text(x, (m + above) * 1.12, fmt.format(m), ha="center", va="bottom", fontsize=8)


def bench_sinusoidal_figure(results: dict) -> Figure:
    """Speedup of :func:`~posenc_ref.sinusoidal` over the loop, and its cost vs float32.

    Parameters
    ----------
    results
        A parsed results file of ``python -m benchmarks.run``.

    Returns
    -------
    matplotlib.figure.Figure
        Two bar panels, one bar per table size, with min–max whiskers of the per-round ratios.
    """
    import numpy as np

    plt = _pyplot()
    cases = results["benchmarks"]["sinusoidal"]["cases"]
    labels = [f"({c['num_positions']}, {c['dim']})" for c in cases]
    fig, (speed, cost) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    medians, spread = _whiskers([c["ratios"]["loop_over_sinusoidal"] for c in cases])
    speed.bar(labels, medians, yerr=spread, capsize=4, color="C0")
    _label_above(speed, range(len(cases)), medians, spread, "{:.3g}×")
    speed.set_yscale("log")
    speed.set_ylabel("loop time / sinusoidal time")
    speed.set_title("speedup of sinusoidal over sinusoidal_loop", fontsize=10)
    speed.set_xlabel("table size (positions, dim)")
    speed.margins(y=0.25)

    x = np.arange(len(cases))
    for offset, key, name, color in (
        (-0.2, "sinusoidal_over_float32", "sinusoidal (float64 angles)", "C0"),
        (0.2, "numpy_over_float32", "NumPy float64", "C4"),
    ):
        medians, spread = _whiskers([c["ratios"][key] for c in cases])
        cost.bar(x + offset, medians, 0.4, yerr=spread, capsize=4, color=color, label=name)
        _label_above(cost, x + offset, medians, spread, "{:.2g}×")
    cost.axhline(1.0, color="0.3", lw=0.8)
    cost.axhline(2.0, color="C3", lw=1, ls="--", label="target for sinusoidal: 2×")
    cost.set_xticks(x, labels)
    cost.set_yscale("log")
    cost.set_ylabel("time / float32 formula time")
    cost.set_title("cost relative to the float32 formula", fontsize=10)
    cost.set_xlabel("table size (positions, dim)")
    cost.legend(fontsize=8, loc="upper left")
    cost.margins(y=0.3)
    return fig


def bench_accuracy_figure(results: dict) -> Figure:
    """Max |error| per octave of position, on log-log axes, with the 6e-8 target.

    Returns
    -------
    matplotlib.figure.Figure
        One line per implementation; x is the octave's largest position.
    """
    import numpy as np

    plt = _pyplot()
    acc = results["benchmarks"]["accuracy"]
    tops = np.array([o["stop"] - 1 for o in acc["octaves"]], dtype=float)
    tops[0] = max(tops[0], 1.0)  # the first octave [0, 2) ends at position 1
    labels = {
        "sinusoidal": "posenc_ref sinusoidal",
        "rope_cos_sin": "posenc_ref rope_cos_sin",
        "float32_formula": "float32 formula (PyTorch examples)",
        "hf_llama_rotary": "HF LlamaRotaryEmbedding",
    }
    markers = {
        "sinusoidal": "s",
        "rope_cos_sin": "x",
        "float32_formula": "o",
        "hf_llama_rotary": "^",
    }
    fig, ax = plt.subplots(figsize=(7.5, 4.5), constrained_layout=True)
    for name, label in labels.items():
        if name not in acc["max_abs_error"]:
            continue
        errors = np.maximum(np.array(acc["max_abs_error"][name], dtype=float), 1e-12)
        ax.loglog(
            tops, errors, marker=markers[name], ms=4, lw=1, color=_BENCH_COLORS[name], label=label
        )
    ax.axhline(6e-8, color="0.3", lw=1, ls="--", label="target: 6e-8")
    ax.set_xlabel("position (largest of each octave)")
    ax.set_ylabel("max |error| of sin and cos")
    ax.set_title(f"accuracy vs position, dim {acc['dim']}, base {acc['base']:g}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, which="major", lw=0.3, color="0.85")
    return fig


_ROPE_NAMES = {  # variant -> short figure label, in display order (floors are not bars)
    "apply_rope_interleaved_out": "apply_rope interleaved, out=",
    "apply_rope_half_out": "apply_rope half, out=",
    "apply_rope_interleaved": "apply_rope interleaved",
    "apply_rope_half": "apply_rope half",
    "compiled_apply_rope_interleaved": "compiled apply_rope interleaved",
    "compiled_apply_rope_half": "compiled apply_rope half",
    "hf_rotate_half": "HF rotate_half",
    "meta_complex": "Meta complex",
    "torchtune": "torchtune",
    "rotary_embedding_torch": "rotary-embedding-torch",
    "liger_rope": "liger-kernel (half)",
    "flash_attn_rotary_interleaved": "flash-attn interleaved",
    "flash_attn_rotary_half": "flash-attn half",
}
_ROPE_TARGET_VARIANT = {  # results target kind -> the variant it bounds (per layout)
    "out_over_copy": "apply_rope_{}_out",
    "new_over_clone": "apply_rope_{}",
    "compiled_over_compiled_clone": "compiled_apply_rope_{}",
    "gpu_bandwidth": "apply_rope_{}_out",  # a fraction f of the copy bandwidth is 1/f copies
}


def _rope_limits(results: dict, case: dict) -> dict[str, float]:
    # Each variant's limit as a multiple of its own floor, from the results' targets.
    limits = {}
    for t in results["benchmarks"]["rope"]["targets"]:
        same = (t["device"], t["dtype"], t["shape"]) == (
            case["device"],
            case["dtype"],
            case["shape"],
        )
        if not same or t["kind"] not in _ROPE_TARGET_VARIANT:
            continue
        limit = float(str(t["limit"]).lstrip(">= "))
        name = _ROPE_TARGET_VARIANT[t["kind"]].format(t["layout"])
        limits[name] = 1 / limit if t["kind"] == "gpu_bandwidth" else limit
    return limits


def bench_rope_figure(results: dict, device: str = "cpu") -> Figure:
    """RoPE time on q and k, each variant over its own floor, one panel per dtype and shape.

    ``out=`` variants over the copy floor, new tensors (ours and every peer's) over the clone
    floor, compiled calls over the compiled clone, as :func:`benchmarks.report.floor_of` says.

    Returns
    -------
    matplotlib.figure.Figure
        Horizontal bars (log scale) with min–max whiskers, a red tick at each variant's target.
    """
    import numpy as np

    from .report import floor_of

    plt = _pyplot()
    cases = [c for c in results["benchmarks"]["rope"]["cases"] if c["device"] == device]
    shapes = list(dict.fromkeys(tuple(c["shape"]) for c in cases))  # in the file's order
    dtypes = sorted({c["dtype"] for c in cases}, key=["float32", "bfloat16"].index)
    short = {"copy_floor": "copy", "clone_floor": "clone", "compiled_clone": "compiled clone"}
    shown_anywhere = [n for n in _ROPE_NAMES if any(n in c["variants"] for c in cases)]
    fig, axes = plt.subplots(
        len(dtypes),
        len(shapes),
        figsize=(3.2 * len(shapes) + 2.6, 0.3 * len(shown_anywhere) * len(dtypes) + 1.4),
        squeeze=False,
        sharex=True,
        constrained_layout=True,
    )
    for row, dtype in enumerate(dtypes):
        for col, shape in enumerate(shapes):
            ax = axes[row][col]
            case = next(c for c in cases if c["dtype"] == dtype and tuple(c["shape"]) == shape)
            ratios = {
                "copy_floor": case["over_floor"],
                "clone_floor": case.get("over_clone", {}),
                "compiled_clone": case.get("over_compiled_clone", {}),
            }
            shown = [n for n in shown_anywhere if n in ratios[floor_of(n)]]
            medians, spread = _whiskers([ratios[floor_of(n)][n] for n in shown])
            colors = [
                "C2" if n.startswith("compiled") else "C0" if n.startswith("apply_rope") else "C1"
                for n in shown
            ]
            y = np.arange(len(shown))[::-1]
            ax.barh(y, medians, xerr=spread, capsize=3, color=colors)
            for yi, m, above in zip(y, medians, spread[1], strict=True):  # label past the whisker
                ax.text((m + above) * 1.12, yi, f"{m:.3g}×", va="center", fontsize=8)
            limits = _rope_limits(results, case)
            for yi, n in zip(y, shown, strict=True):
                if n in limits:
                    ax.plot([limits[n]] * 2, [yi - 0.42, yi + 0.42], color="C3", lw=2)
            ax.axvline(1.0, color="0.5", lw=0.8, ls="--")
            labels = [f"{_ROPE_NAMES[n]} ÷ {short[floor_of(n)]}" for n in shown]
            ax.set_yticks(y, labels if col == 0 or shown != shown_anywhere else [], fontsize=8)
            ax.set_xscale("log")
            ax.set_title(f"{device} {dtype} {shape}", fontsize=9)
    fig.supxlabel("time / the variant's floor (red: target; dashed: the floor)", fontsize=9)
    return fig
