"""Expand the API page: one section per public module of ``posenc_ref``, found at build time.

``docs/api.md`` holds the prose and a ``<!-- api-modules -->`` marker; this hook replaces the
marker with ``::: posenc_ref.<module>`` blocks for mkdocstrings, so a module added to the package
(``rope.py``, ``rope_scaling.py``, ...) appears without editing the page. Rendering per module
keeps the reference grouped by topic; mkdocstrings also registers each object under the alias
the package re-exports it as, so ``[inv_freq][posenc_ref.inv_freq]`` and
``[inv_freq][posenc_ref.absolute.inv_freq]`` both resolve.
"""

from __future__ import annotations

from pathlib import Path

PAGE = "api.md"
MARKER = "<!-- api-modules -->"
PACKAGE = "posenc_ref"
# Reading order of the site; modules not listed here follow alphabetically.
ORDER = ["device", "absolute", "relative", "rope", "rope_scaling", "plots"]


def public_modules(root: Path) -> list[str]:
    found = {p.stem for p in (root / PACKAGE).glob("*.py") if not p.stem.startswith("_")}
    return [m for m in ORDER if m in found] + sorted(found - set(ORDER))


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE or MARKER not in markdown:
        return markdown
    root = Path(config.config_file_path).parent
    blocks = [f"::: {PACKAGE}.{name}" for name in public_modules(root)]
    return markdown.replace(MARKER, "\n\n".join(blocks))
