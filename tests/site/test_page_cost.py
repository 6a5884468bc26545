"""What a page costs the reader's browser, against the same page with JavaScript off.

Issue 43: a page of text and mathematics must not make the reader's machine work much more
than the page itself (its HTML parsed, styled, laid out and painted) does with JavaScript off.
The browser typesetting its math made that 6-17 times. ``benchmarks/page_cost.py`` measures
every page (``python -m benchmarks.page_cost``, the table on the benchmarks page); this test
measures a few, in the suite's build, and gates on the same ratio: each page's main-thread time
(CPU time of Chromium's renderer thread) with JavaScript over without, in the same run.

No time is asserted. The pages of text and many formulas are held to issue 43's bound, 2: they
were 5 to 7 times (measured this way) when the browser typeset their math, and are at most about
1.4 now; each mode's fastest of two loads counts, so the noise of a busy machine does not bring
either side across it. The lightest pages are not held to a ratio: there the theme's own script
(Material's navigation and instant loading), the same on every page, costs about as much as the
page itself, which puts them near 2 to 3 (the benchmarks page shows them, and why), where noise
could flip any bound tight enough to mean something. What every page loads is checked instead:
no widget script and no search index on a page without them.
"""

from __future__ import annotations

import pytest

from benchmarks import page_cost

BOUND = 2.0
ROUNDS = 2
# Pages of text and mathematics with the most formulas: where typesetting in the browser
# showed (issue 43 measured rope_design at 16.9 times), and the API module page with the most.
PAGES = ["rope_design.md", "absolute.md", "relative.md", "api/relative_terms.md"]
# A page with little but text: what it loads is what every page loads.
TEXT_PAGE = "api/models.md"


@pytest.fixture(scope="module")
def costs(chromium, site) -> dict[str, dict[bool, list[page_cost.Load]]]:
    """Each page loaded ``ROUNDS`` times with JavaScript and without, interleaved."""
    contexts = page_cost.contexts(chromium, site.url)
    found = {page: {True: [], False: []} for page in PAGES}
    try:
        for round_index in range(ROUNDS):
            for page in found:
                order = (True, False) if round_index % 2 else (False, True)
                for javascript in order:
                    load = page_cost.measure(contexts[javascript], site.page_url(page), javascript)
                    found[page][javascript].append(load)
    finally:
        for context in contexts.values():
            context.close()
    return found


def _ratio(loads: dict[bool, list[page_cost.Load]]) -> tuple[float, float]:
    """Each mode's fastest load: main-thread time with JavaScript and without (s)."""
    with_js = min(load.task_s for load in loads[True])
    without = min(load.task_s for load in loads[False])
    assert without > 0
    return with_js, without


@pytest.mark.browser
@pytest.mark.parametrize("page_src", PAGES)
def test_javascript_costs_at_most_the_page_itself(costs, page_src):
    """Main-thread time with JavaScript is within BOUND times the page's own, without."""
    with_js, without = _ratio(costs[page_src])
    assert with_js / without <= BOUND, (
        f"{page_src}: {with_js:.3f} s with JavaScript, {without:.3f} s without"
    )


# What a page loads (its resources' names), and whether the search index is among them.
_LOADED = "() => performance.getEntriesByType('resource').map((e) => e.name)"
_INDEX_LOADED = """() => performance.getEntriesByType('resource')
  .some((e) => e.name.endsWith('/search/search_index.json'))"""
# Loaded by javascripts/page_scripts.js on the pages that have their elements only.
PAGE_SCRIPTS = [
    "posenc_ref.js",
    "explorer_charts.js",
    "explorer.js",
    "read_config.js",
    "zoo-filter.js",
]


@pytest.mark.browser
def test_a_text_page_loads_no_widget_script_and_the_index_only_for_search(chromium, site):
    """A page without widgets loads none of their scripts; the search index waits for search."""
    context = chromium.new_context(viewport=page_cost.VIEWPORT)
    try:
        page = context.new_page()
        page.goto(site.page_url(TEXT_PAGE), wait_until="networkidle")
        loaded = [name.rsplit("/", 1)[-1] for name in page.evaluate(_LOADED)]
        assert "page_scripts.js" in loaded
        assert [name for name in loaded if name in PAGE_SCRIPTS] == []
        assert not page.evaluate(_INDEX_LOADED)
        page.click("input.md-search__input")
        page.wait_for_function(_INDEX_LOADED, timeout=60_000)
    finally:
        context.close()


def test_page_kinds_and_formula_counts():
    """A widget or a notebook makes a page "drawn by script"; formulas are counted either way."""
    typeset = '<span class="arithmatex"><mjx-container class="MathJax">x</mjx-container></span>'
    raw = '<span class="arithmatex">\\(x\\)</span>'
    cell = '<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown x"><p>$a$ and $$b$$, $5</p></div>'
    assert page_cost.page_kind(raw) == "text"
    assert page_cost.page_kind('<div class="pe-widget" data-x></div>') == "script"
    assert page_cost.page_kind('<div class="jp-Notebook">') == "script"
    assert page_cost.math_count(typeset * 3) == 3
    assert page_cost.math_count(raw * 2 + cell) == 4


def test_recorded_runs_hold_what_the_page_shows():
    """The committed record: a run before issue 43 and one after, each page's ratio its own."""
    record = page_cost.load()
    assert {"before", "after"} <= set(record["runs"])
    for run in record["runs"].values():
        assert run["machine"]["cpu"] and run["chromium"] and run["rounds"] >= 1
        for row in run["pages"]:
            assert row["kind"] in {"text", "script"}
            assert row["ratio"] == round(row["js"]["task_s"] / row["no_js"]["task_s"], 3)
            assert len(row["js"]["samples_task_s"]) == run["rounds"]
        assert page_cost.table(run).count("\n") == len(run["pages"]) + 1
