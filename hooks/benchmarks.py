"""What the benchmark page needs from the build besides its figures.

The page shows measurements, not computations: its tables come from the committed
``benchmarks/results.json`` (written by ``python -m benchmarks.run``) through ``markdown-exec``
blocks that import ``benchmarks.report``, and its figures from ``benchmarks/figures.py``, which
``hooks/figures.py`` renders with every other figure. This hook puts the project root on
``sys.path`` (``benchmarks`` is a folder at the root, not an installed package) and makes
``mkdocs serve`` rebuild when the results file or the figure module changes.
"""

from __future__ import annotations

import sys
from pathlib import Path


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_config(config):
    root = str(_root(config))
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_serve(server, config, builder):
    # `mkdocs serve` watches the package and the hooks; the results and their figures live
    # elsewhere.
    for name in ("results.json", "figures.py"):
        server.watch(str(_root(config) / "benchmarks" / name))
    for name in ("comparison.json.gz", "report.py"):  # the comparison page, likewise
        server.watch(str(_root(config) / "experiments" / name))
    return server
