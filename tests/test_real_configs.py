"""Every released config of ``../shared/real_configs/``, against its family's own code.

Each file is read as people download it. transformers builds its config object and its text
model, tiny and random, with every RoPE value as released; ``RotaryEmbedding.from_hf_config``
reads the dict and, separately, the config object, and must rotate the model's queries and keys
as its code does, within the float32-angle bound, at positions inside the original context, at
its edge and up to four times past it, in every layer; ``python -m posenc_ref inspect FILE``
must exit 0 and name every layer type (``tests/corpus``).

Files that do not pass today are expected failures (strict: a fix shows up as a failure until
``python -m tests.corpus --write`` records it), each with its committed reason from
``tests/data/real_configs_status.json``. A file whose outcome changes in any other way fails.

A file the table does not record (the folder grows with files nobody here chose) is held to what
holds for every file, with no outcome written down for it: posenc_ref never reads it wrong (it
agrees with the family's code, or refuses in words, or transformers cannot build it), ``inspect``
never ends in a traceback, and where it agrees it names every layer type.
The folder is data taken from public repositories: it stays beside the checkout, in
``../shared``, and the tests skip where it is absent.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus import build, check, status

pytestmark = pytest.mark.peers

FILES = build.files()
ABSENT = f"the released configs are not beside the checkout ({build.FOLDER} is absent)"
STATUS = status.load() if os.path.exists(status.FILE) else {"files": {}}


# A remote-code file read by a row proven in tests/test_remote_families.py passes too.
PASSING = ("agrees", check.REMOTE)


class KnownFailure(Exception):
    """The file fails exactly as the status table says (the expected failure)."""


GENERIC = {"config", "pytorch", "src", "tokenizer"}  # path parts that name no model


def _id(path: Path) -> str:
    parts = [p for p in path.name.removesuffix(".json").split("__") if p not in GENERIC]
    return parts[-1].removesuffix("_config")


def _params() -> list:
    if not FILES:
        return [pytest.param(None, marks=pytest.mark.skip(reason=ABSENT), id="absent")]
    seen: dict[str, int] = {}
    out = []
    for path in FILES:
        name = _id(path)
        seen[name] = seen.get(name, 0) + 1
        name = name if seen[name] == 1 else f"{name}-{seen[name]}"
        row = STATUS["files"].get(path.name)
        marks = []
        if row is not None and (row["verdict"] not in PASSING or row["failed"]):
            reason = f"{row['verdict']}: {row['reason']}"
            marks.append(pytest.mark.xfail(strict=True, raises=KnownFailure, reason=reason))
        out.append(pytest.param(path, marks=marks, id=name))
    return out


@pytest.fixture(scope="module")
def quiet():
    """Quiet transformers, one thread (tiny matrices), as in the sweep."""
    transformers = pytest.importorskip("transformers")
    import torch

    transformers.logging.set_verbosity_error()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("path", _params())
def test_released_config(path, quiet):
    """The file agrees (dict and config object, every layer, inside and 4x past the context)."""
    record = check.check_file(path)
    row = STATUS["files"].get(path.name)
    if row is None:
        _holds_for_any_file(record)
        return
    got = {"verdict": record["verdict"], "failed": record["failed"]}
    committed = {"verdict": row["verdict"], "failed": row["failed"]}
    assert got == committed, (
        f"the outcome changed (python -m tests.corpus --write records it): "
        f"{json.dumps(record, indent=1, default=str)[:3000]}"
    )
    if record["verdict"] not in PASSING or record["failed"]:
        raise KnownFailure(record["reason"])
    if record.get("ratio") is not None:
        assert record["ratio"] <= 1.0


# What no file may do, recorded or not: "refused" and "transformers cannot build it" are honest.
NEVER = ("wrong",)


def _holds_for_any_file(record: dict) -> None:
    """A file nobody recorded: never wrong, never a traceback, every layer type named."""
    shown = json.dumps(record, indent=1, default=str)[:3000]
    assert record["verdict"] in status.VERDICTS, shown
    assert record["verdict"] not in NEVER, shown
    assert "Traceback" not in str(record.get("reason")), shown
    if record["verdict"] in PASSING:
        assert "layer_types" not in record["failed"], shown
        assert record.get("ratio") is None or record["ratio"] <= 1.0, shown


@pytest.mark.skipif(not FILES, reason=ABSENT)
def test_the_status_table_counts_its_rows():
    """The table's counts are its rows' (files it does not record are checked all the same)."""
    counts = STATUS["counts"]
    assert counts["files"] == len(STATUS["files"]) == sum(counts[v] for v in status.VERDICTS)


def test_a_file_nobody_recorded_is_held_to_the_invariant():
    """The check for unrecorded files fails on a wrong reading and passes on a refusal."""
    refused = {"verdict": "refused", "failed": ["dict"], "reason": "dict: no head_dim"}
    _holds_for_any_file(refused)
    with pytest.raises(AssertionError):
        _holds_for_any_file({"verdict": "wrong", "failed": ["dict"], "reason": "ratio 30"})
    with pytest.raises(AssertionError):
        _holds_for_any_file({"verdict": "agrees", "failed": ["layer_types"], "reason": None})
    with pytest.raises(AssertionError):
        _holds_for_any_file({"verdict": "refused", "failed": ["inspect"], "reason": "Traceback"})


@pytest.mark.skipif(not FILES, reason=ABSENT)
def test_a_wrong_reading_is_caught(quiet):
    """The check can fail: the same file with another base is wrong, in every layer."""
    from tests.hf_sweep import sweep

    path = next(p for p in FILES if "Llama-2-7b-hf" in p.name)
    raw = build.load(path)
    case = check.run_model(build.resolve(raw))
    assert max(sweep.agreement(case, raw)["ratio"].values()) <= 1.0
    other = dict(raw, rope_theta=raw["rope_theta"] * 1.01)
    assert min(sweep.agreement(case, other)["ratio"].values()) > 10


@pytest.mark.skipif(not FILES, reason=ABSENT)
def test_inspect_on_the_command_line():
    """``python -m posenc_ref inspect FILE`` itself (the test above calls its ``main``)."""
    path = next(p for p in FILES if "Meta-Llama-3.1-8B_config" in p.name)
    done = subprocess.run(
        [sys.executable, "-m", "posenc_ref", "inspect", str(path)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "rope_type 'llama3', base 500000" in done.stdout


@pytest.mark.skipif(not FILES, reason=ABSENT)
def test_every_file_reads_the_same_with_and_without_transformers():
    """``inspect`` (text and --json) on every file: transformers imported, and transformers hidden.

    The reader takes a class's defaults, a wrapper's language model and an architecture's family
    from the committed ``class_data.json``, never from the installed transformers: both give the
    same words and numbers.
    """
    import contextlib
    import io

    pytest.importorskip("transformers")
    from posenc_ref.__main__ import main
    from tests.test_reader_without_tensors import _run

    paths = [str(p) for p in FILES]
    hidden = _run(("transformers",), "", paths)["readings"]
    here = {}
    for path in paths:
        for flags in ([], ["--json"]):
            text, errors = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(errors):
                code = main(["inspect", path, *flags])
            here[" ".join([path, *flags])] = [code, text.getvalue(), errors.getvalue()]
    assert "transformers" in sys.modules
    differ = [k for k, v in hidden.items() if here[k] != v]
    assert not differ, f"{len(differ)} readings differ, the first: {differ[0]}"
    assert sum(v[0] == 0 for v in here.values()) > 0.9 * len(here)
