"""Figure functions for the site and the notebooks (matplotlib is imported lazily).

Every figure on the site is drawn by a function here, at build time. A function decorated with
:func:`site_figure` is rendered by the site's figure hook to ``figures/<name>.svg``; the same
functions take parameters so that the notebooks can redraw them for another base or width.

``import posenc_ref`` does not import this module (nor matplotlib); import it explicitly.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["SITE_FIGURES", "site_figure", "render_svg"]

SITE_FIGURES: dict[str, Callable[[], Figure]] = {}
"""Site figures: output name (``"heatmap_128x8.svg"``) to a function drawing it with no arguments."""

# Deterministic SVG: fixed hash salt for ids, text drawn as paths (no font lookup in the browser).
SVG_RC = {"svg.hashsalt": "posenc-ref", "svg.fonttype": "path", "figure.dpi": 100}


def site_figure(name: str) -> Callable[[Callable[[], Figure]], Callable[[], Figure]]:
    """Register a no-argument function as the site figure ``figures/<name>``."""

    def register(make: Callable[[], Figure]) -> Callable[[], Figure]:
        if name in SITE_FIGURES:
            raise ValueError(f"site figure {name!r} is registered twice")
        SITE_FIGURES[name] = make
        return make

    return register


def render_svg(make: Callable[[], Figure]) -> bytes:
    """Draw a figure with the deterministic SVG settings and return the SVG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(SVG_RC):
        fig = make()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in {"agg", "svg", "pdf"} and not _in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _in_notebook() -> bool:
    import sys

    return "ipykernel" in sys.modules


# === sinusoidal and relative figures (docs: absolute, properties, tour, relative) ===


# === rope and context-extension figures (docs: rope, rope_scaling, precision) ===


# === benchmark figures (docs: benchmarks) ===
