"""Print the README's module map: one line per module with its size, measured from the files.

``tests/test_readme.py`` fails when the table in README.md differs from this output; run
``python scripts/module_map.py --write`` to update it in place.

Private modules (``_checks.py``, ...) are not listed. A subpackage (``plots/``) gets one line with
its docstring and the lines of all its files, followed by one line per public module in it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "posenc_ref"


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _public(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if not p.name.startswith("_"))


def module_map() -> str:
    """The markdown table: module, its docstring's first line, and its line count."""
    lines = ["| module | what it holds | lines |", "|---|---|---:|"]
    for path in _public(PACKAGE):
        lines.append(f"| `{path.name}` | {_summary(path)} | {_lines(path)} |")
    for folder in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()):
        if folder.name.startswith("_"):
            continue
        total = sum(_lines(p) for p in folder.rglob("*.py"))
        lines.append(f"| `{folder.name}/` | {_summary(folder / '__init__.py')} | {total} |")
        for path in _public(folder):
            lines.append(f"| `{folder.name}/{path.name}` | {_summary(path)} | {_lines(path)} |")
    return "\n".join(lines)


def write_readme() -> None:
    """Replace the table between the README's module-map markers."""
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(r"(<!-- module-map[^>]*-->\n).*?(\n<!-- /module-map -->)", re.S)
    readme.write_text(pattern.sub(lambda m: m.group(1) + module_map() + m.group(2), text))


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write_readme()
    else:
        print(module_map())
