"""What the figure modules share: pyplot on a headless backend, and the look of a table."""

from __future__ import annotations


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in {"agg", "svg", "pdf"} and not _in_notebook():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _in_notebook() -> bool:
    import sys

    return "ipykernel" in sys.modules


# Shared look: a diverging map centred on 0, because every table value lies in [-1, 1].
_TABLE_CMAP = "RdBu_r"


def _table_image(ax, table, *, vmin=-1.0, vmax=1.0, cmap=_TABLE_CMAP, rasterized=False):
    """Show a ``(rows, cols)`` array as an image, row 0 at the top, like the printed table."""
    return ax.imshow(
        table,
        aspect="auto",
        interpolation="nearest",
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        rasterized=rasterized,
    )
