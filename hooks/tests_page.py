"""Generate the "Tests" page (``tests.md``) from the test modules at build time.

Pages link each claim to the test that checks it, e.g.
``[checked](tests.md#test_absolute-test_vectorized_equals_loop)``. This page gives every test a
heading with an explicit id, so MkDocs' anchor validation (strict) fails the build when a page
links to a test that does not exist or was renamed:

* module ``tests/test_absolute.py``            -> ``#test_absolute``
* function ``test_x`` in it                    -> ``#test_absolute-test_x``
* method ``test_y`` of class ``TestRoPE`` in it -> ``#test_absolute-TestRoPE-test_y``

Each entry shows the docstring and, folded, the source with its decorators (so the hypothesis
strategies and ``@example`` cases are visible). The page also lists which site pages cite each
test. It is parsed with ``ast``: nothing is imported or run here.
"""

from __future__ import annotations

import ast
import inspect
import logging
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.tests_page")

PAGE = "tests.md"
TEST_GLOB = "tests/test_*.py"
STRATEGIES = "tests/strategies.py"
# A link to this page from another page: tests.md#<anchor> (relative paths like ../tests.md too).
_CITATION = re.compile(r"tests\.md#([A-Za-z0-9_.-]+)")


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


def render(root: Path, config, citations: dict[str, list[tuple[str, str]]]) -> str:
    modules = [parse_module(p, root) for p in sorted(root.glob(TEST_GLOB))]
    count = sum(len(m.tests) for m in modules)
    out = [
        "# Tests",
        "",
        "Every claim the site derives is checked by a test, and the pages link each claim to the",
        f"test below. This page is generated from `{TEST_GLOB}` at each build ({count} tests in",
        f"{len(modules)} modules), so it always shows the code that runs. Property tests use",
        "[hypothesis](https://hypothesis.readthedocs.io/): `@given` draws the inputs from the",
        "strategies named in the decorator, and `@example` pins edge cases that always run.",
        "",
        "Run them with `make test` (or `python -m pytest tests`); set `CI=1` for the thorough",
        "hypothesis profile. The site itself is tested by `tests/site/` (strict build, every code",
        "block, and every page in headless Chromium); see [Development](development.md).",
        "",
    ]
    if not modules:
        out += ["No test modules yet.", ""]
    for mod in modules:
        out += [f"## `{mod.path}` {{#{mod.stem}}}", ""]
        if mod.doc:
            out += [plain(mod.doc), ""]
        for entry in mod.tests:
            out += [f"### `{entry.title}` {{#{entry.anchor}}}", ""]
            if entry.doc:
                out += [plain(entry.doc), ""]
            cited = citations.get(entry.anchor)
            if cited:
                links = ", ".join(f"[{title}]({uri})" for uri, title in cited)
                out += [f"Cited by: {links}.", ""]
            where = f"`{mod.path}`, lines {entry.first_line}–{entry.last_line}"
            url = _blob(config, mod.path, entry.first_line, entry.last_line)
            summary = f"Source ({where})"
            out += [f'??? example "{summary}"', "", _indent(_fence(entry.source)), ""]
            if url:
                out += [_indent(f"[View on GitHub]({url})"), ""]
        if mod.helpers:
            out += [
                f'??? note "Helpers in `{mod.path}`"',
                "",
                _indent(_fence("\n\n\n".join(mod.helpers))),
                "",
            ]
    strategies = root / STRATEGIES
    if strategies.is_file():
        doc = ast.get_docstring(ast.parse(strategies.read_text(encoding="utf-8"))) or ""
        out += ["## Shared strategies {#strategies}", ""]
        if doc:
            out += [plain(doc), ""]
        code = strategies.read_text(encoding="utf-8").rstrip()
        out += [f'??? example "`{STRATEGIES}`"', "", _indent(_fence(code)), ""]
    return "\n".join(out)


_titles: dict[str, str] = {}


def on_files(files, config):
    # The content is filled in on_page_markdown, once every page's title and links are known.
    existing = files.get_file_from_path(PAGE)
    if existing is not None:
        files.remove(existing)
    files.append(File.generated(config, PAGE, content="# Tests\n"))
    return files


def on_nav(nav, config, files):
    _titles.clear()
    for page in nav.pages:
        _titles[page.file.src_uri] = page.title or page.file.src_uri
    return nav


def _citations(files) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for f in files.documentation_pages():
        if f.src_uri == PAGE or not f.src_uri.endswith(".md") or f.generated_by:
            continue
        for anchor in dict.fromkeys(_CITATION.findall(f.content_string)):
            title = _titles.get(f.src_uri, f.src_uri)
            # tests.md sits at the site root, so the citing page's path is the link target.
            found.setdefault(anchor, []).append((f.src_uri, title))
    return found


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    root = Path(config.config_file_path).parent
    return render(root, config, _citations(files))
