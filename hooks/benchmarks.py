"""Benchmark figures and tables for the site, from the committed ``benchmarks/results.json``.

The benchmark page shows measurements, not computations: this hook reads the results file
written by ``python -m benchmarks.run`` and renders the figure functions of
:mod:`posenc_ref.plots` (section "benchmark figures") to generated files
``figures/bench_*.svg``, with the same deterministic SVG settings as every other figure. It also
puts the project root on ``sys.path``, so that the page's ``markdown-exec`` blocks can import
``benchmarks.report`` (a folder at the root, not an installed package) to print the tables.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.benchmarks")

# Output file -> (figure function in posenc_ref.plots, keyword arguments).
FIGURES = {
    "figures/bench_sinusoidal.svg": ("bench_sinusoidal_figure", {}),
    "figures/bench_accuracy.svg": ("bench_accuracy_figure", {}),
    "figures/bench_rope_cpu.svg": ("bench_rope_figure", {"device": "cpu"}),
    "figures/bench_rope_cuda.svg": ("bench_rope_figure", {"device": "cuda"}),
}


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _results_path(config) -> Path:
    return _root(config) / "benchmarks" / "results.json"


def on_config(config):
    root = str(_root(config))
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_files(files, config):
    path = _results_path(config)
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PluginError(
            f"{path} is missing or unreadable ({exc}); run `python -m benchmarks.run`"
        ) from exc
    plots = importlib.import_module("posenc_ref.plots")
    devices = {case["device"] for case in results["benchmarks"]["rope"]["cases"]}
    for uri, (name, kwargs) in FIGURES.items():
        if kwargs.get("device", "cpu") not in devices:
            continue  # no GPU in the results: the page says so instead of showing a figure
        if files.get_file_from_path(uri) is not None:
            raise PluginError(f"docs/{uri} exists, but benchmark figures are generated")
        draw = getattr(plots, name)
        try:
            svg = plots.render_svg(lambda draw=draw, kwargs=kwargs: draw(results, **kwargs))
        except Exception as exc:
            raise PluginError(f"benchmark figure {uri} ({name}) failed: {exc!r}") from exc
        files.append(File.generated(config, uri, content=svg))
    log.info(
        "benchmarks: figures drawn from %s (measured %s)", path.name, results["machine"]["date_utc"]
    )
    return files


def on_serve(server, config, builder):
    # `mkdocs serve` watches the package and the hooks; the results file lives elsewhere.
    server.watch(str(_results_path(config)))
    return server
