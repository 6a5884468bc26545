"""Shared test configuration: hypothesis profiles, and how the suite is split across cores.

``dev`` (the default) keeps the local run quick; ``ci`` (chosen when ``CI`` is set, or with
``HYPOTHESIS_PROFILE=ci``) tries many more examples. Deadlines are off: the first call of a
torch function can be slow, and timing is the benchmarks' business, not the tests'.
"""

import os
import sys

# One thread per process for torch's (OpenMP) and MKL's kernels, unless the caller chose. The
# suite's tensors are small and ``make test`` runs one pytest-xdist worker per core (the site
# build adds two processes): with a thread per core in every process, OpenMP's threads spin at
# each barrier waiting for a core another process holds. Measured on 2 loaded cores, one M-RoPE
# diagnosis test: 55 s wall, 10 s CPU with one thread; 932 s wall, 52 s CPU with two. Set before
# torch is imported, so that the worker processes and the site build's subprocesses inherit it.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
if "torch" in sys.modules:  # imported already (by a plugin): the variable came too late
    sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    max_examples=150,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)


# The groups that take longest (worker-seconds of `pytest -n auto --durations=0`, slowest first);
# the scheduler hands these out first, then the rest by xdist's order (most tests first).
LONGEST_FIRST = (
    "tests/site",
    "tests/test_models_sweep.py",
    "tests/test_testing_patterns.py",
    "tests/test_testing_rope.py",
    "tests/test_testing_ggml.py",
)


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent without xdist
def pytest_xdist_make_scheduler(config, log):
    """Keep each test file on one pytest-xdist worker, and the whole site on one.

    ``make test`` runs ``-n auto``. A file's tests share module-scoped fixtures (a sweep of
    transformers' families, a ggml build, a model's logits) that would otherwise be built once per
    worker; the site tests share one strict build and one browser. (xdist's own ``loadgroup``
    does not group anything under pytest 9.2, so the grouping is this scheduler's.) The
    longest groups (:data:`LONGEST_FIRST`) go out first.
    """
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndSite(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/site" if path.startswith("tests/site/") else path

        def _assign_work_unit(self, node) -> None:
            # Longest first: a long group handed out last would run alone at the end.
            if not self.ordered:
                for scope in reversed(LONGEST_FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                self.ordered = True
            super()._assign_work_unit(node)

    return FilesAndSite(config, log)
