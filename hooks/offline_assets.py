"""Keep the site offline: every script, style, font and image it loads comes from its own host.

Two checks, because neither MkDocs' link validation nor its strict mode looks at them:

* ``on_config``: each ``extra_javascript`` / ``extra_css`` entry is a relative path to a file in
  ``docs/`` (or under ``assets/``, which the build writes: MathJax's stylesheet, by
  hooks/typeset.py). Without this, a page would load a script that is not there and nothing
  would say so.
* ``on_post_page``: the final HTML of each page loads nothing from another host (a CDN script
  pasted into a page, Google Fonts coming back through ``theme.font``, an external image). Links
  (``<a href>``) and the canonical URL are fine: they load nothing. Each finding is a warning,
  which the strict build turns into a failure after listing all of them.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.offline_assets")

_OFF_HOST = re.compile(r"^\s*(?:https?:)?//", re.I)
# Elements whose attribute makes the browser fetch something when the page loads.
_FETCHING = re.compile(
    r"<(?P<tag>script|img|iframe|source|video|audio|embed|track|input)\b[^>]*?"
    r"\s(?:src|srcset)\s*=\s*(?P<q>[\"']?)(?P<url>[^\"'\s>]+)"
    r"|<object\b[^>]*?\sdata\s*=\s*(?P<q2>[\"']?)(?P<url2>[^\"'\s>]+)",
    re.I,
)
_LINK = re.compile(r"<link\b[^>]*>", re.I)
_LINK_REL = re.compile(r"\srel\s*=\s*[\"']?([^\"'>]+)", re.I)
_LINK_HREF = re.compile(r"\shref\s*=\s*[\"']?([^\"'\s>]+)", re.I)
# rel values that fetch or open a connection; canonical/alternate/next/prev only name a URL.
_FETCHING_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "preconnect",
    "dns-prefetch",
    "icon",
    "manifest",
}
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\()?\s*["']?((?:https?:)?//[^"')\s]+)""", re.I)
_JS_IMPORT = re.compile(r"""\bimport\s*\(\s*["'`]((?:https?:)?//[^"'`]+)""")


def on_config(config):
    docs = Path(config.docs_dir)
    for asset in [*config.extra_javascript, *config.extra_css]:
        ref = str(asset)
        if _OFF_HOST.match(ref) or "://" in ref:
            raise PluginError(f"off-host asset {ref!r} in mkdocs.yml: self-host it under docs/")
        # assets/... are written at build time (mkdocstrings' CSS, MathJax's), not read from docs/.
        if not ref.startswith("assets/") and not (docs / ref).is_file():
            raise PluginError(f"extra asset {ref!r} is missing from docs/")
    return config


def off_host_loads(html: str) -> list[str]:
    """Return the off-host URLs that this HTML would fetch when loaded."""
    found = []
    for m in _FETCHING.finditer(html):
        url = m.group("url") or m.group("url2")
        if url and _OFF_HOST.match(url):
            found.append(url)
    for tag in _LINK.findall(html):
        rel = _LINK_REL.search(tag)
        href = _LINK_HREF.search(tag)
        rels = set(rel.group(1).lower().split()) if rel else set()
        if href and rels & _FETCHING_RELS and _OFF_HOST.match(href.group(1)):
            found.append(href.group(1))
    found += _CSS_IMPORT.findall(html)
    found += _JS_IMPORT.findall(html)
    return found


def on_post_page(output, page, config):
    for url in off_host_loads(output):
        log.warning("%s loads %s from another host; the site must work offline", page.url, url)
    return output
