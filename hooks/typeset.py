r"""Typeset the mathematics when the site is built, so that no reader's browser has to.

Each page's formulas (arithmatex's ``\( \)`` / ``\[ \]`` elements, and the markdown cells of
notebook pages, whose math is ``$ $`` / ``$$ $$`` in their text) are sent, page by page, to one
Node process for the whole build (``hooks/typeset.js``, MathJax 3.2.2 from npm, fetched and
hash-checked by ``scripts/vendor_mathjax.sh``), which answers with MathJax's CommonHTML output:
the markup the browser used to produce after every page load. Equation numbers and ``\eqref``
links are MathJax's own (one MathJax document per page, numbered from 1 as before); each formula
keeps its TeX as a MathML annotation for ``javascripts/copy_tex.js``.

This runs in ``on_post_page``, after Material's search plugin has indexed the page's text with
the TeX in it (``hooks/search_index.py`` turns that TeX into readable text; this hook first
writes each ``\eqref`` there as the number the page shows). At the end of the
build the stylesheet for every character used on the site and the fonts it names are written to
``assets/mathjax/`` (``extra_css`` in mkdocs.yml links it from every page, so it stays cached
across instant navigation).

A formula MathJax cannot typeset (an unknown macro, a label defined twice) is a warning naming
the page and the TeX: the strict build fails on it.
"""

from __future__ import annotations

import atexit
import json
import logging
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

from mkdocs.exceptions import PluginError

log = logging.getLogger("mkdocs.hooks.typeset")

VERSION = "3.2.2"
# Where scripts/vendor_mathjax.sh puts MathJax's components (git-ignored).
COMPONENTS = Path(".cache") / "mathjax" / VERSION / "es5"
ASSETS = "assets/mathjax"  # in the built site: the stylesheet, and its fonts in woff-v2/
FONTS = "woff-v2"
SCRIPT = Path(__file__).with_name("typeset.js")

_ARITHMATEX = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
_NOTEBOOK_CELL = re.compile(r'<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown[^"]*"[^>]*>')
_DIV = re.compile(r"<div\b|</div>")


