"""The API reference: one page per public module of ``posenc_ref``, found at build time.

``docs/api.md`` holds the prose and a ``<!-- api-modules -->`` marker; this hook replaces the
marker with a table of the modules (each linked, with the first line of its docstring) and
generates one page per module, ``api/<module>.md`` with a ``::: posenc_ref.<module>`` block for
mkdocstrings, so a module added to the package (``rope.py``, ``rope_scaling.py``, ...) appears
without editing anything. The nav's ``api.md`` entry becomes an "API reference" section: the
overview, the modules in reading order, and a subsection per subpackage. One page per module
keeps each page light to open (the whole reference was one 2 MB page with 1,770 formulas).

mkdocstrings registers each object under the alias the package re-exports it as, so
``[inv_freq][posenc_ref.inv_freq]`` and ``[inv_freq][posenc_ref.absolute.inv_freq]`` both
resolve, to the module page that shows it. A subpackage (``plots/``) gets a page of its own for
the names of its ``__all__`` that none of its public modules defines (the figure registry), then
a page per public module, so the figure functions are grouped by the page they draw for and
shown once. ``[heatmap][posenc_ref.plots.heatmap]`` resolves like
``[heatmap][posenc_ref.plots.absolute.heatmap]``, through the package's re-export.

The module pages sit one folder down (``api/``): the docstrings' links to pages (written from
the site's root, ``rope_scaling.md#scaling-yarn``) are rewritten for that by hooks/griffe_rst.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from mkdocs.structure.files import File

PAGE = "api.md"
FOLDER = "api"  # api/<module>.md
MARKER = "<!-- api-modules -->"
PACKAGE = "posenc_ref"
SECTION = "API reference"
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


def _source(root: Path, name: str) -> Path:
    path = root / PACKAGE / name.replace(".", "/")
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def block(root: Path, name: str) -> str:
    """The mkdocstrings block of one module's page: the module is the page's heading.

    A module that re-exports names of another public module (``rope`` re-exports
    ``rope_functions``; a package its modules' names) shows only its own: each object is shown
    once, where it is defined, and resolves under every name it is exported as.
    """
    own, exported = _own_names(_source(root, name))
    options = ["      heading_level: 1"]
    if (root / PACKAGE / name.replace(".", "/")).is_dir() or own != exported:
        options.append(f"      members: [{', '.join(own)}]")
    return f"::: {PACKAGE}.{name}\n    options:\n" + "\n".join(options) + "\n"


def page_path(name: str) -> str:
    """The module's page, relative to docs/: ``api/rope.md``, ``api/models.family.md``."""
    return f"{FOLDER}/{name}.md"


def _title(name: str, packages: set[str]) -> str:
    short = name.rsplit(".", 1)[-1]
    return f"{short} (package)" if name in packages else short


def nav_section(root: Path) -> list:
    """The nav's "API reference" section: the overview, each module, a subsection per package."""
    modules = public_modules(root)
    packages = {m for m in modules if (root / PACKAGE / m.replace(".", "/")).is_dir()}

    def children(parent: str | None) -> list:
        out = []
        for name in modules:
            owner = name.rsplit(".", 1)[0] if "." in name else None
            if name in packages and owner == parent:
                inner = children(name)
                # A package with no public module of its own is one page, not a section.
                section = len(inner) > 1
                out.append({name.rsplit(".", 1)[-1]: inner if section else page_path(name)})
            elif name == parent:
                out.insert(0, {_title(name, packages): page_path(name)})
            elif owner == parent and name not in packages:
                out.append({_title(name, packages): page_path(name)})
        return out

    return [{"Overview": PAGE}, *children(None)]


def pages(root: Path) -> list[str]:
    """Every generated module page (``api/<module>.md``), in reading order."""
    return [page_path(name) for name in public_modules(root)]


_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_ROLE = re.compile(r":\w+:`~?(?:[\w.]*\.)?([\w]+(?:\(\))?)`")


def _summary(root: Path, name: str) -> str:
    """The first paragraph of the module's docstring, its Sphinx roles as Markdown."""
    doc = ast.get_docstring(ast.parse(_source(root, name).read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.strip().split("\n\n", 1)[0].split())
    first = _MATH_ROLE.sub(lambda m: rf"\({m.group(1)}\)", first)
    return _ROLE.sub(r"`\1`", first).replace("|", "\\|")


def overview(root: Path) -> str:
    """The table that replaces the marker on api.md: each module, linked, and what it holds."""
    rows = ["| module | |", "|:--|:--|"]
    for name in public_modules(root):
        rows.append(f"| [`{PACKAGE}.{name}`]({page_path(name)}) | {_summary(root, name)} |")
    return "\n".join(rows)


def _root(config) -> Path:
    return Path(config.config_file_path).parent


def on_config(config):
    # The nav's api.md entry becomes the section; no api.md in the nav, nothing to expand.
    if not config.nav:
        return config
    for i, item in enumerate(config.nav):
        if isinstance(item, dict) and list(item.values()) == [PAGE]:
            config.nav[i] = {SECTION: nav_section(_root(config))}
    return config


def on_files(files, config):
    root = _root(config)
    for name in public_modules(root):
        files.append(File.generated(config, page_path(name), content=block(root, name)))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, overview(_root(config)))
