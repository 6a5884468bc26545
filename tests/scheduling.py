"""How ``pytest -n auto`` spreads the suite over the cores: the units of work and their order.

tests/conftest.py's scheduler hands the units out; tests/test_scheduling.py checks the rules.
"""

from __future__ import annotations

# How the suite is spread over the cores (``make test`` runs ``pytest -n auto``). A unit of work
# is a test file, kept whole on one pytest-xdist worker: its tests share module-scoped fixtures (a
# model's logits, a ggml build) that would otherwise be built once per worker. The files below
# are split further, by the test's parameter: ``test_a[x]`` and ``test_b[x]`` are one unit, and
# the file's unparametrized tests another. test_site.py's parameter is the page (the tests that
# look at one page share its load); the sweep's is a part of the transformers families; the
# corpus test's is one released config.
SPLIT_BY_PARAMETER = (
    "tests/site/test_site.py",
    "tests/test_models_sweep.py",
    "tests/test_real_configs.py",
)
# Parametrized tests of those files that stay whole with their file's other tests: the search
# tests' parameter is a query, not a page, and all of them read one load of the home page (a
# module fixture in test_site.py): split, each worker that ran one would load and index it.
KEEP_WHOLE = ("tests/site/test_site.py::test_search_ranks_the_explanation_first",)
# Files that run in one unit with another, on one worker: inductor's first use in a process
# (imports, the vector-instruction check, its precompiled header: ~12 CPU-s) is paid once, and
# the quick benchmark's compiled graphs of the compile tests' shape come from the same cache.
RUN_WITH = {"tests/test_benchmarks.py": "tests/test_rope_compile.py"}

# The unit handed out first: its tests need the site, so where make test has not built it already,
# the first worker builds it (the build is shared by every worker: tests/site/shared_build.py)
# while the other starts on the rest.
FIRST = "tests/site/test_site.py"

# The units that take longest (worker-seconds of `pytest -n auto`, slowest first, measured
# 2026-11-26 on main at 83d90ea, a fresh clone, cold inductor cache, ggml built by make's setup);
# after FIRST they go out first (a long unit handed out last would run alone at the end), except
# that the site's units go last, when the build is done, so that no worker waits for it.
LONGEST_FIRST = (
    "tests/test_models_sweep.py",
    "tests/test_rope_compile.py",
    "tests/test_testing_frameworks.py",
    "tests/test_testing_patterns.py",
    "tests/test_cli.py",
    "tests/test_testing_rope.py",
    "tests/test_rope.py",
    "tests/test_models_hf.py",
    "tests/test_testing_arrays.py",
    "tests/test_models.py",
    "tests/test_rope_scaling.py",
)
SITE_LONGEST_FIRST = (
    "tests/site/test_explorer.py",
    "tests/site/test_site.py[api.md]",
    "tests/site/test_site.py[tests.md]",
    "tests/site/test_site.py[rope.md]",
    "tests/site/test_site.py[rope_scaling.md]",
    "tests/site/test_site.py[properties.md]",
)
# Many short units, handed out last: whichever worker is free takes the next, so both finish
# within a few seconds of each other.
LAST = ("tests/test_real_configs.py",)


def work_unit(nodeid: str) -> str:
    """The unit of work that a test belongs to (:data:`SPLIT_BY_PARAMETER`, :data:`RUN_WITH`)."""
    path, _, name = nodeid.partition("::")
    path = RUN_WITH.get(path, path)
    whole = nodeid.partition("[")[0] in KEEP_WHOLE
    if path in SPLIT_BY_PARAMETER and not whole and name.endswith("]") and "[" in name:
        return f"{path}[{name[name.index('[') + 1 : -1]}]"
    return path


def unit_order(units: list[str]) -> list[str]:
    """``units`` in the order they are handed out: FIRST, the longest, the rest, the site, LAST."""

    def rank(unit: str) -> tuple[int, int]:
        base = unit.partition("[")[0]
        if unit == FIRST:
            return (0, 0)
        if base in LAST:
            return (4, LAST.index(base))
        if base.startswith("tests/site/"):
            known = [i for i, u in enumerate(SITE_LONGEST_FIRST) if unit == u or base == u]
            return (3, known[0] if known else len(SITE_LONGEST_FIRST))
        known = [i for i, u in enumerate(LONGEST_FIRST) if base == u]
        return (1, known[0]) if known else (2, 0)

    return sorted(units, key=rank)  # stable: xdist's own order within a rank
