r"""Griffe extension: render the package's Sphinx-style markup on the API page.

The docstrings of ``posenc_ref`` are written for ``help()`` and IDEs too, so they use the
reStructuredText forms (``:math:`...```, ``.. math::`` blocks, ``:func:`name```) that
mkdocstrings would otherwise print literally. Before mkdocstrings parses a docstring, this
rewrites them into the site's Markdown:

* ``:math:`x```            -> ``\(x\)``, typeset by MathJax like any inline math;
* ``.. math::`` + block    -> a ``$$ ... $$`` display block;
* ``:func:`name``` (also ``class``, ``mod``, ``meth``, ``attr``, ``data``, ``obj``, ``exc``)
  -> a cross-reference to the API entry, e.g. ``[`sinusoidal`][posenc_ref.sinusoidal]``.
  A bare name is looked up in the docstring's module, then at the package root; a leading
  ``~`` shows only the last component, as in Sphinx. A name that is not found stays code.
* a link to a page of the site, written from the site's root as the pages write them
  (``[YaRN](rope_scaling.md#scaling-yarn)``) -> the same from ``api/``, where the module pages
  are (hooks/api_page.py): ``../rope_scaling.md#scaling-yarn``. MkDocs then checks it like any
  link of a page (the strict build fails on a missing page or anchor).

Loaded through mkdocstrings' ``extensions`` option in mkdocs.yml. The package is not changed.
"""

from __future__ import annotations

import logging
import re

import griffe

log = logging.getLogger("mkdocs.hooks.griffe_rst")

_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_XREF_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|obj|exc):`(~?)([\w.]+)(\(\))?`")
# A Markdown link to a site page: relative, not from a parent folder, not a URL or an anchor.
_PAGE_LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|/|#|\.\./)([^()\s]+\.md(?:#[^()\s]*)?)\)")
_MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<inline>.*)$")


def math_blocks(text: str) -> str:
    """Turn each ``.. math::`` directive and its indented body into a ``$$`` block."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        m = _MATH_DIRECTIVE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("inline")] if m.group("inline").strip() else []
        i += 1
        while i < len(lines) and (
            not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)
        ):
            body.append(lines[i])
            i += 1
        # Arithmatex wants the TeX right after "$$": no blank line inside the block.
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        body = [line for line in body if not line.strip().startswith(":")]  # :label: etc.
        depth = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
        # Sphinx reads blank-line separated parts as separate equations: one block each.
        for part in re.split(r"\n[ \t]*\n", "\n".join(b[depth:] for b in body)):
            if part.strip():
                out += [f"{indent}$$", *(indent + b for b in part.splitlines()), f"{indent}$$", ""]
    return "\n".join(out)


def _resolver(obj: griffe.Object, package: griffe.Module):
    def resolve(match: re.Match) -> str:
        tilde, name, call = match.group(1), match.group(2), match.group(3) or ""
        shown = name.rsplit(".", 1)[-1] if tilde else name
        candidates = [name] if "." in name else []
        if obj.module is not None:
            candidates.append(f"{obj.module.path}.{name}")
        candidates.append(f"{package.path}.{name}")
        for path in candidates:
            try:
                target = package.modules_collection[path]
            except KeyError:
                continue
            del target  # found: autorefs resolves the path (aliases included) on the page
            return f"[`{shown}{call}`][{path}]"
        log.debug("griffe_rst: %s: no target for %s", obj.path, match.group(0))
        return f"`{shown}{call}`"

    return resolve


def _walk(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class RstToMarkdown(griffe.Extension):
    """Rewrite Sphinx roles and math directives in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        """Run once the whole package is loaded, so cross-references can be checked."""
        for obj in _walk(pkg):
            if obj.docstring is None:
                continue
            text = math_blocks(obj.docstring.value)
            text = _MATH_ROLE.sub(lambda m: rf"\({m.group(1)}\)", text)
            text = _PAGE_LINK.sub(r"](../\1)", text)
            obj.docstring.value = _XREF_ROLE.sub(_resolver(obj, pkg), text)
