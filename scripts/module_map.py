"""Print the README's module map: one line per module with its size, measured from the files.

``tests/test_readme.py`` fails when the table in README.md differs from this output; run
``python scripts/module_map.py --write`` to update it in place.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_map() -> str:
    """The markdown table: module, its docstring's first line, and its line count."""
    lines = ["| module | what it holds | lines |", "|---|---|---:|"]
    for path in sorted((ROOT / "posenc_ref").glob("*.py")):
        if path.name.startswith("_"):
            continue
        source = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(source)) or ""
        summary = doc.strip().splitlines()[0] if doc.strip() else ""
        count = len(source.splitlines())
        lines.append(f"| `{path.name}` | {summary} | {count} |")
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
