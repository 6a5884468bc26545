"""One fresh interpreter, shared by the tests that ask what a step imports.

Several tests ask "after X, in a fresh Python, is module M loaded?". Each used to start its own
interpreter, and each paid for ``import torch`` (about 3 CPU-seconds). Here one interpreter
takes all their steps in order and records ``sys.modules`` after each; every test keeps its own
assertion on the record of its step (see :func:`modules_after`).

The checks are on the whole of ``sys.modules`` after a step, never on what the step added, so an
earlier step cannot hide a later step's violation: it could only make a later check fail. The
order below is chosen so that no step loads what a later step's test forbids (``import
posenc_ref`` before the first rotation, before a config read, before the kit without hypothesis,
which must come before anything loads the kit: the command line does).

A step that raises stops the interpreter (what follows cannot be trusted): the record keeps the
traceback, and every test of that step or a later one fails with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# (name, code), run in this order by one interpreter, in one namespace. A step may set ``result``
# (a JSON value) for its test to read. Each imports only what its test is about (the last one
# imports its test module, for the NumPy function that test checks, as the test did before).
STEPS = (
    ("import torch", "import torch"),
    ("import posenc_ref", "import posenc_ref"),
    ("import posenc_ref.rope", "import posenc_ref.rope"),
    (
        "the first rotation",
        "x = torch.ones(1, 2, 3, 8)\nposenc_ref.RotaryEmbedding(8)(x, x)",
    ),
    (
        "from_hf_config",
        "posenc_ref.RotaryEmbedding.from_hf_config({'model_type': 'llama', 'head_dim': 8})",
    ),
    (
        # tests/test_testing_properties.py: the kit with hypothesis impossible to import. The
        # interpreter must not have loaded hypothesis or the kit yet, or the step proves nothing.
        "the kit without hypothesis",
        "early = sorted(m for m in sys.modules if m.split('.')[0] == 'hypothesis'\n"
        "               or m.startswith('posenc_ref.testing'))\n"
        "assert not early, f'loaded before the step, so it cannot block them: {early}'\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'hypothesis' or name.startswith('hypothesis.'):\n"
        "            raise ImportError('blocked for the test: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import posenc_ref.testing as kit\n"
        "from posenc_ref import RotaryEmbedding, sinusoidal\n"
        "kit.assert_rope_equal(RotaryEmbedding(8), RotaryEmbedding(8), max_position=500)\n"
        "kit.assert_sinusoidal_equal(sinusoidal(16, 8))\n"
        "try:\n"
        "    kit.rotary_embeddings\n"
        "except ImportError as error:\n"
        "    result = str(error)\n"
        "del sys.meta_path[0]",
    ),
    (
        # HF_HUB_CACHE names a cache holding org/model (see shared_record below)
        "inspect a model id",
        "import io, contextlib\n"
        "from posenc_ref.__main__ import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    result = main(['inspect', 'org/model'])",
    ),
    (
        "the kit with NumPy arrays",
        "from posenc_ref import RotaryEmbedding\n"
        "from posenc_ref.testing import assert_rope_equal, qk_fn\n"
        "from tests.test_testing_arrays import numpy_rope\n"
        "assert_rope_equal(qk_fn(numpy_rope, arrays='numpy'), RotaryEmbedding(32, layout='half'))",
    ),
)

_RUNNER = """
import json, sys, traceback
record, scope = {}, {"sys": sys}
for name, code in json.loads(sys.argv[1]):
    try:
        exec(compile(code, name, "exec"), scope)
    except BaseException:
        record[name] = {"error": traceback.format_exc()}
        break
    record[name] = {"modules": sorted(sys.modules), "result": scope.pop("result", None)}
print(json.dumps(record))
"""


def run_steps(cache: Path) -> dict:
    """Run :data:`STEPS` in one fresh interpreter; ``{step: {"modules", "result"} or {"error"}}``.

    ``cache`` is the Hugging Face cache the command line step reads (``HF_HUB_CACHE``). The
    environment is otherwise empty, so that no ``HF_*`` variable of the caller steers it.
    """
    env = {
        "HF_HUB_CACHE": str(cache),
        "PATH": "",
        "PYTHONPATH": ":".join(sys.path),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
    }
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER, json.dumps(STEPS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        return {"": {"error": f"the interpreter exited with {done.returncode}: {done.stderr}"}}
    return json.loads(done.stdout.strip().splitlines()[-1])


def shared_record(tmp_path_factory) -> dict:
    """:func:`run_steps`' record, run once per pytest run: the first worker to ask runs it.

    Under pytest-xdist each worker has a session of its own; they share the run's base
    temporary folder (new for each run), where the first writes the record for the others.
    """
    from tests.configs import LLAMA31
    from tests.site.shared_build import locked

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = tmp_path_factory.getbasetemp()
    root = root.parent if worker else root
    path = root / "fresh_interpreter.json"
    with locked(path.with_suffix(".lock")):
        if not path.exists():
            # the hub cache layout (tests/test_cli.py's fake_cache): org/model, Llama 3.1
            repo = root / "fresh_interpreter_cache" / "models--org--model"
            (repo / "snapshots" / "0123abcd").mkdir(parents=True, exist_ok=True)
            (repo / "snapshots" / "0123abcd" / "config.json").write_text(json.dumps(LLAMA31))
            (repo / "refs").mkdir(exist_ok=True)
            (repo / "refs" / "main").write_text("0123abcd\n")
            path.write_text(json.dumps(run_steps(repo.parent)))
    return json.loads(path.read_text())


def step_record(record: dict, step: str) -> dict:
    """The record of ``step``, or the failure of the fresh interpreter (raised) if it stopped."""
    if step in record and "error" not in record[step]:
        return record[step]
    stopped = [f"{name or 'start'}: {entry['error']}" for name, entry in record.items()
               if "error" in entry]  # fmt: skip
    stopped = "\n".join(stopped)
    raise AssertionError(f"the fresh interpreter stopped before the end of {step!r}:\n{stopped}")


def modules_after(record: dict, step: str) -> set[str]:
    """The names in ``sys.modules`` once the fresh interpreter has taken ``step``.

    (And the steps before it.) Raises the interpreter's failure if it stopped before.
    """
    return set(step_record(record, step)["modules"])
