"""The registry of site figures and of the numbers their alt texts state; rendering to SVG.

A figure is registered twice, side by side in the module that draws it:

- :func:`site_figure` registers a no-argument drawing function as ``figures/<name>``;
- :func:`figure_facts` registers, right after it, a no-argument function that returns the
  numbers the figure's alt text states, formatted, computed from the same functions and defaults
  that draw the figure.

A page writes those numbers as placeholders, ``![... falls to {at_50} at distance 50
...](figures/rope_decay.svg)``, and the site's hook (``hooks/alt_text.py``) fills them from
:data:`FIGURE_FACTS`. A number in an alt text is a claim like any other on the page, so it is
computed, never typed.
"""

from __future__ import annotations

import contextlib
import inspect
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

SITE_FIGURES: dict[str, Callable[[], Figure]] = {}
"""Site figures: output name (``"heatmap_128x8.svg"``) to a no-argument drawing function."""

FIGURE_FACTS: dict[str, Callable[[], dict[str, str]]] = {}
"""Alt-text numbers: figure name to a no-argument function returning ``{placeholder: text}``."""


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


def figure_facts(
    name: str,
) -> Callable[[Callable[[], dict[str, str]]], Callable[[], dict[str, str]]]:
    """Register a no-argument function as the source of the alt-text numbers of ``name``.

    The figure must be registered first (:func:`site_figure`, just above in the same module).
    """

    def register(facts: Callable[[], dict[str, str]]) -> Callable[[], dict[str, str]]:
        if name not in SITE_FIGURES:
            raise ValueError(f"facts for {name!r}, which is not a registered site figure")
        if name in FIGURE_FACTS:
            raise ValueError(f"the facts of site figure {name!r} are registered twice")
        FIGURE_FACTS[name] = facts
        return facts

    return register


def default_of(function: Callable, parameter: str):
    """The default of ``function``'s ``parameter``: the value the site figure draws with."""
    return inspect.signature(function).parameters[parameter].default


def sci(value: float) -> str:
    """``0.0016`` -> ``"2e-3"``: one significant digit, as the alt texts write small numbers."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def render_svg(make: Callable[[], Figure]) -> bytes:
    """Draw a figure with the deterministic SVG settings and return the SVG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(SVG_RC), _one_text_to_path():
        fig = make()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


@contextlib.contextmanager
def _one_text_to_path() -> Iterator[None]:
    """Renderers made meanwhile share matplotlib's module-level ``TextToPath`` and its caches.

    matplotlib gives every renderer a ``TextToPath`` of its own, whose mathtext parser caches
    per instance. ``savefig(bbox_inches="tight")`` lays the figure out with one renderer and
    writes the SVG with another, so each mathtext string (the ``10^k`` labels of every log axis)
    was parsed twice, a fifth of the drawing time. The shared converter is the one matplotlib
    keeps for ``TextPath`` (``matplotlib.textpath.text_to_path``); what it returns does not
    depend on the instance, so the SVG bytes are unchanged.
    """
    import matplotlib.text
    from matplotlib import textpath

    own = matplotlib.text.TextToPath  # what RendererBase.__init__ calls
    matplotlib.text.TextToPath = lambda: textpath.text_to_path
    try:
        yield
    finally:
        matplotlib.text.TextToPath = own
