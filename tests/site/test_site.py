"""The built site: strict build, generated figures, and every page in headless Chromium.

The pages under test come from ``mkdocs.yml``'s nav (and the sitemap must list exactly those),
so a page added to the nav is checked without editing this file. Screenshots of every page go to
``test-artifacts/screenshots/`` (git-ignored) for a human to look at.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest
from pageview import INSPECT_PAGE, WIDTHS, wait_for

# Not imported from conftest.py: two conftest modules (tests/, tests/site/) share that name.
ROOT = Path(__file__).resolve().parents[2]

# --- the pages -----------------------------------------------------------------------------


def _hook(name: str):
    """A build hook's module (hooks/<name>.py), for the pages it generates."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(f"hooks_{name}", ROOT / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def nav_pages() -> list[str]:
    """Source paths of the pages in the nav, in nav order, as the build makes it.

    mkdocs.yml's nav, with its ``api.md`` entry expanded into the API reference's section
    (hooks/api_page.py: the overview, then one page per module).
    """
    import yaml

    class Loader(yaml.SafeLoader):
        """Reads the nav; MkDocs' own tags (!ENV, !relative) are not needed for that."""

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    api = _hook("api_page")

    def walk(items):
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                yield from walk(value)
            elif "://" not in value:
                yield value

    # As the hook does it: a top-level entry whose page is api.md becomes the section.
    nav = [
        {"": api.nav_section(ROOT)}
        if isinstance(item, dict) and list(item.values()) == [api.PAGE]
        else item
        for item in config["nav"]
    ]
    return list(walk(nav))


def all_pages() -> list[str]:
    """Every page the build makes: the nav's, then the test modules' (not in the nav)."""
    return nav_pages() + _hook("tests_page").pages(ROOT)


PAGES = all_pages()


def test_build_is_strict_and_quiet(built_site):
    """`mkdocs build --strict` succeeds and logs no warning at all (kernel chatter aside)."""
    warnings = [line for line in built_site.log.splitlines() if re.match(r"WARNING\b", line)]
    assert built_site.returncode == 0, built_site.log[-6000:]
    assert warnings == []


def test_sitemap_lists_exactly_the_nav(site):
    """Every built page is in the nav or is a test module's page, and every one of them was built.

    So every built page is under test here.
    """
    ns = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    root = ET.parse(site.directory / "sitemap.xml").getroot()
    locs = [e.text for e in root.iterfind(".//s:loc", ns)]
    assert sorted(locs) == sorted(site.page_url(p) for p in PAGES)


def test_no_math_in_headings(site):
    """Headings hold no TeX: the TOC, search results and title bar would show it raw."""
    found = []
    for page in PAGES:
        html = site.directory / urlsplit(site.page_url(page)).path.lstrip("/") / "index.html"
        for heading in re.findall(r"<h[1-6][^>]*>.*?</h[1-6]>", html.read_text("utf-8"), re.S):
            if 'class="arithmatex"' in heading:
                found.append(f"{page}: {re.sub(r'<[^>]+>', '', heading).strip()}")
    assert found == []


def test_api_page_documents_every_public_name(site):
    """Each name in posenc_ref.__all__ and posenc_ref.plots.__all__ has its API reference entry.

    Functions are documented in the module that defines them (``posenc_ref.absolute.inv_freq``,
    ``posenc_ref.plots.absolute.heatmap``), on that module's page; the plots registry under
    ``posenc_ref.plots``.
    """
    import posenc_ref
    import posenc_ref.plots

    ids = set()
    for html in (site.directory / "api").rglob("index.html"):
        ids |= set(re.findall(r'\bid="(posenc_ref\.[\w.]+)"', html.read_text(encoding="utf-8")))
    missing = []
    for package in (posenc_ref, posenc_ref.plots):
        for name in package.__all__:
            module = getattr(getattr(package, name), "__module__", package.__name__)
            if module.split(".")[-1].startswith("_"):  # defined in a private module: re-exported
                module = package.__name__
            if f"{module}.{name}" not in ids:
                missing.append(f"{module}.{name}")
    assert missing == []


