"""The files the config reader's tests give it beside the released corpus, and CPython's answers.

The "Read your config" page (docs/read_config.md) runs ``posenc-ref inspect`` under Pyodide;
its tests compare what it says with what the command line says under CPython, on the corpus
(``../shared/real_configs``) and on these, which need no corpus: a config to read, a vision
tower's config alone, two to refuse, and the shapes of trouble a person can bring (text that is
not JSON, a JSON list, a 50 MB file, a file past the command line's size limit, JSON nested
100,000 levels deep). Used by tests/site/test_read_config_pyodide.py (Node) and
tests/site/test_read_config.py (Chromium).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import posenc_ref.__main__ as cli

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "real_configs"
CORPUS_ABSENT = f"the released configs are not beside the checkout ({CORPUS} is absent)"

LLAMA = {
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
}
# Refused by the RoPE reader itself, in words that do not depend on what else is installed.
REFUSED = {**LLAMA, "rope_scaling": None, "rope_theta": -5}

# A vision tower's config alone: the command line reads its axial RoPE (kind "axial").
VISION = {
    "model_type": "qwen2_vl_vision",
    "embed_dim": 1280,
    "num_heads": 16,
    "spatial_merge_size": 2,
}

# A layer type with no entry in its per-layer-type RoPE dict (transformers raises KeyError)
MISSING_ENTRY = {"model_type": "gemma3_text", "num_hidden_layers": 2,
                 "layer_types": ["full_attention", "chunked_attention"]}  # fmt: skip

GOOD = {"llama.json": LLAMA, "vision_tower.json": VISION}
REFUSED_FILES = {"refused.json": REFUSED, "missing_entry.json": MISSING_ENTRY}
# The words each refusal must contain
REFUSED_WORDS = {
    "refused.json": "rope_theta must be > 0",
    "missing_entry.json": "'chunked_attention' (layers 1), which has no entry",
}
NOT_JSON = "not_json.json"
A_LIST = "a_list.json"
BIG = "big_50mb.json"
TOO_BIG = "too_big.json"
DEEP = "deep_100000.json"
BAD_FILES = (NOT_JSON, A_LIST, BIG, TOO_BIG, DEEP)


def write_cases(folder: Path) -> dict[str, Path]:
    """Write every case into ``folder``; name -> path, good and refused first, then the bad."""
    out = {}
    for name, config in {**GOOD, **REFUSED_FILES}.items():
        out[name] = folder / name
        out[name].write_text(json.dumps(config, indent=2), encoding="utf-8")
    contents = {
        NOT_JSON: b'{"model_type": "llama", "hidden_size": 4096,,}\n',
        A_LIST: b'[{"model_type": "llama"}]\n',
        # 50 MB of a config whose one string never ends: read whole, refused at its end
        BIG: b'{"model_type": "llama", "notes": "' + b"x" * 50_000_000,
        DEEP: b"[" * 100_000 + b"]" * 100_000,
    }
    for name, data in contents.items():
        out[name] = folder / name
        out[name].write_bytes(data)
    out[TOO_BIG] = folder / TOO_BIG  # past the command line's limit: refused by its size
    with out[TOO_BIG].open("wb") as f:
        f.truncate(cli.MAX_BYTES + 1024)  # a sparse file of zeros: nothing to write
    return out


def corpus_files() -> list[Path]:
    """The released configs, sorted by name (empty where the folder is absent)."""
    return sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []


def one_per_family(files: list[Path]) -> list[Path]:
    """The first file of each ``model_type`` (a file without one counts as its own family)."""
    seen: dict[object, Path] = {}
    for path in files:
        try:
            family = json.loads(path.read_text(encoding="utf-8")).get("model_type")
        except (ValueError, AttributeError):
            family = path.name
        seen.setdefault(family, path)
    return list(seen.values())


def _run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 2
    return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}


@contextlib.contextmanager
def without_transformers():
    """Hide transformers (it can be neither imported nor found), as in the browser.

    The reader needs none of it; only its refusal of a ``model_type`` it has no row for names the
    installed transformers and whether that defines the type. The page's Python has no
    transformers, so its words are those of a command line installed with posenc_ref's own
    dependencies, and that is the command line it is compared with.
    """
    saved = sys.modules.get("transformers", _ABSENT)
    sys.modules["transformers"] = None  # import raises ImportError, find_spec returns None
    try:
        yield
    finally:
        if saved is _ABSENT:
            del sys.modules["transformers"]
        else:
            sys.modules["transformers"] = saved


_ABSENT = object()


def cpython_answer(path: Path, flags: tuple[str, ...] = ()) -> dict:
    """What ``posenc-ref inspect [--json] NAME`` gives in ``path``'s folder, as the page runs it.

    The same runs as the page's worker (read_config_worker.js): ``--json`` first, the text only
    where that succeeded, the file named by its base name in the current folder, and no
    transformers (:func:`without_transformers`).
    """
    with contextlib.chdir(path.parent), without_transformers():
        answer = {"json": _run(["inspect", "--json", *flags, path.name])}
        if answer["json"]["status"] == 0:
            answer["text"] = _run(["inspect", *flags, path.name])
    return answer


def differences(name: str, theirs: dict, ours: dict) -> list[str]:
    """Where the Pyodide answer ``theirs`` differs from CPython's ``ours``, in words."""
    problems = []
    for run in ("json", "text"):
        a, b = theirs.get(run), ours.get(run)
        if a == b:
            continue
        if a is None or b is None:
            problems.append(f"{name}: {run} run {'missing' if a is None else 'unexpected'}")
            continue
        for key in ("status", "stdout", "stderr"):
            if a[key] != b[key]:
                at = next(
                    (i for i, (x, y) in enumerate(zip(a[key], b[key], strict=False)) if x != y),
                    None,
                )
                at = min(len(a[key]), len(b[key])) if at is None else at
                problems.append(
                    f"{name}: {run} {key} differs at {at}: "
                    f"{str(a[key])[max(0, at - 60) : at + 60]!r} (Pyodide) != "
                    f"{str(b[key])[max(0, at - 60) : at + 60]!r} (CPython)"
                )
    return problems
