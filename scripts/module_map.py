"""Print the README's module map: one line per module with its size, measured from the files.

``tests/test_readme.py`` fails when the table in README.md differs from this output; run
``python scripts/module_map.py --write`` to update it in place.

Every module is listed, private ones (``_checks.py``, ``_rotate.py``, ...) and ``__main__.py``
included: the reader should see the whole architecture. Rows are grouped by floor, the maths
first (in the reading order of :data:`MATHS_ORDER`, then its other modules, then its helpers),
then the floors above it, each of which imports the ones below (``tests/test_layers.py``). A
subpackage (``plots/``) gets one line with its docstring and the lines of all its files,
followed by one line per module in it, then its own subpackages (``models/families/``) the same
way.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "posenc_ref"


# The maths, in the order to read it: the frequencies, the rotation, the module, the scaling
# methods, more position rows, the other encodings, the same numbers on Python floats.
MATHS_ORDER = [
    "absolute.py", "rope_functions.py", "rope.py", "rope_scaling_functions.py", "rope_scaling.py",
    "mrope.py", "axial.py", "relative.py", "relative_terms.py", "values.py",
]  # fmt: skip
# The floors above the maths: (label, top-level entries), lowest first.
FLOORS = [
    ("2 reader", ["models", "encodings"]),
    ("3 command line", ["__main__.py", "cli"]),
    ("4 kit", ["testing"]),
    ("5 figures", ["plots"]),
]


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().splitlines()[0] if doc.strip() else ""
    # Sphinx roles read as plain code in the README: :func:`a.b.name` -> `name`
    first = re.sub(r":\w+:`~?(?:[\w.]+\.)?([\w]+)`", r"`\1`", first)
    return first.replace("``", "`")


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _modules(folder: Path) -> list[Path]:
    # public modules first, then private ones; __init__.py is the package itself
    found = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
    return sorted(found, key=lambda p: (p.name.startswith("_"), p.name))


def _packages(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir() if (p / "__init__.py").is_file() and not p.name.startswith("_")
    )


def _package_lines(folder: Path, prefix: str, floor: str) -> list[str]:
    # the package (its docstring, the lines of all its files), its modules, then its packages
    total = sum(_lines(p) for p in folder.rglob("*.py"))
    name = f"{prefix}{folder.name}/"
    lines = [f"| {floor} | `{name}` | {_summary(folder / '__init__.py')} | {total} |"]
    for path in _modules(folder):
        lines.append(f"| {floor} | `{name}{path.name}` | {_summary(path)} | {_lines(path)} |")
    for package in _packages(folder):
        lines += _package_lines(package, name, floor)
    return lines


def module_map() -> str:
    """The markdown table: floor, module, its docstring's first line, and its line count."""
    lines = ["| floor | module | what it holds | lines |", "|---|---|---|---:|"]
    above = {entry for _, entries in FLOORS for entry in entries}
    rest = [p for p in _modules(PACKAGE) if p.name not in MATHS_ORDER and p.name not in above]
    maths = [PACKAGE / name for name in MATHS_ORDER] + rest
    for path in maths:
        lines.append(f"| 1 maths | `{path.name}` | {_summary(path)} | {_lines(path)} |")
    for floor, entries in FLOORS:
        for entry in entries:
            path = PACKAGE / entry
            if path.is_dir():
                lines += _package_lines(path, "", floor)
            else:
                lines.append(f"| {floor} | `{entry}` | {_summary(path)} | {_lines(path)} |")
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
