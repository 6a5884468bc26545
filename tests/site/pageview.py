"""One load of a page answers every browser check on it: :func:`view_page` and :class:`PageView`.

Loading a long page is most of a browser test's time, so each page is loaded once, at the first
of :data:`WIDTHS` (a laptop, where both sidebars show), inspected, measured, resized to each
other width and measured there, and its widgets are driven last. (Material mounts code blocks
lazily, ``content.lazy`` in mkdocs.yml: mounted eagerly it forced a layout per block while the
page loaded, 828 on the Tests page.) The ``page_view`` fixture (``tests/site/conftest.py``)
caches the views for all the tests that read them (``test_site.py``: rendering, overflow,
widget fit, widget numbers).

Screenshots are artifacts for a human, not checks: the first screen of each page at each of
:data:`WIDTHS` (what a reader sees on opening it), and each widget at each width.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

WAIT_TIMEOUT_MS = 20_000
LOAD_TIMEOUT_MS = 180_000  # the longest pages took 30 s to load under load (before issue 43)
WIDTHS = (1280, 390)  # a laptop (both sidebars shown), a phone
SCREEN_HEIGHT = 900
# Page captures are of the viewport as the checks left it: a capture beyond it (Playwright's
# ``full_page``, even clipped) lays out and paints the whole document, 80 s for the API page;
# a viewport made eight screens tall for the capture and restored cost ~1.2 CPU-s a capture,
# about 40% of a page view, for a picture no check reads. They are saved as JPEG: PNG costs
# about twice as much to encode, and at this quality text and formulas read as sharply.
SHOT_QUALITY = 85
# Captures keep the text caret as it is (no input has focus when they are taken): Playwright's
# default hides it by adding a style sheet to the page for each capture, and the style of the
# whole document is recomputed twice (0.15-0.2 CPU-s a capture on the API and Tests pages,
# ~0.3 on the explorer's widget).
CARET = "initial"

# Runs in the page: what did not render, and which images did not load. Code and rendered math
# are removed before looking for TeX delimiters: code may legitimately contain them. The math is
# typeset when the site is built (hooks/typeset.py): no typesetter may be loaded in the page.
INSPECT_PAGE = """
async () => {
  const article = document.querySelector("article") || document.body;
  const math = [...document.querySelectorAll(".arithmatex")];
  const clone = article.cloneNode(true);
  clone.querySelectorAll("pre, code, mjx-container, script, style, .highlight")
       .forEach((e) => e.remove());
  const text = clone.textContent;
  const images = [...document.images];
  for (const img of images) img.loading = "eager";
  await Promise.allSettled(images.map((img) => img.decode()));
  const broken = images.filter((img) => !img.complete || img.naturalWidth === 0)
                       .map((img) => img.currentSrc || img.src);
  return {
    math: math.length,
    unrendered: math.filter((e) => !e.querySelector("mjx-container")).length,
    merrors: [...document.querySelectorAll("mjx-merror")].map((e) => e.textContent).slice(0, 5),
    typesetters: [...document.scripts].map((e) => e.src).filter((src) => /mathjax|katex/i.test(src))
      .concat(window.MathJax ? ["window.MathJax"] : []),
    text,
    images: images.length,
    broken,
    outputs: document.querySelectorAll(".jp-OutputArea-output").length,
  };
}
"""

# Every widget has started, and those that load the model list have it (explorer.js sets
# data-pe-zoo once the list is in, or shows a note when it could not be loaded).
WIDGETS_READY = """
() => [...document.querySelectorAll(".pe-widget")].every((e) => e.posencExplorer &&
  (!e.dataset.zoo || e.dataset.peZoo || e.querySelector(".pe-note")))