def test_api_reference_is_one_page_per_module(site):
    """Each public module has its page, whose heading is the module: no page holds them all."""
    api = _hook("api_page")
    modules = api.public_modules(ROOT)
    problems = []
    for name in modules:
        html = site.directory / "api" / name / "index.html"
        if not html.is_file():
            problems.append(f"{name}: no page")
        elif f'id="posenc_ref.{name}"' not in html.read_text(encoding="utf-8"):
            problems.append(f"{name}: its page does not document it")
    overview = (site.directory / "api" / "index.html").read_text(encoding="utf-8")
    assert 'class="doc doc-heading"' not in overview, "the overview renders a module itself"
    assert len(modules) > 10 and problems == []


def test_docstring_links_to_pages_resolve(site):
    """Docstring links such as ``(properties.md#properties-rotation)`` reach a real anchor.

    MkDocs validates anchors in pages, not inside docstrings rendered by mkdocstrings, so a
    renamed heading would otherwise leave the API reference pointing at nothing.
    """
    links = set()
    for module in sorted((ROOT / "posenc_ref").rglob("*.py")):
        links |= set(re.findall(r"\(([\w/]+\.md)#([\w-]+)\)", module.read_text("utf-8")))
    assert links, "expected back-links from docstrings to the derivation pages"
    broken = []
    for page, anchor in sorted(links):
        html = site.directory / urlsplit(site.page_url(page)).path.lstrip("/") / "index.html"
        if not html.is_file() or f'id="{anchor}"' not in html.read_text("utf-8"):
            broken.append(f"{page}#{anchor}")
    assert broken == []