def math_spans(html: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the inner HTML of every element whose math is typeset, in page order.

    Arithmatex's elements hold escaped TeX and no tags; a notebook's markdown cell holds HTML,
    so its end is found by counting its nested ``div`` elements.
    """
    spans = [(m.start(2), m.end(2)) for m in _ARITHMATEX.finditer(html)]
    for cell in _NOTEBOOK_CELL.finditer(html):
        depth = 1
        for tag in _DIV.finditer(html, cell.end()):
            depth += 1 if tag.group(0) == "<div" else -1
            if depth == 0:
                spans.append((cell.end(), tag.start()))
                break
    # An arithmatex element inside a cell (none today: notebooks write $...$) is typeset with it.
    kept: list[tuple[int, int]] = []
    for span in sorted(spans):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def splice(html: str, spans: list[tuple[int, int]], parts: list[str]) -> str:
    """``html`` with each span replaced by the matching part."""
    out, last = [], 0
    for (start, end), part in zip(spans, parts, strict=True):
        out += [html[last:start], part]
        last = end
    out.append(html[last:])
    return "".join(out)


class Typesetter:
    """The build's Node process: pages in, typeset HTML out, the stylesheet at the end."""

    def __init__(self, components: Path):
        self._components = components
        self._process: subprocess.Popen | None = None
        self._stderr: list[str] = []
        self.pages = self.fragments = 0
        self.seconds = 0.0  # waiting for answers (Node's start and typesetting)

    def _start(self) -> subprocess.Popen:
        process = subprocess.Popen(
            ["node", str(SCRIPT), str(self._components), FONTS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        threading.Thread(target=self._drain, args=(process.stderr,), daemon=True).start()
        atexit.register(self.close)
        return process

    def _drain(self, stream) -> None:
        for line in stream:
            self._stderr.append(line)

    def ask(self, request: dict) -> dict:
        """Send one request (see typeset.js), return its answer; start the process if needed."""
        start = time.perf_counter()
        if self._process is None:
            self._process = self._start()
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        self.seconds += time.perf_counter() - start
        if not answer:
            self._process.wait(timeout=10)
            raise PluginError("typeset: MathJax's Node process died:\n" + "".join(self._stderr))
        return json.loads(answer)

    @property
    def started(self) -> bool:
        """Whether any page was typeset (the process runs)."""
        return self._process is not None

    def close(self) -> None:
        """End the process (it exits when its input closes)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


_typesetter: Typesetter | None = None
# Page URL -> {label: equation number}: the search index's \eqref get their numbers.
_labels: dict[str, dict[str, str]] = {}
_EQREF = re.compile(r"\\eqref\{([^{}]+)\}")


def components_folder(config) -> Path:
    return Path(config.config_file_path).parent / COMPONENTS


def on_config(config):
    global _typesetter
    folder = components_folder(config)
    if not (folder / "startup.js").is_file():
        raise PluginError(
            f"typeset: MathJax {VERSION} is missing from {COMPONENTS} "
            "(run scripts/vendor_mathjax.sh, or make build)"
        )
    if shutil.which("node") is None:
        raise PluginError("typeset: Node.js typesets the math; install it (apt-get install nodejs)")
    if _typesetter is not None:  # a previous build of `mkdocs serve` that stopped half-way
        _typesetter.close()
    _typesetter = Typesetter(folder)
    _labels.clear()
    return config


def on_post_page(output, page, config):
    spans = math_spans(output)
    if not spans:
        return output
    answer = _typesetter.ask({"fragments": [output[start:end] for start, end in spans]})
    _typesetter.pages += 1
    _typesetter.fragments += len(spans)
    for error in answer["errors"]:
        where = page.file.src_uri
        log.warning("%s: MathJax cannot typeset %r: %s", where, error["tex"], error["message"])
    _labels[page.url] = answer["labels"]
    return splice(output, spans, answer["fragments"])


def on_post_build(config):
    site = Path(config.site_dir) / ASSETS
    site.mkdir(parents=True, exist_ok=True)
    css = _typesetter.ask({"stylesheet": True})["css"] if _typesetter.started else ""
    (site / "mathjax.css").write_text(css, encoding="utf-8")
    # Only the fonts the stylesheet names (those of the characters the site uses).
    fonts = components_folder(config) / "output" / "chtml" / "fonts" / FONTS
    (site / FONTS).mkdir(exist_ok=True)
    for name in sorted(set(re.findall(rf"{FONTS}/([\w-]+\.woff)", css))):
        shutil.copyfile(fonts / name, site / FONTS / name)
    shutil.copyfile(components_folder(config).parent / "LICENSE", site / "LICENSE")
    _typesetter.close()
    log.info(
        "typeset: %d math elements on %d pages in %.1f s (MathJax %s in Node)",
        _typesetter.fragments,
        _typesetter.pages,
        _typesetter.seconds,
        VERSION,
    )
    _number_references(Path(config.site_dir) / "search" / "search_index.json")


def _number_references(index_file: Path) -> None:
    r"""Write each ``\eqref`` of the search index as the number its page shows.

    The search plugin indexed the TeX (before this hook typeset it); hooks/search_index.py, which
    runs later, turns the rest of the TeX into text.
    """
    if not index_file.is_file():
        return
    index = json.loads(index_file.read_text(encoding="utf-8"))
    for entry in index["docs"]:
        found = _labels.get(entry["location"].split("#")[0], {})

        def number(match: re.Match, found=found) -> str:
            tag = found.get(match.group(1))
            return rf"\text{{({tag})}}" if tag else match.group(0)

        entry["text"] = _EQREF.sub(number, entry["text"])
    index_file.write_text(json.dumps(index, separators=(",", ":"), ensure_ascii=False), "utf-8")


def on_build_error(error):
    if _typesetter is not None:
        _typesetter.close()