"""

# Two animation frames after a resize: the resize event, Material's handlers and any
# ResizeObserver have run, and layout is read synchronously by the checks that follow.
_SETTLED = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"

# Runs in the page at the current viewport width. At desktop width every code block, table
# wrapper and display equation fits its box (nothing hidden behind a scroll bar); at every width
# every figure, widget and image stays inside the article, and the document itself never scrolls
# sideways (on a phone, code and tables may scroll inside their own box).
# Closed <details> are opened for the desktop scan and closed again in the same task: reading a
# box inside a closed one lays that subtree out on its own (816 separate layouts on the Tests
# page, 36 s), opened together they are laid out once. Nothing renders in between.
OVERFLOW = """
(desktop) => {
  const article = document.querySelector("article.md-content__inner") || document.body;
  const box = article.getBoundingClientRect();
  const name = (e) => {
    const text = (e.getAttribute("src") || e.textContent || "").trim().replace(/\\s+/g, " ");
    return `${e.tagName.toLowerCase()} "${text.slice(0, 50)}"`;
  };
  const found = [];
  if (desktop) {
    const closed = [...article.querySelectorAll("details:not([open])")];
    for (const d of closed) d.open = true;
    const boxes = article.querySelectorAll(
      "pre > code, .md-typeset__scrollwrap, .jp-InputArea pre, .jp-OutputArea-output pre, " +
      "mjx-container[display]");
    for (const e of boxes) {
      if (e.scrollWidth > e.clientWidth + 1) {
        found.push(`scrolls (${e.scrollWidth} > ${e.clientWidth} px): ${name(e)}`);
      }
    }
    for (const d of closed) d.open = false;
  }
  const figures = article.querySelectorAll(
    "img, figure, canvas, iframe, svg:not(mjx-container svg):not(.md-icon svg):not(button svg)");
  for (const e of figures) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1)) {
      found.push(`outside the article (${Math.round(r.left)}..${Math.round(r.right)} px, ` +
                 `article ${Math.round(box.left)}..${Math.round(box.right)}): ${name(e)}`);
    }
  }
  const page = document.documentElement;
  if (page.scrollWidth > window.innerWidth) {
    const wide = [...article.querySelectorAll("*")].filter((e) =>
      e.getBoundingClientRect().right > window.innerWidth + 1 &&
      !e.closest("pre, .md-typeset__scrollwrap, mjx-container[display]") &&
      !(e.parentElement && e.parentElement.getBoundingClientRect().right > window.innerWidth + 1));
    found.push(`the page scrolls sideways (${page.scrollWidth} > ${window.innerWidth} px): ` +
               wide.slice(0, 3).map(name).join("; "));
  }
  return found;
}
"""

# The widgets' own fit: no part of a widget (nor an article figure or image) is wider than the
# article; and how wide the document is against the screen.
WIDGET_FIT = """
() => {
  const article = document.querySelector("article").getBoundingClientRect();
  const wide = [];
  const all = ".pe-widget, .pe-widget *, article figure, article img";
  for (const e of document.querySelectorAll(all)) {
    const r = e.getBoundingClientRect();
    if (r.width && (r.right > article.right + 1 || r.left < article.left - 1)) {
      const name = `${e.tagName}.${e.className.baseVal ?? e.className}`;
      wide.push(`${name} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {wide: wide.slice(0, 5), page: document.documentElement.scrollWidth,
          screen: document.documentElement.clientWidth};
}
"""

# A widget's state and result, as explorer.js holds them (the error text when it refused), read
# by :func:`widget_state`. It comes back as one JSON string: Playwright's own transfer of the
# ~1500 numbers of a result (each an object of its protocol, checked and built in Python) cost
# ~80 ms a read, 2 CPU-s in the test that loads every family. The JSON is exact as Playwright's
# transfer was: shortest round-trip digits for every finite number, NaN and +-Infinity written
# as the literals Python's json reads, undefined as null.
WIDGET_STATE = """(e) => JSON.stringify({
  state: e.posencExplorer.state,
  result: e.posencExplorer.result,
  error: e.posencExplorer.result ? null : e.querySelector(".pe-error").textContent,
}, (key, v) => v === undefined ? null :
  typeof v === "number" && !Number.isFinite(v) ? `@nonfinite@${v}` : v)
  .replace(/"@nonfinite@(NaN|-?Infinity)"/g, "$1")"""


def wait_for(page, condition: str, timeout_ms: int = WAIT_TIMEOUT_MS) -> None:
    """Wait until ``condition`` holds in the page; on timeout go on: the checks say what is left."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(condition, timeout=timeout_ms)
    except PlaywrightTimeout:
        pass


def slug(page_src: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", Path(page_src).with_suffix("").as_posix())


# Back to the top of the page (the widget captures at the last width scrolled it, and a resize
# keeps the offset), once Material's header has finished its fade from the page title back to
# the site name (a capture caught it half-way). Capped: an endless animation does not stop it.
_TO_TOP = """
async () => {
  if (!window.scrollY) return;
  window.scrollTo(0, 0);
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  const running = document.getAnimations().map((a) => a.finished.catch(() => {}));
  await Promise.race([Promise.all(running), new Promise((r) => setTimeout(r, 1000))]);
}
"""


def capture(page, path: Path) -> None:
    """The page's first screen at its current viewport, as a JPEG (see :data:`SHOT_QUALITY`)."""
    page.evaluate(_TO_TOP)
    page.screenshot(path=str(path), type="jpeg", quality=SHOT_QUALITY, caret=CARET)


@dataclass
class PageView:
    """What one load of a page showed: read at the first of :data:`WIDTHS`, measured at each."""

    found: dict  # INSPECT_PAGE's answer, as loaded at WIDTHS[0]
    download_ok: bool | None  # a notebook's download link works (None: not a notebook)
    offhost: list[str]  # requests that left the host, during the whole view
    errors: list[str]  # browser errors, likewise
    problems: list[str]  # what overflows at each of WIDTHS
    fit: dict[int, dict] = field(default_factory=dict)  # WIDGET_FIT's answer at each width
    # Each widget's WIDGET_STATE as loaded and after a keyboard step on its first slider.
    widgets: list[dict] = field(default_factory=list)


def widget_state(widget) -> dict:
    """The :data:`WIDGET_STATE` of ``widget`` (a locator of its ``.pe-widget`` element)."""
    return json.loads(widget.evaluate(WIDGET_STATE))


def _drive_widgets(page) -> list[dict]:
    found = []
    widgets = page.locator(".pe-widget")
    for i in range(widgets.count()):
        widget = widgets.nth(i)
        before = widget_state(widget)
        slider = widget.get_by_role("slider").first
        slider.press("ArrowRight")
        slider.press("PageUp")
        found.append({"before": before, "after": widget_state(widget)})
    return found


def view_page(use_tab, site, screenshots: Path, page_src: str) -> PageView:
    """Load a page once, inspect it, measure it at each width, then drive its widgets.

    ``use_tab(viewport)`` gives the tab, empty, at that size (``SharedTab.use`` in conftest.py).
    The page is loaded at the first width: a load at another width and a resize to it would lay
    the whole page out twice (a second on the long pages).
    """
    stem = slug(page_src)
    with use_tab({"width": WIDTHS[0], "height": SCREEN_HEIGHT}) as tab:
        page = tab.page
        page.goto(site.page_url(page_src), wait_until="load", timeout=LOAD_TIMEOUT_MS)
        wait_for(page, WIDGETS_READY)
        found = page.evaluate(INSPECT_PAGE)
        download_ok = None
        if page_src.endswith(".ipynb"):  # executed at build time: the outputs are on the page
            download = "async () => (await fetch(document.querySelector('a[download]').href)).ok"
            download_ok = bool(page.evaluate(download))
        problems, fit = [], {}
        for width in WIDTHS:
            if width != page.viewport_size["width"]:
                page.set_viewport_size({"width": width, "height": SCREEN_HEIGHT})
                page.evaluate(_SETTLED)
            problems += [f"{width} px: {p}" for p in page.evaluate(OVERFLOW, width >= 1000)]
            fit[width] = page.evaluate(WIDGET_FIT)
            capture(page, screenshots / f"{stem}_{width}.jpg")
            widgets = page.locator(".pe-widget")
            for i in range(widgets.count()):  # each scrolled into view
                path = screenshots / f"{stem}_widget{i}_{width}px.png"
                widgets.nth(i).screenshot(path=str(path), caret=CARET)
        widgets = _drive_widgets(page)
        # Every request the page made has ended (long since, by now), so its failures are in.
        page.wait_for_load_state("networkidle")
        return PageView(
            found, download_ok, list(tab.offhost), list(tab.errors), problems, fit, widgets
        )
