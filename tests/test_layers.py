"""The package's floors, drawn from its code: the maths below, nothing importing in a circle.

Every module's imports are read with ``ast``, the lazy ones inside functions included; imports
under ``if TYPE_CHECKING:`` are left out (they never run: annotations only). The maths is the
top level of ``posenc_ref`` (``absolute``, ``relative``, ``rope_functions``, ``rope_scaling``,
``mrope``, ``axial``, ``rope``, ``values``, ... and their helpers ``_checks``, ``_rotate``);
the floors above it are the folders ``models/`` and ``encodings/`` (the reader), ``testing/``
(the kit), ``cli/`` and ``__main__`` (the command line), ``plots/`` (the figures).

- No module of the maths imports a floor above it, lazily or not, with one documented
  exception: ``RotaryEmbedding.from_hf_config`` (``rope.py``) imports the reader on its call,
  the README's one-line way from a config to a module.
- No import circle anywhere, that exception included (it imports the reader's module, not the
  package, whose ``vision`` imports ``axial``, and so ``rope``, for its tensors). One circle of
  the kit is allowed by name below until the kit's branch removes it.

:func:`graph` is also what the report of issue 41 drew its before/after counts from.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "posenc_ref"
UPPER = ("models", "encodings", "testing", "cli", "plots", "__main__")
# The one arrow from the maths up: (importer, imported), documented where it stands.
EXCEPTION = ("posenc_ref.rope", "posenc_ref.models.read_rope")
# The kit's modules import each other in a circle (issue 41, item 5): _arrays -> _model and
# _plan -> _arrays at run time, _model -> _plan for its annotations (left out above, so the graph
# shows no circle today). The kit's engineer (branch i39-kit) owns posenc_ref/testing/ and
# removes it; it is named here so that a run-time import added there meanwhile is not a failure
# of this branch. Nothing else may be added.
KNOWN_CIRCLES = [
    {"posenc_ref.testing._arrays", "posenc_ref.testing._model", "posenc_ref.testing._plan"},
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST):
    """Every import statement that can run: at the top, in functions, not under TYPE_CHECKING."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _imports_of(child))
            continue
        yield from _imports_of(node)


def _imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node)


def graph() -> dict[str, set[str]]:
    """Module -> the ``posenc_ref`` modules it imports (lazily or not)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                # `from x import y`: x.y where y is a module, else x (y is read from x)
                submodules = [f"{base}.{a.name}" for a in node.names]
                targets = [t if t in modules else base for t in submodules]
            edges[name] |= {t for t in targets if t in modules and t != name}
    return edges


def floor(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in UPPER else "maths"


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_maths_imports_nothing_above_it():
    edges = graph()
    up = sorted(
        (a, b)
        for a, targets in edges.items()
        for b in targets
        if floor(a) == "maths" and floor(b) != "maths" and a != "posenc_ref"
    )
    assert up == [EXCEPTION], f"arrows from the maths up: {up}"


def test_the_one_arrow_up_is_documented_where_it_stands():
    text = (PACKAGE / "rope.py").read_text(encoding="utf-8")
    assert "the one import from the maths up" in text.lower()


def test_no_import_circle():
    found = circles(graph())
    unknown = [sorted(c) for c in found if c not in KNOWN_CIRCLES]
    assert not unknown, f"import circles: {unknown}"


def test_the_graph_sees_lazy_imports_and_skips_type_checking_ones():
    """The reader: a lazy import in a function counts, a TYPE_CHECKING one does not."""
    edges = graph()
    assert "posenc_ref.models.read_rope" in edges["posenc_ref.rope"]  # lazy, from_hf_config
    assert "posenc_ref.rope" not in edges["posenc_ref.models.sparse"]  # annotations only
    assert "posenc_ref.axial" in edges["posenc_ref.models.vision"]  # lazy, in AxialSpec.apply
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
