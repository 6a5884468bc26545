"""Every Python code block on the site runs: at build time, or here.

A ``python`` (or ``py``) block in ``docs/**/*.md``, or in a file a page includes with
``--8<--``, must take one of these forms (see docs/development.md):

* ```` ```python exec="1" ... ```` - run by markdown-exec during the build; its printed output is
  what the page shows, and an exception fails the strict build. The default.
* ```` ```{.python .illustrative} ```` - shown as written, not run at build time (a pattern, a
  mistake being discussed). Run here, in a fresh namespace, and it must not raise.
* ```` ```{.python .illustrative .no-run} ```` - only for code that cannot run here (it needs a
  GPU, a download, another library): compiled here, not run.

A ``pycon`` block either has ``exec="1"`` or is a doctest: it is run here and its shown output
must match. Blocks in other languages (``text``, ``bash``) are not code to check. The ``>>>``
examples in the package's docstrings, which the API page shows, are run as doctests as well.
"""

from __future__ import annotations

import doctest
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

# Not imported from conftest.py: two conftest modules (tests/, tests/site/) share that name.
ROOT = Path(__file__).resolve().parents[2]

DOCS = ROOT / "docs"
PYTHON = {"python", "py", "python3"}
CONSOLE = {"pycon"}
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
_SNIPPET = re.compile(r"^[ \t]*-{1,}8<-{1,}[ \t]+[\"'](?P<path>[^\"']+)[\"'][ \t]*$", re.M)
_OPTION = re.compile(r"""([\w-]+)\s*=\s*("[^"]*"|'[^']*'|\S+)""")
# markdown-exec's own reading of exec="...": anything but these runs the block.
_FALSE = {"", "no", "off", "false", "0"}


@dataclass
class Block:
    """One fenced code block, with what its info string says about running it."""

    path: str
    line: int
    lang: str
    classes: set[str]
    options: dict[str, str]
    code: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def executed_at_build(self) -> bool:
        return self.options.get("exec", "").lower() not in _FALSE


def parse_info(info: str) -> tuple[str, set[str], dict[str, str]]:
    """Language, classes and options of a fence's info string (both superfences forms)."""
    info = info.strip()
    if info.startswith("{"):  # {.python .illustrative key="value"}
        body = info.strip("{}")
        classes = [t[1:] for t in body.split() if t.startswith(".")]
        options = {k: v.strip("\"'") for k, v in _OPTION.findall(body)}
        return (classes[0] if classes else ""), set(classes[1:]), options
    lang, _, rest = info.partition(" ")
    options = {k: v.strip("\"'") for k, v in _OPTION.findall(rest)}
    classes = {t[1:] for t in rest.split() if t.startswith(".")}
    return lang.lower(), classes, options


def blocks_in(text: str, path: str) -> list[Block]:
    """The fenced blocks of a Markdown text, including those nested in admonitions and tabs."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or m.group("fence")[0] == "`" and "`" in m.group("info"):
            i += 1
            continue
        indent, fence = m.group("indent"), m.group("fence")
        lang, classes, options = parse_info(m.group("info"))
        body, j = [], i + 1
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        found.append(Block(path, i + 1, lang, classes, options, "\n".join(body) + "\n"))
        i = j + 1
    return found


def documents() -> dict[str, str]:
    """Markdown the site renders: docs/**/*.md and the files they include with --8<--."""
    texts: dict[str, str] = {}
    for md in sorted(DOCS.rglob("*.md")):
        if "vendor" in md.relative_to(DOCS).parts:
            continue
        text = md.read_text(encoding="utf-8")
        texts[md.relative_to(ROOT).as_posix()] = text
        for included in _SNIPPET.findall(text):
            path = ROOT / included
            if path.is_file() and path.suffix == ".md":
                texts.setdefault(path.relative_to(ROOT).as_posix(), path.read_text("utf-8"))
    return texts


def all_blocks() -> list[Block]:
    return [b for path, text in documents().items() for b in blocks_in(text, path)]


CODE = [b for b in all_blocks() if b.lang in PYTHON | CONSOLE]
ILLUSTRATIVE = [b for b in CODE if b.lang in PYTHON and not b.executed_at_build]
DOCTESTS = [b for b in CODE if b.lang in CONSOLE and not b.executed_at_build]


def test_every_python_block_runs_somewhere():
    """No Python block is left unexecuted without saying so."""
    unmarked = [b.id for b in ILLUSTRATIVE if "illustrative" not in b.classes]
    assert unmarked == [], (
        'Python blocks neither run at build time (exec="1") nor marked {.python .illustrative}:\n'
        + "\n".join(unmarked)
    )


@pytest.mark.parametrize("block", ILLUSTRATIVE, ids=lambda b: b.id)
def test_illustrative_block_runs(block, tmp_path, monkeypatch):
    """An illustrative block is valid Python, and it runs unless marked .no-run."""
    code = compile(block.code, block.id, "exec")
    if "no-run" in block.classes:
        return
    monkeypatch.chdir(tmp_path)  # anything the block writes stays out of the repository
    monkeypatch.setenv("MPLBACKEND", "Agg")
    exec(code, {"__name__": "__main__"})


@pytest.mark.parametrize("block", DOCTESTS, ids=lambda b: b.id)
def test_console_block_prints_what_it_shows(block, tmp_path, monkeypatch):
    """A pycon block not run at build time is a doctest: its shown output must be right."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    test = doctest.DocTestParser().get_doctest(block.code, {}, block.id, block.path, block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert test.examples, f"{block.id}: a pycon block without >>> examples"


def _package_modules() -> list[str]:
    package = ROOT / "posenc_ref"
    return sorted(f"posenc_ref.{p.stem}" for p in package.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("module_name", ["posenc_ref", *_package_modules()])
def test_docstring_examples_print_what_they_show(module_name, tmp_path, monkeypatch):
    """The ``>>>`` examples in the docstrings, shown on the API page, are doctests too."""
    import importlib

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    module = importlib.import_module(module_name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: list[str] = []
    for test in doctest.DocTestFinder().find(module, module_name):
        runner.run(test, out=failures.append)
    assert runner.failures == 0, "".join(failures)


def test_parser_sees_the_forms():
    """The block parser understands both info-string forms and nested fences."""
    text = (
        '```python exec="1" source="block"\nprint(1)\n```\n'
        "!!! note\n    ```{.python .illustrative .no-run}\n    cuda()\n    ```\n"
        "````markdown\n```python\nnot a block\n```\n````\n"
    )
    got = blocks_in(text, "x.md")
    assert [(b.lang, b.classes, b.executed_at_build) for b in got] == [
        ("python", set(), True),
        ("python", {"illustrative", "no-run"}, False),
        ("markdown", set(), False),
    ]
    assert got[1].code == "cuda()\n"