class _LinksAndIds(HTMLParser):
    """Every href/src of a page, and every id it defines (the anchors a link may point at)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        for key in ("href", "src"):
            if attrs.get(key) and not (tag == "link" and attrs.get("rel") == "preconnect"):
                self.links.append(attrs[key])


def _parse_html(path: Path) -> _LinksAndIds:
    parser = _LinksAndIds()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_internal_links_resolve(site):
    """Every link and image in the built HTML reaches a file, and its #anchor exists there.

    MkDocs' strict validation checks Markdown links only: links inside notebooks, raw HTML and
    docstrings reach the HTML unchecked (a notebook's ``../absolute.md`` was a 404). This reads
    the HTML of every page, notebooks included.
    """
    pages = sorted(site.directory.rglob("*.html"))
    pages = [p for p in pages if "vendor" not in p.relative_to(site.directory).parts]
    parsed = {path: _parse_html(path) for path in pages}
    root = urlsplit(site.url)  # 404.html links absolutely, from the site's own path
    broken = []
    for path, page in parsed.items():
        where = path.relative_to(site.directory).as_posix()
        for link in page.links:
            parts = urlsplit(urljoin(site.url + where, link))
            if parts.scheme in {"mailto", "data", "javascript"} or parts.netloc != root.netloc:
                continue  # another host: the offline test checks that none is loaded
            if not parts.path.startswith(root.path):
                broken.append(f"{where}: {link} (outside the site)")
                continue
            target = site.directory / unquote(parts.path[len(root.path) :])
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{where}: {link} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse_html(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where}: {link} (no id {parts.fragment!r})")
    assert broken == [], f"{len(broken)} broken links:\n" + "\n".join(broken[:40])


# Numbers in alt texts that look measured (a decimal, a power of ten) must be placeholders filled
# by hooks/alt_text.py. Pages whose owners have not converted them yet are listed with a reason.
_ALT_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>figures/[^)\s]+)\)")
_MEASURED = re.compile(r"\d+\.\d+|\d(?:\.\d+)?e[-+]?\d+|10\^\d+")
_ALT_NOT_YET: dict[str, str] = {
    # page: why it is not checked yet (remove the entry once its alt texts use placeholders)
}


def test_alt_text_numbers_are_computed():
    """No alt text states a measured number as a literal: it comes from hooks/alt_text.py."""
    problems = []
    for page in PAGES:
        path = ROOT / "docs" / page
        if path.suffix != ".md" or not path.is_file() or page in _ALT_NOT_YET:
            continue
        for m in _ALT_IMAGE.finditer(path.read_text(encoding="utf-8")):
            literal = re.sub(r"\{[^{}]*\}", "", m.group("alt"))
            # A number right after a capitalised word is a name ("Llama 3.1"), not a measurement.
            found = [
                n.group(0)
                for n in _MEASURED.finditer(literal)
                if not re.search(r"\b[A-Z][\w-]* $", literal[: n.start()])
            ]
            if found:
                problems.append(f"{page}: {m.group('src')}: {found}")
    assert problems == []


# A search result list's text without its code and preformatted blocks.
PROSE = """(e) => {
  const copy = e.cloneNode(true);
  for (const code of copy.querySelectorAll("code, pre")) code.remove();
  return copy.textContent;
}"""


def test_search_index_has_no_raw_tex(site):
    """Search previews show text: no TeX environment, label or math delimiter outside code."""
    index = json.loads((site.directory / "search" / "search_index.json").read_text("utf-8"))
    raw = re.compile(r"\\begin\{|\\end\{|\\label\{|\\eqref\{|\\\(|\\\[|\\frac\{")
    found = []
    for entry in index["docs"]:
        prose = re.sub(r"<(pre|code)>.*?</\1>", "", entry["text"], flags=re.S)
        if raw.search(prose) or raw.search(entry["title"]):
            found.append(f"{entry['location']}: {raw.search(prose or entry['title'])}")
    assert found == []


def test_search_finds_tests_by_name_not_by_source(site):
    """The Tests page is indexed by each test's name and docstring; its folded sources are not."""
    index = json.loads((site.directory / "search" / "search_index.json").read_text("utf-8"))
    tests = [e for e in index["docs"] if e["location"].startswith("tests/")]
    titles = " ".join(e["title"] for e in tests)
    text = " ".join(e["text"] for e in tests)
    assert "test_vectorized_equals_loop" in titles
    assert "The vectorized table equals the textbook double loop" in text  # its docstring
    assert "def test_" not in text and "@given(" not in text


# --- the math, typeset when the site is built (hooks/typeset.py) ----------------------------

_MATH_ELEMENT = re.compile(r'<(span|div) class="arithmatex">(.{0,40})', re.S)
_GLYPH = re.compile(r'<mjx-c class="mjx-c([0-9A-F]+)(?: ([\w-]+))?"')


def _built_html(site, page: str) -> str:
    path = site.directory / urlsplit(site.page_url(page)).path.lstrip("/") / "index.html"
    return path.read_text(encoding="utf-8")


def test_math_is_typeset_in_the_built_pages(site):
    """Every formula of every page arrives typeset: nothing is left for the reader's browser.

    Each arithmatex element holds MathJax's output, with no error; no page loads a typesetter.
    """
    problems = []
    for page in PAGES:
        html = _built_html(site, page)
        for m in _MATH_ELEMENT.finditer(html):
            if not m.group(2).startswith("<mjx-container"):
                problems.append(f"{page}: raw {m.group(2)!r}")
        if "<mjx-merror" in html:
            problems.append(f"{page}: a MathJax error")
        problems += [
            f"{page}: loads {src}"
            for src in re.findall(r'<script[^>]*src="([^"]*(?:mathjax|katex)[^"]*)"', html, re.I)
        ]
    assert problems == [], "\n".join(problems[:20])


def test_every_typeset_glyph_has_its_style(site):
    """Each glyph the pages use (class ``mjx-c<hex>`` and its font) has a rule in the stylesheet.

    MathJax's CommonHTML output draws each glyph with CSS (``content`` and the font); the build
    writes one stylesheet for every glyph used on the site. A glyph without its rule is blank.
    """
    css = (site.directory / "assets" / "mathjax" / "mathjax.css").read_text(encoding="utf-8")
    rules = set(re.findall(r"\.mjx-c([0-9A-F]+)(\.[\w-]+)?::before", css))
    used = set()
    for page in PAGES:
        used |= set(_GLYPH.findall(_built_html(site, page)))
    missing = sorted(
        f"{code} {font}" for code, font in used if (code, f".{font}" if font else "") not in rules
    )
    assert used and missing == []
    fonts = re.findall(r'url\("?([^")]+\.woff)', css)
    folder = site.directory / "assets" / "mathjax"
    assert fonts and [f for f in fonts if not (folder / f).is_file()] == []


def _glyph_text(html: str) -> str:
    """The characters MathJax drew in ``html`` (each ``mjx-c`` names its code point)."""
    return "".join(chr(int(code, 16)) for code, _ in _GLYPH.findall(html))


def test_equation_numbers_and_references(site):
    r"""Every ``\label`` is a numbered equation with an anchor; each ``\eqref`` shows its number.

    Numbers run 1, 2, ... down each page (MathJax's AMS numbering, one document per page), and
    the link of a reference goes to its equation and reads the same number.
    """
    problems, labels_seen = [], 0
    for page in PAGES:
        html = _built_html(site, page)
        tags = {}
        for m in re.finditer(r'<mjx-mtd id="mjx-eqn:([^"]+)">(.*?)</mjx-mtd>', html, re.S):
            tags[m.group(1)] = _glyph_text(m.group(2))
        numbers = [int(t.strip("()")) for t in tags.values() if re.fullmatch(r"\(\d+\)", t)]
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"{page}: equation numbers {numbers}")
        source = ROOT / "docs" / page
        if source.is_file():
            # the page's math: its text without code (which may show \label as an example)
            text = re.sub(
                r"(`{3,}).*?\1|`[^`\n]+`", "", source.read_text(encoding="utf-8"), flags=re.S
            )
            for label in re.findall(r"\\label\{([^}]+)\}", text):
                labels_seen += 1
                if label not in tags:
                    problems.append(f"{page}: \\label{{{label}}} has no numbered anchor")
        for m in re.finditer(r'<a href="#mjx-eqn%3A([^"]+)">(.*?)</a>', html, re.S):
            label = unquote(m.group(1))
            if tags.get(label) != _glyph_text(m.group(2)):
                problems.append(f"{page}: \\eqref{{{label}}} reads {_glyph_text(m.group(2))!r}")
    assert labels_seen > 20 and problems == [], "\n".join(problems[:20])


