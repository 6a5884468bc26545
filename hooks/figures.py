"""Render every registered site figure to ``figures/<name>`` at build time.

Figures are drawn by the package itself: a function in ``posenc_ref/plots.py`` decorated with
``@site_figure("name.svg")`` becomes ``figures/name.svg`` in the built site, and a page shows it
with ``![...](figures/name.svg)``. The SVGs are added as generated files, so nothing is written
into ``docs/`` (``mkdocs serve`` would otherwise rebuild in a loop) and nothing is committed.
MkDocs' link validation sees them like any other file, so a page that refers to an unregistered
figure fails the strict build.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.figures")

FOLDER = "figures"


def _fresh_plots():
    # `mkdocs serve` keeps sys.modules between rebuilds: without this, edits to the package would
    # leave the figures stale (and @site_figure would see the same names registered twice).
    for name in [m for m in sys.modules if m == "posenc_ref" or m.startswith("posenc_ref.")]:
        del sys.modules[name]
    return importlib.import_module("posenc_ref.plots")


def on_files(files, config):
    plots = _fresh_plots()
    start = time.perf_counter()
    for name, make in plots.SITE_FIGURES.items():
        uri = f"{FOLDER}/{name}"
        if files.get_file_from_path(uri) is not None:
            # A committed copy would silently shadow (or be shadowed by) the generated one.
            raise PluginError(f"docs/{uri} exists, but figures are generated: delete the file")
        try:
            svg = plots.render_svg(make)
        except Exception as exc:
            raise PluginError(
                f"figure {name!r} ({make.__module__}.{make.__qualname__}) failed: {exc!r}"
            ) from exc
        files.append(File.generated(config, uri, content=svg))
    log.info(
        "figures: %d SVG rendered in %.1f s",
        len(plots.SITE_FIGURES),
        time.perf_counter() - start,
    )
    return files
