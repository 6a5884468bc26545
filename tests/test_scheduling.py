"""The rules by which ``pytest -n auto`` groups and orders the suite (tests/scheduling.py)."""

from pathlib import Path

from tests.scheduling import (
    FIRST,
    KEEP_WHOLE,
    LAST,
    LONGEST_FIRST,
    RUN_WITH,
    SITE_LONGEST_FIRST,
    SPLIT_BY_PARAMETER,
    unit_order,
    work_unit,
)

ROOT = Path(__file__).resolve().parents[1]


def test_a_file_is_one_unit_unless_split_by_its_parameter():
    assert work_unit("tests/test_rope.py::test_a[half-1]") == "tests/test_rope.py"
    assert work_unit("tests/test_rope.py::TestX::test_b") == "tests/test_rope.py"
    # the tests looking at one page land together; the page's own id may hold a slash
    pages = "tests/site/test_site.py::test_page_renders_offline[notebooks/explore.ipynb]"
    cut = "tests/site/test_site.py::test_nothing_cut_off[notebooks/explore.ipynb]"
    assert work_unit(pages) == work_unit(cut) == "tests/site/test_site.py[notebooks/explore.ipynb]"
    assert work_unit("tests/site/test_site.py::test_sitemap_lists_exactly_the_nav") == FIRST
    assert work_unit("tests/site/test_explorer.py::test_x[390]") == "tests/site/test_explorer.py"
    # the search tests share one load of the home page: kept with the file's other tests
    search = "tests/site/test_site.py::test_search_ranks_the_explanation_first[YaRN]"
    assert search.partition("[")[0] in KEEP_WHOLE and work_unit(search) == FIRST
    # the quick benchmark runs on the compile tests' worker (inductor set up once)
    bench = "tests/test_benchmarks.py::test_quick_run_writes_the_schema"
    assert work_unit(bench) == work_unit("tests/test_rope_compile.py::test_compiled_module")


def test_the_build_goes_first_the_longest_next_and_the_short_units_last():
    units = [
        f"{LAST[0]}[x]",
        "tests/test_rope.py",
        "tests/site/test_site.py[api.md]",
        "tests/site/test_site.py[rope.md]",
        "tests/site/test_explorer.py",
        LONGEST_FIRST[1],
        FIRST,
        "tests/site/test_site.py[tests.md]",
        LONGEST_FIRST[0],
        "tests/test_absolute.py",
    ]
    assert unit_order(units) == [
        FIRST,
        LONGEST_FIRST[0],
        LONGEST_FIRST[1],
        "tests/test_rope.py",
        "tests/test_absolute.py",
        "tests/site/test_explorer.py",
        "tests/site/test_site.py[api.md]",
        "tests/site/test_site.py[tests.md]",
        "tests/site/test_site.py[rope.md]",
        f"{LAST[0]}[x]",
    ]


def test_every_file_named_exists():
    """A renamed test file would silently lose its place in the order."""
    named = [FIRST, *SPLIT_BY_PARAMETER, *LONGEST_FIRST, *LAST, *RUN_WITH, *RUN_WITH.values()]
    named += [unit.partition("[")[0] for unit in SITE_LONGEST_FIRST]
    missing = [name for name in named if not (ROOT / name).is_file()]
    assert missing == []


def test_every_test_kept_whole_exists():
    """A renamed test would silently be split by its parameter again."""
    for nodeid in KEEP_WHOLE:
        path, _, name = nodeid.partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), nodeid
