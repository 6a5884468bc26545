"""Render every registered figure to ``figures/<name>`` at build time, from two registries.

The registries:

- ``posenc_ref.plots.SITE_FIGURES``: a function in ``posenc_ref/plots/`` decorated with
  ``@site_figure("name.svg")`` becomes ``figures/name.svg``;
- ``benchmarks.figures.site_figures(results)``: the benchmark page's figures, drawn from the
  committed ``benchmarks/results.json`` (measurements, not computations, so they live beside the
  benchmarks rather than in the package);
- ``experiments.report.site_figures(data)``: the comparison page's figures, drawn from the
  committed ``experiments/comparison.json.gz`` (trained models' scores, likewise measurements).

A page shows a figure with ``![...](figures/name.svg)``. The SVGs are added as generated files, so
nothing is written into ``docs/`` (``mkdocs serve`` would otherwise rebuild in a loop) and nothing
is committed. MkDocs' link validation sees them like any other file, so a page that refers to an
unregistered figure fails the strict build.
"""

from __future__ import annotations

import gzip
import importlib
import json
import logging
import sys
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.figures")

FOLDER = "figures"


def _fresh(module: str, *packages: str):
    # `mkdocs serve` keeps sys.modules between rebuilds: without this, edits to the package would
    # leave the figures stale (and @site_figure would see the same names registered twice).
    for name in [m for m in sys.modules if m in packages or m.startswith(packages)]:
        del sys.modules[name]
    return importlib.import_module(module)


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _benchmark_figures(config) -> dict:
    root = str(_root(config))
    if root not in sys.path:  # benchmarks/ is a folder at the root, not an installed package
        sys.path.insert(0, root)
    figures = _fresh("benchmarks.figures", "benchmarks", "benchmarks.")
    path = _root(config) / "benchmarks" / "results.json"
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PluginError(
            f"{path} is missing or unreadable ({exc}); run `python -m benchmarks.run`"
        ) from exc
    return figures.site_figures(results)


def _experiment_figures(config) -> dict:
    root = str(_root(config))
    if root not in sys.path:
        sys.path.insert(0, root)
    report = _fresh("experiments.report", "experiments", "experiments.")
    path = _root(config) / "experiments" / "comparison.json.gz"
    try:
        data = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise PluginError(
            f"{path} is missing or unreadable ({exc}); run `python -m experiments.compare`"
        ) from exc
    return report.site_figures(data)


def _describe(make) -> str:
    return f"{getattr(make, '__module__', '?')}.{getattr(make, '__qualname__', repr(make))}"


def on_files(files, config):
    plots = _fresh("posenc_ref.plots", "posenc_ref", "posenc_ref.")
    start = time.perf_counter()
    figures = dict(plots.SITE_FIGURES)
    for source, extra in (
        ("the benchmarks", _benchmark_figures(config)),
        ("the experiments", _experiment_figures(config)),
    ):
        for name, make in extra.items():
            if name in figures:
                raise PluginError(f"figure {name!r} is registered twice (again by {source})")
            figures[name] = make
    for name, make in figures.items():
        uri = f"{FOLDER}/{name}"
        if files.get_file_from_path(uri) is not None:
            # A committed copy would silently shadow (or be shadowed by) the generated one.
            raise PluginError(f"docs/{uri} exists, but figures are generated: delete the file")
        try:
            svg = plots.render_svg(make)
        except Exception as exc:
            raise PluginError(f"figure {name!r} ({_describe(make)}) failed: {exc!r}") from exc
        files.append(File.generated(config, uri, content=svg))
    log.info(
        "figures: %d SVG rendered in %.1f s (%d from posenc_ref.plots, %d from benchmarks and "
        "experiments)",
        len(figures),
        time.perf_counter() - start,
        len(plots.SITE_FIGURES),
        len(figures) - len(plots.SITE_FIGURES),
    )
    return files
