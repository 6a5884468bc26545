"""Generate the "Tests" pages from the test modules at build time: an index and one page each.

Pages link each claim to the test that checks it, e.g.
``[checked](tests.md#test_absolute-test_vectorized_equals_loop)``. Every test has a heading with
an explicit id on its module's page, ``tests/<module>.md``, and this hook points each such link
at that page (``tests/test_absolute.md#test_absolute-test_vectorized_equals_loop``) before MkDocs
reads it, so MkDocs' anchor validation (strict) fails the build when a page links to a test that
does not exist or was renamed. Pages keep writing ``tests.md#<anchor>``:

* module ``tests/test_absolute.py``            -> ``#test_absolute``
* function ``test_x`` in it                    -> ``#test_absolute-test_x``
* method ``test_y`` of class ``TestRoPE`` in it -> ``#test_absolute-TestRoPE-test_y``

``tests.md`` itself lists the modules (how many tests, the first line of each docstring) and the
shared strategies. Each entry of a module's page shows the docstring and, folded, the source with
its decorators (so the hypothesis strategies and ``@example`` cases are visible), and which site
pages cite the test. One page per module keeps each light to open: the whole was one 4.3 MB page.
The module pages are not listed in the nav (50 entries); the index, the citing links and search
reach them. Everything is parsed with ``ast``: nothing is imported or run here.
"""

from __future__ import annotations

import ast
import inspect
import logging
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs.structure.files import File, InclusionLevel

log = logging.getLogger("mkdocs.hooks.tests_page")

PAGE = "tests.md"
FOLDER = "tests"  # tests/<module>.md
TEST_GLOB = "tests/test_*.py"
STRATEGIES = "tests/strategies.py"
# A link to a test from another page: tests.md#<anchor> (relative paths like ../tests.md too).
_CITATION = re.compile(r"tests\.md#([A-Za-z0-9_.-]+)")
# The same in a Markdown link's target, with what precedes it: rewritten to the module's page.
_CITING_LINK = re.compile(
    r"(\]\(\s*<?|\]:\s*<?)((?:\.\./)*)tests\.md#([A-Za-z0-9_]+)([A-Za-z0-9_.-]*)"
)


@dataclass
class Entry:
    """One test on the page: its anchor, heading, docstring and source lines."""

    anchor: str
    title: str
    doc: str
    source: str
    first_line: int
    last_line: int


@dataclass
class Module:
    """One test module: its tests and the helpers they call."""

    stem: str
    path: str
    doc: str
    tests: list[Entry] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)


def _segment(lines: list[str], node: ast.AST) -> tuple[str, int]:
    # Start at the first decorator: @given/@example/@settings are part of what the test claims.
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return textwrap.dedent("\n".join(lines[start - 1 : node.end_lineno])), start


def _is_test(node: ast.AST) -> bool:
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def parse_module(path: Path, root: Path) -> Module:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    tree = ast.parse(text, filename=str(path))
    mod = Module(path.stem, path.relative_to(root).as_posix(), ast.get_docstring(tree) or "")
    for node in tree.body:
        if _is_test(node):
            src, start = _segment(lines, node)
            mod.tests.append(
                Entry(
                    f"{mod.stem}-{node.name}",
                    node.name,
                    ast.get_docstring(node) or "",
                    src,
                    start,
                    node.end_lineno,
                )
            )
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for sub in node.body:
                if _is_test(sub):
                    src, start = _segment(lines, sub)
                    mod.tests.append(
                        Entry(
                            f"{mod.stem}-{node.name}-{sub.name}",
                            f"{node.name}.{sub.name}",
                            ast.get_docstring(sub) or ast.get_docstring(node) or "",
                            src,
                            start,
                            sub.end_lineno,
                        )
                    )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            # Helpers and fixtures the tests call: shown folded, so a test reads in full.
            mod.helpers.append(_segment(lines, node)[0])
    return mod


_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")
_SPECIAL = re.compile(r"([\\*_\[\]$|])")


def plain(doc: str) -> str:
    """A test docstring as Markdown that shows its text as written.

    Docstrings are plain text (``2*pi``, ``x_i``, ``[-1, 1]``), so Markdown's emphasis, links,
    HTML and math delimiters are escaped; code spans in backticks are kept, and so are lists.
    """
    parts = _CODE_SPAN.split(inspect.cleandoc(doc))
    return "".join(
        p if i % 2 else _SPECIAL.sub(r"\\\1", p).replace("<", "&lt;") for i, p in enumerate(parts)
    )


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix, lambda line: True)


def _fence(code: str) -> str:
    # A longer fence than any backtick run inside the code keeps docstrings with ``` intact.
    # The sources stay out of the search index (Material skips data-search-exclude): a search
    # finds a test by its name and docstring. The code of 800 tests was 40% of the index that
    # every reader's browser downloads and indexes, and matched words the prose explains.
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", code)), default=0))
    return f"{ticks}{{.python data-search-exclude}}\n{code}\n{ticks}"


def _blob(config, path: str, first: int | None = None, last: int | None = None) -> str | None:
    if not config.repo_url:
        return None
    lines = f"#L{first}-L{last}" if first else ""
    return f"{config.repo_url.rstrip('/')}/blob/main/{path}{lines}"


def modules(root: Path) -> list[Module]:
    """Every test module, parsed, in file-name order."""
    return [parse_module(p, root) for p in sorted(root.glob(TEST_GLOB))]


def page_path(stem: str) -> str:
    """A test module's page, relative to docs/: ``tests/test_absolute.md``."""
    return f"{FOLDER}/{stem}.md"


