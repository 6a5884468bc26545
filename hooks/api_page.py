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
    "relative_terms",
    "rope_functions",
    "rope",
    "rope_design",
    "rope_scaling_functions",
    "rope_scaling",
    "query_scale",
    "rope_extension",
    "dual_chunk",
    "mrope",
    "axial",
    "beyond_rope",
    "models",
    "precision",
]


def _ordered(names: set[str]) -> list[str]:
    return [m for m in ORDER if m in names] + sorted(names - set(ORDER))


def _is_public_package(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith("_") and (path / "__init__.py").is_file()


def _package_modules(package: Path, prefix: str) -> list[str]:
    """A subpackage, its public modules, then its own subpackages (each the same way)."""
    name = f"{prefix}{package.name}"
    subs = {p.stem for p in package.glob("*.py") if not p.stem.startswith("_")} - {"__init__"}
    modules = [name] + [f"{name}.{m}" for m in _ordered(subs)]
    for inner in sorted(p for p in package.iterdir() if _is_public_package(p)):
        modules += _package_modules(inner, f"{name}.")
    return modules


def public_modules(root: Path) -> list[str]:
    """Dotted names below ``posenc_ref``: modules in reading order, then each subpackage.

    A subpackage is followed by its own public modules (``plots``, ``plots.absolute``, ...) and
    its subpackages (``models.families``, ...).
    """
    top = root / PACKAGE
    modules = _ordered({p.stem for p in top.glob("*.py") if not p.stem.startswith("_")})
    for package in sorted(p for p in top.iterdir() if _is_public_package(p)):
        modules += _package_modules(package, "")
    return modules


def _is_public_import(node: ast.ImportFrom) -> bool:
    """``from .module import x`` (at any depth) from a module with no private part in its name."""
    parts = (node.module or "").split(".")
    return node.level >= 1 and not any(part.startswith("_") for part in parts)


def _own_names(path: Path) -> tuple[list[str], list[str]]:
    """``(own, exported)``: what of ``__all__`` no other public module defines; all of it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            exported = [ast.literal_eval(e) for e in node.value.elts]
    from_public = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and _is_public_import(node)
        for alias in node.names
    }
    return [name for name in exported if name not in from_public], exported


def blocks(root: Path) -> list[str]:
    """The mkdocstrings blocks that replace the marker.

    A module that re-exports names of another public module (``rope`` re-exports
    ``rope_functions``; a package its modules' names) shows only its own: each object is shown
    once, where it is defined, and resolves under every name it is exported as.
    """
    out = []
    for name in public_modules(root):
        path = root / PACKAGE / name.replace(".", "/")
        source = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        own, exported = _own_names(source)
        options = [] if "." not in name else ["      heading_level: 3"]
        if path.is_dir() or own != exported:
            options.append(f"      members: [{', '.join(own)}]")
        block = f"::: {PACKAGE}.{name}"
        out.append(block + ("\n    options:\n" + "\n".join(options) if options else ""))
    return out


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    root = Path(config.config_file_path).parent
    return markdown.replace(MARKER, "\n\n".join(blocks(root)))