# --- figures -------------------------------------------------------------------------------


def _plots():
    import posenc_ref.plots as plots

    return plots


def _figure_names() -> list[str]:
    return sorted(_plots().SITE_FIGURES)


@pytest.mark.parametrize("name", _figure_names())
def test_figure_is_reproducible(site, name):
    """Drawn again in another process, each figure is byte-identical (and its text is paths)."""
    built = (site.directory / "figures" / name).read_bytes()
    again = site.rerendered.get(name, site.rerendered.get("(figure process)", "not drawn"))
    assert isinstance(again, bytes), again
    assert again == built
    svg = built.decode()
    assert not re.search(r"<text[\s>]", svg), "text must be drawn as paths (svg.fonttype)"
    assert "<dc:date>" not in svg


def _drawing_functions(name: str) -> set[str]:
    """The registered function's name and the plots functions it calls (either may be named)."""
    plots = _plots()
    make = plots.SITE_FIGURES[name]
    names = {make.__name__}
    for node in ast.walk(ast.parse(inspect.getsource(make).lstrip())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if callable(getattr(plots, node.func.id, None)):
                names.add(node.func.id)
    return {n for n in names if not n.startswith("_")} or names


_IMG = re.compile(r"<img\b[^>]*\bsrc=\"(?P<src>[^\"]*figures/(?P<name>[^\"/]+\.svg))\"[^>]*>")
_CLOSE = re.compile(r"</(p|figcaption)>")


def test_every_figure_is_shown_with_a_caption_naming_its_function(site):
    """Each registered figure appears on a page, with alt text and a caption naming its function.

    The caption is the text right after the image (a ``/// caption`` block or the next paragraph).
    """
    problems, shown = [], set()
    for page in PAGES:
        html_file = site.directory / urlsplit(site.page_url(page)).path.lstrip("/") / "index.html"
        html = html_file.read_text(encoding="utf-8")
        for m in _IMG.finditer(html):
            name = m.group("name")
            shown.add(name)
            if not re.search(r'\balt="[^"]+', m.group(0)):
                problems.append(f"{page}: figures/{name} has no alt text")
            ends = [e.end() for e in _CLOSE.finditer(html, m.end())][:2]
            caption = re.sub(r"<[^>]+>", "", html[m.end() : ends[-1] if ends else m.end()])
            if name in _figure_names():
                wanted = _drawing_functions(name)
                if not any(re.search(rf"\b{re.escape(f)}\b", caption) for f in wanted):
                    problems.append(
                        f"{page}: caption of figures/{name} names none of {sorted(wanted)}"
                    )
    missing = sorted(set(_figure_names()) - shown)
    problems += [f"figures/{name} is registered but shown on no page" for name in missing]
    assert problems == [], "\n".join(problems)


# --- every page in the browser -------------------------------------------------------------

# Loaded once per page and shared: see pageview.py and the page_view fixture (conftest.py).
# Browser tests ask for `tab` or `page_view` first, so that a missing Chromium skips them before
# the build.

# TeX that the build's MathJax should have replaced: \( \[ \begin{ $$ $\cmd \frac{
_RAW_TEX = re.compile(r"\\\(|\\\[|\\begin\{|\$\$|\$\\[A-Za-z]|\\frac\{")


def _raw_tex(text: str) -> list[str]:
    return [
        " ".join(text[max(0, m.start() - 40) : m.end() + 40].split())
        for m in _RAW_TEX.finditer(text)
    ][:5]


@pytest.mark.browser
@pytest.mark.parametrize("page_src", PAGES)
def test_page_renders_offline(page_view, page_src):
    """Math typeset, images loaded, no raw TeX, no errors, nothing fetched from another host.

    The page loads no typesetter: its math was typeset when the site was built.
    """
    view = page_view(page_src)
    found = view.found
    assert found["typesetters"] == [], "the page typesets in the browser"
    assert found["unrendered"] == 0, f"{found['unrendered']} of {found['math']} formulas raw"
    assert found["merrors"] == [], f"MathJax errors: {found['merrors']}"
    assert _raw_tex(found["text"]) == [], "raw TeX in the text"
    assert found["broken"] == [], f"images that did not load: {found['broken']}"
    if page_src.endswith(".ipynb"):
        assert found["outputs"] > 0, "notebook page without cell outputs"
        assert view.download_ok, "the notebook's download link is broken"
    assert view.offhost == [], f"requests left the host: {view.offhost}"
    assert view.errors == [], "browser errors:\n" + "\n".join(view.errors)


# Every query typed into Material's search, on one load of the home page (its worker indexes
# search_index.json once): "rotary" must find something; the others must rank the page that
# explains the method first.
SEARCHES = ["rotary", "YaRN", "LongRoPE", "NTK-aware"]


@pytest.fixture(scope="module")
def searches(shared_tab, site) -> dict:
    """What Material's search (a web worker over search_index.json) answered to each query.

    The queries are typed in turn into one load of the home page, the box emptied by keys in
    between: building the index was most of each search test's cost. Errors and off-host
    requests are those of the whole load.
    """
    with shared_tab.use() as tab:  # at the size of the `tab` fixture
        page = tab.page
        page.goto(site.url, wait_until="networkidle")
        page.click("input.md-search__input")
        box = page.locator("input.md-search__input")
        answers = {}
        for query in SEARCHES:
            # fill() sets the value without key events, and Material's search listens to keys.
            box.press("Control+A")
            box.press("Backspace")
            page.wait_for_selector(".md-search-result__item", state="detached", timeout=15_000)
            box.press_sequentially(query, delay=30)
            page.wait_for_selector(".md-search-result__item", timeout=15_000)
            page.wait_for_timeout(300)  # results for the full query, not a prefix
            items = page.locator(".md-search-result__item")
            answers[query] = {
                "count": items.count(),
                "first": page.locator(".md-search-result__item a").first.get_attribute("href"),
                # the previews' prose: code (the development page writes \label in code) left out,
                # as test_search_index_has_no_raw_tex leaves it out of the index
                "previews": page.locator(".md-search-result").evaluate(PROSE),
            }
        page.wait_for_load_state("networkidle")
        # what went wrong during the whole load, kept apart from the tab's later uses
        load = dataclasses.replace(tab, offhost=list(tab.offhost), errors=list(tab.errors))
        return {"answers": answers, "load": load}


@pytest.mark.browser
def test_search_finds_rotary(searches):
    """Material's search (a web worker over search_index.json) answers offline."""
    assert searches["answers"]["rotary"]["count"] > 0
    searches["load"].assert_clean()


def _math_pages(site) -> list[str]:
    pages = []
    for src in PAGES:
        html = site.directory / urlsplit(site.page_url(src)).path.lstrip("/") / "index.html"
        if 'class="arithmatex"' in html.read_text(encoding="utf-8"):
            pages.append(src)
    return pages


@pytest.mark.browser
def test_instant_navigation_keeps_math(tab, site):
    """A click inside an article swaps the page without a reload, and the new math is typeset."""
    math_pages = [p for p in _math_pages(site) if p != "index.md"]
    # Prefer leaving the home page for a page with math; before the content pages have math,
    # go back from the development page to the home page (which has a formula).
    start, target = ("index.md", math_pages[0]) if math_pages else ("development.md", "index.md")
    page = tab.page
    page.goto(site.page_url(start), wait_until="networkidle")
    page.evaluate("() => { window.__same_document = true; }")
    target_url = site.page_url(target)
    links = page.locator("article a[href]")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    index = next(
        (i for i, h in enumerate(hrefs) if urljoin(page.url, h).split("#")[0] == target_url), None
    )
    assert index is not None, f"{start} has no link to {target}"
    links.nth(index).click()
    page.wait_for_url(target_url + "**")
    # Material swaps the canonical link with the content.
    wait_for(page, f"() => document.querySelector('link[rel=canonical]').href === '{target_url}'")
    assert page.evaluate("() => window.__same_document === true"), "the click reloaded the page"
    found = page.evaluate(INSPECT_PAGE)
    assert found["math"] > 0 and found["unrendered"] == 0, found["unrendered"]
    assert found["merrors"] == [] and _raw_tex(found["text"]) == []
    tab.assert_clean()


# Selects a paragraph with inline formulas, then a range from inside a display equation to the
# end of the next paragraph, and copies each (a ClipboardEvent, as the browser dispatches it).
_COPY = """
() => {
  const copy = (range) => {
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    const data = new DataTransfer();
    const init = {clipboardData: data, bubbles: true, cancelable: true};
    const event = new ClipboardEvent("copy", init);
    range.startContainer.parentElement.dispatchEvent(event);
    return {text: data.getData("text/plain"), html: data.getData("text/html"),
            handled: event.defaultPrevented};
  };
  const tex = (e) => [...e.querySelectorAll("annotation")].map((a) => a.textContent.trim());
  const inline = [...document.querySelectorAll("article p")].find(
    (p) => p.querySelectorAll("mjx-container:not([display])").length >= 2);
  const paragraph = document.createRange();
  paragraph.selectNodeContents(inline);
  const display = document.querySelector("article mjx-container[display]");
  const glyph = display.querySelector("mjx-c");
  const partial = document.createRange();
  partial.setStart(glyph, 0);
  partial.setEndAfter(display.closest(".arithmatex").nextElementSibling);
  return {paragraph: copy(paragraph), inline: tex(inline),
          partial: copy(partial), display: tex(display)[0]};
}
"""


@pytest.mark.browser
def test_copying_a_formula_copies_its_tex(tab_without_search, site):
    """Copied, each formula is its TeX as written in the page's source, the text around it kept.

    Inline formulas become ``$...$``; a selection that starts inside a display equation takes the
    whole equation, as ``$$ ... $$``.
    """
    page = tab_without_search.page
    page.goto(site.page_url("rope_design.md"), wait_until="load")
    copied = page.evaluate(_COPY)
    source = (ROOT / "docs" / "rope_design.md").read_text(encoding="utf-8")
    paragraph, partial = copied["paragraph"], copied["partial"]
    assert paragraph["handled"] and len(copied["inline"]) >= 2
    for tex in copied["inline"]:
        assert f"${tex}$" in paragraph["text"], (tex, paragraph["text"])
        assert tex in source  # the author's TeX, not a rendering of it
    assert "<mjx-" not in paragraph["html"]
    assert partial["handled"] and partial["text"].startswith(f"$$\n{copied['display']}\n$$")
    assert copied["display"].split("\\label")[0].strip() in source
    tab_without_search.assert_clean()


# --- nothing cut off -----------------------------------------------------------------------

# The overflow scan (pageview.OVERFLOW) runs in each page's view at 1280 and 390 px.


@pytest.mark.browser
@pytest.mark.parametrize("page_src", PAGES)
def test_nothing_cut_off(page_view, page_src):
    """At 1280 px no code, table, equation or figure overflows; at 390 px the page never does."""
    problems = page_view(page_src).problems
    assert problems == [], "\n".join(problems)


# --- the widgets (docs/javascripts/explorer.js), from the same page views ---------------------


def widget_pages() -> list[str]:
    """Nav pages whose source places a widget (test_explorer.py checks this against the HTML)."""
    return [
        src
        for src in PAGES
        if (ROOT / "docs" / src).is_file()
        and 'class="pe-widget"' in (ROOT / "docs" / src).read_text(encoding="utf-8")
    ]


WIDGET_PAGES = widget_pages()


@pytest.mark.browser
@pytest.mark.parametrize("page_src", ["index.md", *WIDGET_PAGES])
def test_explorer_and_widgets_fit_the_screen(page_view, page_src):
    """At 1280 and 390 px nothing of a widget, nor an article figure or image, leaves the article.

    The home page and the explorer do not scroll sideways either (on the derivation pages, other
    content such as a wide formula is test_nothing_cut_off's business). Screenshots of each
    widget at each width go to test-artifacts/screenshots/.
    """
    view = page_view(page_src)
    mine = page_src in ("index.md", "explorer.md")
    problems = [
        f"{page_src} at {width}px: {found}"
        for width, found in view.fit.items()
        if found["wide"] or (mine and found["page"] > found["screen"])
    ]
    assert sorted(view.fit) == sorted(WIDTHS)
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.parametrize("page_src", WIDGET_PAGES)
def test_widgets_compute_the_package_numbers(page_view, page_src):
    """Every widget on the page, as loaded and after a keyboard step, gives the package's numbers.

    The step is ArrowRight then PageUp on the widget's first slider; the comparison is
    test_explorer.check_widget (frequencies, attention factor, cos/sin, decay bound and score).
    """
    from test_explorer import _zoo_specs, check_widget  # noqa: PLC0415 (imports test_site)

    rows = _zoo_specs()
    view = page_view(page_src)
    assert view.widgets, f"{page_src}: no widget started"
    problems = []
    for widget in view.widgets:
        assert widget["after"]["state"] != widget["before"]["state"], (
            "the keyboard step did nothing"
        )
        problems += check_widget(widget["before"], rows) + check_widget(widget["after"], rows)
    assert problems == [], "\n".join(problems)


@pytest.mark.browser
@pytest.mark.parametrize("query", SEARCHES[1:])
def test_search_ranks_the_explanation_first(searches, query):
    """The first search hit is the page that explains the method, and previews hold no TeX."""
    answer = searches["answers"][query]
    assert "rope_scaling/" in answer["first"], f"first hit for {query!r}: {answer['first']}"
    assert _raw_tex(answer["previews"]) == [] and "\\label" not in answer["previews"]
    searches["load"].assert_clean()
