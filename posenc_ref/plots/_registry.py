"""The registry of site figures, and their rendering to deterministic SVG."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

SITE_FIGURES: dict[str, Callable[[], Figure]] = {}
"""Site figures: output name (``"heatmap_128x8.svg"``) to a no-argument drawing function."""


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
