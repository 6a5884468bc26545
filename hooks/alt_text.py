"""Numbers in the alt texts of figures, computed at build time like the figures themselves.

A figure's alt text describes what the picture shows to a reader who cannot see it, and a number
in it is a claim like any other on the page. A page writes the numbers as placeholders,

    ![... falls from {start} at distance 0 to {at_50} at distance 50 ...](figures/rope_decay.svg)

and this hook fills them from ``FACTS[figure]``: a function of the freshly imported package that
returns the values, formatted, from the same functions and defaults that draw the figure. A
placeholder with no value, or a figure with placeholders and no entry here, fails the build.
Numbers that are the figure's inputs (a width, a base, the positions drawn) may stay literal;
``tests/site/test_site.py`` checks that no measured-looking number (a decimal or a power of ten)
is left literal in an alt text.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

from mkdocs.exceptions import PluginError

_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>figures/(?P<name>[^)\s/]+\.svg))\)")


def _default(function, name):
    """The default of ``function``'s parameter ``name``: the value the site figure uses."""
    return inspect.signature(function).parameters[name].default


def _sci(value: float) -> str:
    """``0.0016`` -> ``"2e-3"``: one significant digit, written the way the alt texts read."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _heatmap_10x4(pkg) -> dict[str, str]:
    import torch

    table = pkg.sinusoidal(10, 4, 100.0, dtype=torch.float64)
    return {
        "col2_last": f"{float(table[-1, 2]):.2f}",
        "col3_last": f"{float(table[-1, 3]):.2f}",
        "row1": ", ".join(f"{float(v):.4f}" for v in table[1]),
    }


def _heatmap_128x8(pkg) -> dict[str, str]:
    return {"pair1_wavelength": f"{float(pkg.wavelengths(8, 10000.0)[1]):.0f}"}


def _inv_freq(pkg) -> dict[str, str]:
    from posenc_ref.plots import frequency_curve

    omega = pkg.inv_freq(_default(frequency_curve, "dim"), _default(frequency_curve, "base"))
    return {"at_200": f"{float(omega[100]):.2f}", "last": _sci(float(omega[-1]))}


def _wavelengths(pkg) -> dict[str, str]:
    from posenc_ref.plots import wavelength_curve

    lam = pkg.wavelengths(_default(wavelength_curve, "dim"), _default(wavelength_curve, "base"))
    return {"last": f"{float(lam[-1]):,.0f}"}


def _waves(pkg) -> dict[str, str]:
    from posenc_ref.plots import waves

    lam = pkg.wavelengths(_default(waves, "dim"), _default(waves, "base"))
    return {f"pair{i}": f"{float(lam[i]):.1f}" for i in _default(waves, "pairs")}


def _min_distance(pkg) -> dict[str, str]:
    import numpy as np

    from posenc_ref.plots import min_distance

    max_len, base = _default(min_distance, "max_len"), _default(min_distance, "base")
    offsets = np.arange(1, max_len)
    facts = {}
    for dim in _default(min_distance, "dims"):
        angles = np.outer(offsets, pkg.inv_freq(dim, base).numpy())  # (offsets, pairs)
        # The closed form of the properties page: the distance at offset k, from any position.
        distance = np.sqrt(np.maximum(dim - 2 * np.cos(angles).sum(axis=1), 0.0))
        facts[f"d{dim}"] = _sci(distance.min())
        facts[f"d{dim}_plain"] = f"{distance.min():.1f}"
        facts[f"d{dim}_length"] = f"{int(offsets[distance.argmin()]) + 1:,}"
    return facts


def _neighbour_distance(pkg) -> dict[str, str]:
    from posenc_ref.plots import neighbour_distance

    dim, base = _default(neighbour_distance, "dim"), _default(neighbour_distance, "base")
    return {
        f"k{k}": f"{pkg.adjacent_distance(dim, base, k):.1f}"
        for k in _default(neighbour_distance, "offsets")
    }


def _dot_product(pkg) -> dict[str, str]:
    from posenc_ref.plots import dot_product_vs_offset

    base = _default(dot_product_vs_offset, "base")
    offsets = range(1, _default(dot_product_vs_offset, "max_offset") + 1)  # the curve is even
    facts = {}
    for dim in _default(dot_product_vs_offset, "dims"):
        values = [pkg.offset_dot_product(dim, base, k) / (dim / 2) for k in offsets]
        low = min(values)
        facts[f"d{dim}_min"] = f"{low:.2f}"
        facts[f"d{dim}_at"] = str(offsets[values.index(low)])
    return facts


def _t5_buckets(pkg) -> dict[str, str]:
    import torch

    from posenc_ref.plots import t5_buckets

    num_buckets = _default(t5_buckets, "num_buckets")
    max_distance = _default(t5_buckets, "max_distance")
    distance = torch.arange(0, 4 * max_distance)
    facts = {}
    for name, bidirectional in (("bidirectional", True), ("causal", False)):
        buckets = pkg.t5_relative_bucket(
            -distance,
            bidirectional=bidirectional,
            num_buckets=num_buckets,
            max_distance=max_distance,
        )
        facts[f"{name}_flat"] = str(int(distance[buckets == buckets.max()].min()))
    return facts


def _alibi(pkg) -> dict[str, str]:
    import torch

    from posenc_ref.plots import alibi_heads

    slopes = pkg.alibi_slopes(_default(alibi_heads, "num_heads"), dtype=torch.float64)
    return {f"head{h}": f"{float(slopes[h]):.3g}" for h in _default(alibi_heads, "heads")}


def _rope_rotation(pkg) -> dict[str, str]:
    from posenc_ref.plots import rope_rotation

    omega = pkg.inv_freq(_default(rope_rotation, "dim"), _default(rope_rotation, "base"))
    last = _default(rope_rotation, "num_positions") - 1  # the last position drawn
    facts = {}
    for i in _default(rope_rotation, "pairs"):
        facts[f"omega{i}"] = f"{float(omega[i]):.3g}"
        facts[f"turns{i}"] = f"{last * float(omega[i]) / (2 * math.pi):.2g}"
    return facts


def _rope_decay(pkg) -> dict[str, str]:
    import numpy as np

    from posenc_ref.plots import rope_decay, rope_decay_bound

    dim, base = _default(rope_decay, "dim"), _default(rope_decay, "base")
    near = rope_decay_bound(np.array([0, 50, 256]), dim, base)
    # The distances the right panel draws from 4096 on (its geometric grid), not every integer.
    grid = np.geomspace(4096, _default(rope_decay, "max_distance"), 1500).round()
    far = rope_decay_bound(np.unique(grid), dim, base)
    return {
        "at_0": f"{near[0]:.1f}",
        "at_50": f"{near[1]:.1f}",
        "at_256": f"{near[2]:.1f}",
        "far_low": f"{far.min():.1f}",
        "far_high": f"{far.max():.1f}",
    }


def _context_extension(pkg) -> dict[str, str]:
    from posenc_ref.plots import context_extension

    lam = pkg.wavelengths(_default(context_extension, "dim"), _default(context_extension, "base"))
    return {"first": f"{float(lam[0]):.1f}", "last": f"{float(lam[-1]) / 1e6:.1f} million"}


def _angle_precision(pkg) -> dict[str, str]:
    from posenc_ref.plots import angle_precision_data

    starts, float32_angles, ours = angle_precision_data()
    return {
        "first": _sci(float32_angles[0]),
        "first_position": f"{int(starts[0]):,}",
        "last": f"{float32_angles[-1]:.1f}",
        "last_position": f"{int(starts[-1]):,}",
        "ours": _sci(ours.max()),
    }


def _bench_accuracy(pkg) -> dict[str, str]:
    # A measurement, not a computation: read from the committed results the figure is drawn from.
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "results.json"
    accuracy = json.loads(path.read_text(encoding="utf-8"))["benchmarks"]["accuracy"]
    errors, starts = accuracy["max_abs_error"], [o["start"] for o in accuracy["octaves"]]
    ours = max(max(errors["sinusoidal"]), max(errors["rope_cos_sin"]))
    naive = errors["float32_formula"]
    threshold = 1e-3
    crossing = next(start for start, e in zip(starts, naive, strict=True) if e > threshold)
    return {
        "threshold": _sci(threshold),
        "ours": _sci(ours),
        "target": _sci(min(t["limit"] for t in accuracy["targets"])),
        "crossing": f"{crossing:,}",
        "last": f"{naive[-1]:.1f}",
        "last_position": f"{accuracy['octaves'][-1]['stop']:,}",
    }


def _check_hf_error(pkg) -> dict[str, str]:
    import numpy as np

    from posenc_ref.plots import hf_rope_error_fns, rope_error_curves

    curves = rope_error_curves(*hf_rope_error_fns())
    hf, ours = curves["errors"].values()  # HF first, as the figure's legend lists them
    return {
        "last_position": f"{int(curves['positions'][-1]):,}",
        "hf_first": _sci(float(hf[0])),
        "hf_last": _sci(float(hf[-1])),
        "ours": _sci(float(ours.max())),
        "margin": f"{float(np.median(curves['allowance'] / hf)):.0f}",
    }


def _check_inspect_llama31(pkg) -> dict[str, str]:
    from posenc_ref.models import released_config, rope_spec

    spec = rope_spec(released_config("Llama 3.1"))
    return {
        "base": f"{spec.base:g}",
        "factor": f"{spec.factor:g}",
        "original": str(spec.original_max_len),
        "max_len": str(spec.max_len),
    }


def _zoo_wavelengths(pkg) -> dict[str, str]:
    import numpy as np

    from posenc_ref.models import zoo_rows
    from posenc_ref.plots import zoo_wavelengths

    rows = _default(zoo_wavelengths, "rows")
    rows = zoo_rows() if rows is None else rows  # None: every released family, as drawn
    omega = [row["spec"].inv_freq.numpy() for row in rows]
    lam = np.concatenate([2 * np.pi / w[w > 0] for w in omega])  # frequency 0 is not drawn
    return {"shortest": f"{lam.min():.1f}", "longest": f"{lam.max() / 1e6:.0f} million"}


def _axial_pair_angles(pkg) -> dict[str, str]:
    from posenc_ref.axial import axial_inv_freq, grid_positions
    from posenc_ref.plots import axial_pair_angles

    (top, top_base), (bottom, bottom_base) = _default(axial_pair_angles, "schemes")
    dim, pair = _default(axial_pair_angles, "dim"), _default(axial_pair_angles, "pair")
    height, width = _default(axial_pair_angles, "height"), _default(axial_pair_angles, "width")
    twin = pair + dim // 4

    def steps(scheme, base):  # radians per row for the pair, per column for its twin
        omega = axial_inv_freq(dim, base, scheme)
        grid = grid_positions(height, width, scheme)
        row_step, col_step = float(grid[width, 0] - grid[0, 0]), float(grid[1, 1] - grid[0, 1])
        return float(omega[pair]) * row_step, float(omega[twin]) * col_step

    top_row, top_col = steps(top, top_base)
    bottom_row, bottom_col = steps(bottom, bottom_base)
    return {
        "top_row": f"{top_row:.3f}",
        "top_col": f"{top_col:.3f}",
        "bottom_row": f"{bottom_row:.3f}",
        "bottom_col": f"{bottom_col:.3f}",
    }


def _fire_interpolation(pkg) -> dict[str, str]:
    import torch

    from posenc_ref.plots import fire_interpolation

    threshold, c = _default(fire_interpolation, "threshold"), _default(fire_interpolation, "c")
    m = int(threshold // 2)  # the figure's first query, before the threshold
    one, zero = torch.ones(1, 1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    identity = pkg.FireWeights(one, zero, one, zero, c, threshold)  # the bias is the MLP input
    x = pkg.fire_bias(identity, 1, m + 1, dtype=torch.float64)[0, 0]
    return {"first_query": str(m), "first_end": f"{float(x[0]):.2f}"}


FACTS: dict[str, Callable[[object], dict[str, str]]] = {
    "heatmap_10x4_base100.svg": _heatmap_10x4,
    "heatmap_128x8.svg": _heatmap_128x8,
    "inv_freq.svg": _inv_freq,
    "wavelengths.svg": _wavelengths,
    "waves.svg": _waves,
    "min_distance.svg": _min_distance,
    "neighbour_distance.svg": _neighbour_distance,
    "dot_product_offset.svg": _dot_product,
    "t5_buckets.svg": _t5_buckets,
    "alibi_bias.svg": _alibi,
    "rope_rotation.svg": _rope_rotation,
    "rope_decay.svg": _rope_decay,
    "context_extension.svg": _context_extension,
    "angle_precision.svg": _angle_precision,
    "bench_accuracy.svg": _bench_accuracy,
    "check_hf_error.svg": _check_hf_error,
    "check_inspect_llama31.svg": _check_inspect_llama31,
    "zoo_wavelengths.svg": _zoo_wavelengths,
    "axial_pair_angles.svg": _axial_pair_angles,
    "fire_interpolation.svg": _fire_interpolation,
}

_cache: dict[str, dict[str, str]] = {}


def on_pre_build(config):
    _cache.clear()  # `mkdocs serve`: recompute after every edit of the package


def facts(name: str) -> dict[str, str]:
    """The alt-text values of figure ``name``, computed once per build."""
    if name not in _cache:
        import posenc_ref

        _cache[name] = FACTS[name](posenc_ref)
    return _cache[name]


def fill(markdown: str, where: str = "") -> str:
    """``markdown`` with the ``{placeholders}`` in every figure's alt text filled in."""

    def replace(match: re.Match) -> str:
        alt, name = match.group("alt"), match.group("name")
        if "{" not in alt:
            return match.group(0)
        if name not in FACTS:
            raise PluginError(
                f"{where}: the alt text of {name} has placeholders, but "
                f"hooks/alt_text.py has no FACTS entry for it"
            )
        values = facts(name)
        try:
            filled = alt.format_map(values)
        except (KeyError, ValueError, IndexError) as exc:
            raise PluginError(
                f"{where}: alt text of {name}: {exc!r}; known values: {sorted(values)}"
            ) from exc
        return f"![{filled}]({match.group('src')})"

    return _IMAGE.sub(replace, markdown)


def on_page_markdown(markdown, page, config, files):
    return fill(markdown, page.file.src_uri)
