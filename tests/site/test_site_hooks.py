"""The build hooks on small inputs: quick checks that need no site build."""

from __future__ import annotations

import importlib.util
import os
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
    """The plots package's page lists only the registry; the figures appear in their modules."""
    api_page = _hook("api_page")
    package = api_page.block(ROOT, "plots")
    assert package.startswith("::: posenc_ref.plots\n    options:\n      heading_level: 1\n")
    assert (
        "members: [SITE_FIGURES, site_figure, FIGURE_FACTS, figure_facts, default_of, sci, "
        "render_svg]" in package
    )
    assert "members" not in api_page.block(ROOT, "plots.absolute")


def test_api_reference_nav_has_a_page_per_module():
    """The nav section: the overview, each module's page once, a subsection per subpackage."""
    api_page = _hook("api_page")
    section = api_page.nav_section(ROOT)

    def flat(items):
        for item in items:
            (value,) = item.values()
            yield from flat(value) if isinstance(value, list) else [value]

    assert section[0] == {"Overview": "api.md"}
    assert list(flat(section[1:])) == sorted(api_page.pages(ROOT), key=api_page.pages(ROOT).index)
    assert sorted(flat(section[1:])) == sorted(api_page.pages(ROOT))
    models = next(item["models"] for item in section if "models" in item)
    assert models[0] == {"models (package)": "api/models.md"}
    assert {"rope": "api/rope.md"} in section


def test_docstring_links_to_pages_reach_them_from_the_api_folder():
    """``[x](page.md#a)`` in a docstring becomes ``../page.md#a``: the module pages are in api/."""
    link = _hook("griffe_rst")._PAGE_LINK
    text = "[a](rope.md#x-y) [b](models.md) [c](https://x.org/a.md) [d](#x) [e](../x.md)"
    assert link.sub(r"](../\1)", text) == (
        "[a](../rope.md#x-y) [b](../models.md) [c](https://x.org/a.md) [d](#x) [e](../x.md)"
    )


def test_links_to_tests_point_at_the_module_pages():
    """``tests.md#<module>-<test>`` links go to the module's page; an unknown module stays."""
    tests_page = _hook("tests_page")
    text = (
        "[checked](tests.md#test_rope-test_x), [all](../tests.md#test_rope), "
        "[odd](tests.md#test_nothing-test_y), [index](tests.md)"
    )
    assert tests_page.cite_module_pages(text, {"test_rope"}) == (
        "[checked](tests/test_rope.md#test_rope-test_x), "
        "[all](../tests/test_rope.md#test_rope), "
        "[odd](tests.md#test_nothing-test_y), [index](tests.md)"
    )


def test_math_elements_are_found_and_replaced():
    """Arithmatex's elements and notebook markdown cells (to their own closing div), in order."""
    typeset = _hook("typeset")
    html = (
        '<p>a <span class="arithmatex">\\(x &lt; y\\)</span></p>'
        '<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown jp-MarkdownOutput" x="1">'
        "<div><p>$z$</p></div></div><div>after</div>"
        '<div class="arithmatex">\\[w\\]</div>'
    )
    spans = typeset.math_spans(html)
    assert [html[a:b] for a, b in spans] == ["\\(x &lt; y\\)", "<div><p>$z$</p></div>", "\\[w\\]"]
    # Math elements inside a cell are typeset with the cell, not a second time on their own.
    cell = '<p><span class="arithmatex">a</span> <span class="arithmatex">b</span></p>'
    nested = html.replace("<p>$z$</p>", cell)
    found = [nested[a:b] for a, b in typeset.math_spans(nested)]
    assert found == ["\\(x &lt; y\\)", f"<div>{cell}</div>", "\\[w\\]"]
    out = typeset.splice(html, spans, ["A", "B", "C"])
    assert out == (
        '<p>a <span class="arithmatex">A</span></p>'
        '<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown jp-MarkdownOutput" x="1">B</div>'
        '<div>after</div><div class="arithmatex">C</div>'
    )


def test_typesetter_numbers_references_and_reports_errors():
    r"""One page through MathJax in Node: a forward \eqref gets its number, and TeX is kept.

    An error names its formula; the stylesheet has a rule for each glyph used.
    """
    typeset = _hook("typeset")
    components = ROOT / typeset.COMPONENTS
    if not (components / "startup.js").is_file():
        message = "MathJax is not fetched (scripts/vendor_mathjax.sh; make does it)"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    typesetter = typeset.Typesetter(components)
    try:
        answer = typesetter.ask(
            {
                "fragments": [
                    "\\(\\eqref{eq:b}\\)",
                    "\\[\\begin{equation} a \\label{eq:a} \\end{equation}\\]",
                    "\\[\\begin{equation} b &lt; c \\label{eq:b} \\end{equation}\\]",
                    "\\(\\nosuchmacro\\)",
                ]
            }
        )
        css = typesetter.ask({"stylesheet": True})["css"]
    finally:
        typesetter.close()
    first, _, second, bad = answer["fragments"]
    assert answer["labels"] == {"eq:a": "1", "eq:b": "2"}
    assert '<a href="#mjx-eqn%3Aeq%3Ab">' in first and "mjx-c32" in first  # "(2)"
    assert 'id="mjx-eqn:eq:b"' in second
    assert '<annotation encoding="application/x-tex"> b &lt; c \\label{eq:b} </annotation>' in (
        second.replace("\\begin{equation}", "").replace("\\end{equation}", "")
    )
    assert answer["errors"] == [
        {"tex": "\\nosuchmacro", "message": "Undefined control sequence \\nosuchmacro"}
    ]
    assert "mjx-merror" in bad
    assert ".mjx-c32::before" in css and "woff-v2/MathJax_Main-Regular.woff" in css


