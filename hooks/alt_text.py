"""Fill the numbers in the alt texts of figures, computed at build time like the figures.

A page writes the numbers of an alt text as placeholders,

    ![... falls from {start} at distance 0 to {at_50} at distance 50 ...](figures/rope_decay.svg)

and this hook fills them from the facts registered beside the figure: ``@figure_facts`` in
``posenc_ref/plots/`` (the package's :data:`~posenc_ref.plots.FIGURE_FACTS`), or
``site_figure_facts(results)`` in ``benchmarks/figures.py`` for the benchmark page. A placeholder
with no value, or a figure with placeholders and no facts, fails the build. Numbers that are the
figure's inputs (a width, a base, the positions drawn) may stay literal;
``tests/site/test_site.py`` checks that no measured-looking number (a decimal or a power of ten)
is left literal in an alt text.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from mkdocs.exceptions import PluginError

_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>figures/(?P<name>[^)\s/]+\.svg))\)")

_ROOT = Path(__file__).resolve().parents[1]
_cache: dict[str, dict[str, str]] = {}
_registry: dict[str, Callable[[], dict[str, str]]] = {}


def on_pre_build(config):
    # `mkdocs serve`: recompute after every edit of the package or of the benchmark results
    _cache.clear()
    _registry.clear()


def registered() -> dict[str, Callable[[], dict[str, str]]]:
    """Every figure's facts: the package's registry, then the benchmark page's."""
    if not _registry:
        from posenc_ref.plots import FIGURE_FACTS  # freshly imported by hooks/figures.py

        if str(_ROOT) not in sys.path:  # benchmarks/ is a folder at the root, not a package
            sys.path.insert(0, str(_ROOT))
        from benchmarks.figures import site_figure_facts

        path = _ROOT / "benchmarks" / "results.json"
        results = json.loads(path.read_text(encoding="utf-8"))
        _registry.update({**FIGURE_FACTS, **site_figure_facts(results)})
    return _registry


def facts(name: str) -> dict[str, str]:
    """The alt-text values of figure ``name``, computed once per build."""
    if name not in _cache:
        _cache[name] = registered()[name]()
    return _cache[name]


def fill(markdown: str, where: str = "") -> str:
    """``markdown`` with the ``{placeholders}`` in every figure's alt text filled in."""

    def replace(match: re.Match) -> str:
        alt, name = match.group("alt"), match.group("name")
        if "{" not in alt:
            return match.group(0)
        if name not in registered():
            raise PluginError(
                f"{where}: the alt text of {name} has placeholders, but no facts are registered "
                f"for it (@figure_facts beside its @site_figure in posenc_ref/plots/)"
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
