"""Shared test configuration: hypothesis profiles, the split across cores, how a worker ends.

``dev`` (the default) keeps the local run quick; ``ci`` (chosen when ``CI`` is set, or with
``HYPOTHESIS_PROFILE=ci``) tries many more examples. Deadlines are off: the first call of a
torch function can be slow, and timing is the benchmarks' business, not the tests'.
"""

import atexit
import logging
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


def _end_worker() -> None:
    """End a pytest-xdist worker once its exit handlers have run, without tearing it down.

    The worker has sent every report to the controller long before it exits. Its interpreter's
    teardown (finalizing torch, JAX, inductor and hundreds of transformers modules: no Python
    code of ours) then took 3-4 s on each core at the end of every run, with the controller
    waiting for it. Registered when the worker is configured, before the tests import torch,
    JAX and the rest, so every exit handler those register (torch's, JAX's, inductor's compile
    workers', weakref finalizers) still runs before it. Of the two registered earlier, logging's
    is called here, and execnet's only ends gateways this process opened (none).
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # the results went through execnet; xdist does not read a worker's status


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin: the site's folder is in it
def pytest_configure(config):
    if hasattr(config, "workerinput"):  # an xdist worker (a pytest run inside a test is not)
        atexit.register(_end_worker)
    else:  # pytest's main process (the xdist controller, or the only process) serves the site
        from tests.site import shared_build

        shared_build.serve(config)


def pytest_report_header(config):
    if not hasattr(config, "workerinput"):
        from tests.site import shared_build

        return shared_build.header(config)
    return None


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hooks: absent without xdist
def pytest_configure_node(node):
    from tests.site import shared_build

    shared_build.configure_node(node.config, node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Hand out units of work (tests/scheduling.py) in their order, one at a time.

    (xdist's own ``loadgroup`` does not group anything under pytest 9.2, so the grouping is this
    scheduler's.)
    """
    from xdist.scheduler import LoadScopeScheduling

    from tests.scheduling import unit_order, work_unit

    class Units(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.ordered:
                for unit in reversed(unit_order(list(self.workqueue))):
                    self.workqueue.move_to_end(unit, last=False)
                self.ordered = True
            super()._assign_work_unit(node)

    return Units(config, log)


@pytest.fixture(scope="session")
def fresh_imports(tmp_path_factory) -> dict:
    """What one fresh interpreter had imported after each step (tests/fresh_interpreter.py)."""
    from tests.fresh_interpreter import shared_record

    return shared_record(tmp_path_factory)