def test_search_index_turns_tex_into_text():
    """Formulas in the search index read as text; code keeps its backslashes and dollars."""
    search = _hook("search_index")
    text = (
        r"<p>The angle \(\omega_i = n^{-2i/d}\) and</p> \[\begin{equation} \lVert PE(t+k)"
        r" \rVert = \sqrt{d - 2\sum_{i} \cos(k\,\omega_i)} \label{eq:x} \end{equation}\]"
        r" from \(\eqref{eq:x}\), \(a &lt; b\) <pre><code>re.sub(r'\d+', '', '\(x\)')</code></pre>"
    )
    clean = search.clean_text(text)
    prose = clean.split("<pre>")[0]
    assert r"\begin" not in prose and r"\label" not in prose and r"\(" not in prose
    assert "ω_i = n^(-2i/d)" in clean
    assert "‖ PE(t+k) ‖ = √(d - 2Σ_i cos (k ω_i))" in clean
    assert "a &lt; b" in clean  # still HTML, still escaped
    assert r"<pre><code>re.sub(r'\d+', '', '\(x\)')</code></pre>" in clean
    assert search.tex_to_text(r"\frac{\ln s}{\ln L_0}") == "(ln s)/(ln L_0)"
    assert search.clean_text("costs $5 and $6") == "costs $5 and $6"  # a dollar is text ...
    assert search.clean_text("a $x_1$ b", dollars=True) == "a x_1 b"  # ... except in notebooks


def test_alt_text_placeholders_are_filled_or_fail(monkeypatch):
    """Alt-text placeholders come from the figure's facts; an unknown one fails the build."""
    from mkdocs.exceptions import PluginError

    alt_text = _hook("alt_text")
    alt_text.on_pre_build(None)
    monkeypatch.setitem(alt_text.registered(), "demo.svg", lambda: {"top": "12.6"})
    page = "![falls to {top} at\ndistance 50](figures/demo.svg) and ![no numbers](figures/x.svg)"
    assert alt_text.fill(page) == (
        "![falls to 12.6 at\ndistance 50](figures/demo.svg) and ![no numbers](figures/x.svg)"
    )
    with pytest.raises(PluginError, match="known values"):
        alt_text.fill("![{bottom}](figures/demo.svg)")
    with pytest.raises(PluginError, match="no facts are registered"):
        alt_text.fill("![{top}](figures/unknown.svg)")


def test_alt_text_facts_match_the_figures_they_describe():
    """A few facts recomputed independently: the decay bound at 50, T5's last-bucket distance."""
    import math

    alt_text = _hook("alt_text")
    alt_text.on_pre_build(None)
    decay = alt_text.facts("rope_decay.svg")
    pairs = [10000.0 ** (-2 * i / 128) for i in range(64)]
    partial, total = 0j, 0.0
    for w in pairs:
        partial += complex(math.cos(50 * w), math.sin(50 * w))
        total += abs(partial)
    assert decay["at_50"] == f"{total / 64:.1f}" == "12.6"
    # T5 (32 buckets, max_distance 128, bidirectional: N = 16, e = 8): the floor of the log
    # formula reaches N - 1 at e * (D / e) ** ((N - e - 1) / (N - e)) = 90.5.
    flat = math.ceil(8 * (128 / 8) ** (7 / 8))
    assert alt_text.facts("t5_buckets.svg")["bidirectional_flat"] == str(flat) == "91"


def test_figure_facts_sit_beside_their_figures():
    """Each figure's alt-text facts are registered in the module that draws it, and only there."""
    import posenc_ref.plots as plots

    alt_text = _hook("alt_text")
    assert not hasattr(alt_text, "FACTS")  # the hook fills placeholders; it computes nothing
    assert plots.FIGURE_FACTS, "no figure registers its facts"
    for name, facts in plots.FIGURE_FACTS.items():
        assert facts.__module__ == plots.SITE_FIGURES[name].__module__, name
    with pytest.raises(ValueError, match="not a registered site figure"):
        plots.figure_facts("no_such_figure.svg")(lambda: {})