def pages(root: Path) -> list[str]:
    """Every generated module page, in the order of the index."""
    return [page_path(p.stem) for p in sorted(root.glob(TEST_GLOB))]


def _first_line(doc: str) -> str:
    """The docstring's first paragraph on one line, as Markdown (plain() escapes ``|`` too)."""
    return plain(" ".join(inspect.cleandoc(doc).split("\n\n", 1)[0].split()))


def render_index(root: Path, found: list[Module]) -> str:
    count = sum(len(m.tests) for m in found)
    out = [
        "# Tests",
        "",
        "Every claim the site derives is checked by a test, and the pages link each claim to its",
        f"test. These pages are generated from `{TEST_GLOB}` at each build ({count} tests in",
        f"{len(found)} modules, one page each), so they always show the code that runs. Property",
        "tests use [hypothesis](https://hypothesis.readthedocs.io/): `@given` draws the inputs",
        "from the strategies named in the decorator, and `@example` pins edge cases that always",
        "run.",
        "",
        "Run them with `make test` (or `python -m pytest tests`); set `CI=1` for the thorough",
        "hypothesis profile. The site itself is tested by `tests/site/` (strict build, every code",
        "block, and every page in headless Chromium); see [Development](development.md).",
        "",
    ]
    if not found:
        return "\n".join([*out, "No test modules yet.", ""])
    out += ["| module | tests | what it checks |", "|:--|--:|:--|"]
    for mod in found:
        link = f"[`{mod.path}`]({page_path(mod.stem)})"
        out.append(f"| {link} | {len(mod.tests)} | {_first_line(mod.doc)} |")
    out.append("")
    strategies = root / STRATEGIES
    if strategies.is_file():
        doc = ast.get_docstring(ast.parse(strategies.read_text(encoding="utf-8"))) or ""
        out += ["## Shared strategies {#strategies}", ""]
        if doc:
            out += [plain(doc), ""]
        code = strategies.read_text(encoding="utf-8").rstrip()
        out += [f'??? example "`{STRATEGIES}`"', "", _indent(_fence(code)), ""]
    return "\n".join(out)


def render_module(mod: Module, config, citations: dict[str, list[tuple[str, str]]]) -> str:
    """One module's page: its docstring, then every test with its citations and source."""
    out = [f"# `{mod.path}` {{#{mod.stem}}}", ""]
    if mod.doc:
        out += [plain(mod.doc), ""]
    out += ["All test modules: [Tests](../tests.md).", ""]
    for entry in mod.tests:
        out += [f"## `{entry.title}` {{#{entry.anchor}}}", ""]
        if entry.doc:
            out += [plain(entry.doc), ""]
        cited = citations.get(entry.anchor)
        if cited:
            # The citing page's path is relative to docs/; this page is one folder down.
            links = ", ".join(f"[{title}](../{uri})" for uri, title in cited)
            out += [f"Cited by: {links}.", ""]
        where = f"`{mod.path}`, lines {entry.first_line}–{entry.last_line}"
        url = _blob(config, mod.path, entry.first_line, entry.last_line)
        out += [f'??? example "Source ({where})"', "", _indent(_fence(entry.source)), ""]
        if url:
            out += [_indent(f"[View on GitHub]({url})"), ""]
    if mod.helpers:
        out += [
            f'??? note "Helpers in `{mod.path}`"',
            "",
            _indent(_fence("\n\n\n".join(mod.helpers))),
            "",
        ]
    return "\n".join(out)


def cite_module_pages(markdown: str, stems: set[str]) -> str:
    """``markdown`` with each link to ``tests.md#<module>[-<test>]`` pointed at the module's page.

    A link whose anchor names no test module is left as it is: MkDocs then reports it.
    """

    def point(match: re.Match) -> str:
        lead, up, stem, rest = match.groups()
        if stem not in stems:
            return match.group(0)
        return f"{lead}{up}{page_path(stem)}#{stem}{rest}"

    return _CITING_LINK.sub(point, markdown)


_titles: dict[str, str] = {}
# Per build: the parsed modules and the citations, computed once for all the module pages.
_cache: dict[str, object] = {}


def on_files(files, config):
    # The content is filled in on_page_markdown, once every page's title and links are known.
    _cache.clear()
    existing = files.get_file_from_path(PAGE)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, PAGE, content="# Tests\n"))
    root = Path(config.config_file_path).parent
    for path in pages(root):
        # Reached from the index, the citing links and search; not listed in the nav.
        page = File.generated(config, path, content="# Tests\n")
        page.inclusion = InclusionLevel.NOT_IN_NAV
        files.append(page)
    return files


def on_nav(nav, config, files):
    _titles.clear()
    for page in nav.pages:
        _titles[page.file.src_uri] = page.title or page.file.src_uri
    return nav


def _citations(files) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for f in files.documentation_pages():
        if f.generated_by or not f.src_uri.endswith(".md"):
            continue
        for anchor in dict.fromkeys(_CITATION.findall(f.content_string)):
            title = _titles.get(f.src_uri, f.src_uri)
            found.setdefault(anchor, []).append((f.src_uri, title))
    return found


def on_page_markdown(markdown, page, config, files):
    root = Path(config.config_file_path).parent
    src = page.file.src_uri
    if "modules" not in _cache:
        _cache["modules"] = {m.stem: m for m in modules(root)}
    found = _cache["modules"]
    if src == PAGE:
        return render_index(root, list(found.values()))
    if src.startswith(f"{FOLDER}/") and page.file.generated_by:
        if "citations" not in _cache:
            _cache["citations"] = _citations(files)
        return render_module(found[src[len(FOLDER) + 1 : -len(".md")]], config, _cache["citations"])
    return cite_module_pages(markdown, set(found))
