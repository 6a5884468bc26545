"""Figures of the model zoo page: per-pair wavelengths of released RoPE configs.

Shown on ``models.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import _pyplot
from ._registry import default_of, figure_facts, site_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "zoo_wavelengths",
]


def zoo_wavelengths(rows: list[dict] | None = None) -> Figure:
    r"""Per-pair wavelengths of released models on a log axis, one row per model (and layer type).

    Each dot is one rotary pair's wavelength :math:`2\pi/\omega_i` in positions, with the
    frequencies used inside the original context (LongRoPE: the short list); pairs with frequency
    0 (``proportional``) are left out. A black bar marks the original context :math:`L`, a grey
    bar the extended one: the dots left of the black bar complete a full turn during
    pre-training.

    Parameters
    ----------
    rows
        Rows of :func:`posenc_ref.models.zoo_rows`; ``None`` draws every released family.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import numpy as np

    from ..models import zoo_rows

    plt = _pyplot()
    rows = zoo_rows() if rows is None else rows
    fig, ax = plt.subplots(figsize=(9, 0.36 * len(rows) + 1.4))
    labels = []
    for y, row in enumerate(reversed(rows)):
        spec = row["spec"]
        omega = spec.inv_freq.numpy()
        omega = omega[omega > 0]
        wavelength = 2 * np.pi / omega
        partial = "partial" if spec.rotary_dim < spec.head_dim else "full"
        color = {"full": "C0", "partial": "C1"}[partial]
        if spec.mrope_section is not None:
            color = "C2"
        ax.plot(wavelength, np.full_like(wavelength, y), "|", color=color, ms=7, mew=1.2)
        if row["original"] is not None:
            ax.plot([row["original"]] * 2, [y - 0.38, y + 0.38], color="k", lw=2)
        if row["extended"] is not None and row["extended"] != row["original"]:
            ax.plot([row["extended"]] * 2, [y - 0.38, y + 0.38], color="0.55", lw=2)
        name = row["name"] + (f" ({row['layer_type'].split('_')[0]})" if row["layer_type"] else "")
        labels.append(name)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(r"wavelength $2\pi/\omega_i$ (positions), one tick per rotary pair")
    ax.grid(axis="x", alpha=0.3, which="major")
    handles = [
        plt.Line2D([], [], color="C0", marker="|", ls="", ms=8, label="pairs (full rotary)"),
        plt.Line2D([], [], color="C1", marker="|", ls="", ms=8, label="pairs (partial rotary)"),
        plt.Line2D([], [], color="C2", marker="|", ls="", ms=8, label="pairs (M-RoPE)"),
        plt.Line2D([], [], color="k", lw=2, label="original context"),
        plt.Line2D([], [], color="0.55", lw=2, label="extended context"),
    ]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=5, fontsize=8)
    ax.set_title("Per-pair wavelengths of released RoPE configs", fontsize=11)
    fig.tight_layout()
    return fig


@site_figure("zoo_wavelengths.svg")
def _site_zoo_wavelengths() -> Figure:
    return zoo_wavelengths()


@figure_facts("zoo_wavelengths.svg")
def _zoo_wavelengths_facts() -> dict[str, str]:
    import numpy as np

    from ..models import zoo_rows

    rows = default_of(zoo_wavelengths, "rows")
    rows = zoo_rows() if rows is None else rows  # None: every released family, as drawn
    omega = [row["spec"].inv_freq.numpy() for row in rows]
    lam = np.concatenate([2 * np.pi / w[w > 0] for w in omega])  # frequency 0 is not drawn
    return {"shortest": f"{lam.min():.1f}", "longest": f"{lam.max() / 1e6:.0f} million"}
