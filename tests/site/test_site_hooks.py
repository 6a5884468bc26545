"""The build hooks on small inputs: quick checks that need no site build."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

# Not imported from conftest.py: two conftest modules (tests/, tests/site/) share that name.
ROOT = Path(__file__).resolve().parents[2]


def _hook(name: str):
    spec = importlib.util.spec_from_file_location(f"hooks_{name}", ROOT / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_tests_page_anchors_and_sources(tmp_path):
    """Functions and class methods get <module>-<name> anchors; sources keep their decorators."""
    tests_page = _hook("tests_page")
    path = tmp_path / "tests" / "test_demo.py"
    path.parent.mkdir()
    path.write_text(
        textwrap.dedent(
            '''
            """Demo module."""
            from hypothesis import example, given, strategies as st


            def helper():
                return 1


            @given(st.integers())
            @example(0)
            def test_prop(x):
                """x*2 is even, for x_i in [-1, 1]."""
                assert x * 2 % 2 == 0


            class TestGroup:
                def test_method(self):
                    assert helper() == 1
            '''
        )
    )
    mod = tests_page.parse_module(path, tmp_path)
    assert [e.anchor for e in mod.tests] == [
        "test_demo-test_prop",
        "test_demo-TestGroup-test_method",
    ]
    assert mod.tests[0].source.startswith("@given(st.integers())\n@example(0)\ndef test_prop")
    assert mod.tests[1].source.startswith("def test_method(self):")
    assert "def helper" in mod.helpers[0]
    assert tests_page.plain(mod.tests[0].doc) == r"x\*2 is even, for x\_i in \[-1, 1\]."


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<script src="https://cdn.example/x.js"></script>', ["https://cdn.example/x.js"]),
        ('<link rel="stylesheet" href="//fonts.example/css">', ["//fonts.example/css"]),
        ("<img alt='' src='http://example.org/a.png'>", ["http://example.org/a.png"]),
        (
            '<style>@import url("https://fonts.example/f.css");</style>',
            ["https://fonts.example/f.css"],
        ),
        ('<script>import("https://cdn.example/m.mjs")</script>', ["https://cdn.example/m.mjs"]),
        ('<a href="https://example.org/">a link loads nothing</a>', []),
        ('<link rel="canonical" href="https://example.org/page/">', []),
        ('<script src="../assets/x.js"></script><img src="figures/a.svg">', []),
        ("<pre>&lt;script src=&quot;https://cdn.example/x.js&quot;&gt;</pre>", []),
    ],
)
def test_off_host_loads(html, expected):
    assert _hook("offline_assets").off_host_loads(html) == expected


def test_notebook_scripts_stripped(tmp_path):
    """The MathJax 2 loader and config, and the mermaid loader, are removed from notebook pages."""
    import nbformat
    from mkdocs_jupyter.nbconvert2 import nb2html

    path = tmp_path / "x.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("$x$")]), path)
    html = nb2html(str(path))

    class Page:
        class file:  # noqa: N801 - a stand-in for mkdocs.structure.files.File
            src_uri = "notebooks/x.ipynb"

    out = _hook("notebooks").on_page_content(html, Page, None, None)
    assert "x-mathjax-config" in html and "x-mathjax-config" not in out
    assert "cdnjs" in html and "cdnjs" not in out


def test_math_directive_and_roles_become_markdown():
    griffe_rst = _hook("griffe_rst")
    text = "Intro\n\n.. math::\n\n    a = b\n\n    c\n\nafter"
    assert griffe_rst.math_blocks(text) == "Intro\n\n$$\na = b\n$$\n\n$$\nc\n$$\n\nafter"
    assert griffe_rst._MATH_ROLE.sub(lambda m: rf"\({m.group(1)}\)", r":math:`\omega_i`") == (
        r"\(\omega_i\)"
    )


def test_roles_resolve_against_the_package():
    """:func: names resolve in the module, then at the package root; unknown names stay code."""
    import griffe

    griffe_rst = _hook("griffe_rst")
    package = griffe.load("posenc_ref", search_paths=[str(ROOT)])
    obj = package["absolute"]
    resolve = griffe_rst._resolver(obj, package)

    def sub(text):
        return griffe_rst._XREF_ROLE.sub(resolve, text)

    assert sub(":func:`inv_freq`") == "[`inv_freq`][posenc_ref.absolute.inv_freq]"
    assert sub(":func:`select_device`") == "[`select_device`][posenc_ref.select_device]"
    assert sub(":func:`~posenc_ref.sinusoidal`") == "[`sinusoidal`][posenc_ref.sinusoidal]"
    assert sub(":func:`no_such_function`") == "`no_such_function`"


def test_api_page_lists_public_modules():
    modules = _hook("api_page").public_modules(ROOT)
    assert modules[:3] == ["device", "absolute", "relative"]
    assert not any(part.startswith("_") for m in modules for part in m.split("."))
    # Subpackages (plots, testing) follow the core modules, each followed by its own modules;
    # the figure modules in the site's reading order.
    plots = modules.index("plots")
    assert modules[plots + 1 : plots + 3] == ["plots.absolute", "plots.properties"]
    assert "testing" in modules and "testing.strategies" in modules
    for before, module in zip(modules, modules[1:], strict=False):
        if "." in module:
            package = module.split(".")[0]
            assert before == package or before.startswith(package + "."), (before, module)


def test_api_page_shows_plots_registry_once():
    """The plots section lists only the registry; the figure functions appear in their modules."""
    blocks = _hook("api_page").blocks(ROOT)
    (package,) = [b for b in blocks if b.startswith("::: posenc_ref.plots\n")]
    assert "members: [SITE_FIGURES, site_figure, render_svg]" in package
    assert "::: posenc_ref.plots.absolute\n    options:\n      heading_level: 3" in blocks
