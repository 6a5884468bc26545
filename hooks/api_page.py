"""Expand the API page: one section per public module of ``posenc_ref``, found at build time.

``docs/api.md`` holds the prose and a ``<!-- api-modules -->`` marker; this hook replaces the
marker with ``::: posenc_ref.<module>`` blocks for mkdocstrings, so a module added to the package
(``rope.py``, ``rope_scaling.py``, ...) appears without editing the page. Rendering per module
keeps the reference grouped by topic; mkdocstrings also registers each object under the alias
the package re-exports it as, so ``[inv_freq][posenc_ref.inv_freq]`` and
``[inv_freq][posenc_ref.absolute.inv_freq]`` both resolve.

A subpackage (``plots/``) gets its own section: the package with only the names of its
``__all__`` that none of its public modules defines (the figure registry), then one subsection
per public module, so the figure functions are grouped by the page they draw for and shown
once. ``[heatmap][posenc_ref.plots.heatmap]`` resolves like
``[heatmap][posenc_ref.plots.absolute.heatmap]``, through the package's re-export.
"""

from __future__ import annotations

import ast
from pathlib import Path

PAGE = "api.md"
MARKER = "<!-- api-modules -->"
PACKAGE = "posenc_ref"
# Reading order of the site; modules not listed here follow alphabetically, subpackages last.
ORDER = [
    "device",
    "absolute",
    "properties",
    "relative",
    "rope",
    "rope_scaling",
    "dual_chunk",
    "mrope",
    "axial",
    "models",
    "precision",
]


def _ordered(names: set[str]) -> list[str]:
    return [m for m in ORDER if m in names] + sorted(names - set(ORDER))


def _is_public_package(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith("_") and (path / "__init__.py").is_file()


def public_modules(root: Path) -> list[str]:
    """Dotted names below ``posenc_ref``: modules in reading order, then each subpackage.

    A subpackage is followed by its own public modules (``plots``, ``plots.absolute``, ...).
    """
    top = root / PACKAGE
    modules = _ordered({p.stem for p in top.glob("*.py") if not p.stem.startswith("_")})
    for package in sorted(p for p in top.iterdir() if _is_public_package(p)):
        subs = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")} - {"__init__"}
        modules += [package.name] + [f"{package.name}.{m}" for m in _ordered(subs)]
    return modules


def _own_names(init: Path) -> list[str]:
    """Names of a package's ``__all__`` that its modules do not define (its own API)."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = [ast.literal_eval(e) for e in node.value.elts]
    from_submodules = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module.startswith("_")
        for alias in node.names
    }
    return [name for name in exported if name not in from_submodules]


def blocks(root: Path) -> list[str]:
    """The mkdocstrings blocks that replace the marker."""
    out = []
    for name in public_modules(root):
        path = root / PACKAGE / name.replace(".", "/")
        if path.is_dir():
            members = ", ".join(_own_names(path / "__init__.py"))
            out.append(f"::: {PACKAGE}.{name}\n    options:\n      members: [{members}]")
        elif "." in name:
            out.append(f"::: {PACKAGE}.{name}\n    options:\n      heading_level: 3")
        else:
            out.append(f"::: {PACKAGE}.{name}")
    return out


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    root = Path(config.config_file_path).parent
    return markdown.replace(MARKER, "\n\n".join(blocks(root)))
