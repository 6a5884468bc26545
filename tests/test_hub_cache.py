"""The Hugging Face cache is found where huggingface_hub finds it, in each of its five places.

The command-line page lists them (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``, ``HF_HOME/hub``,
``XDG_CACHE_HOME/huggingface/hub``, ``~/.cache/huggingface/hub``); each case sets the variables
that reach one place and compares ``posenc_ref._hub_cache.hub_cache()`` with huggingface_hub's
own ``constants.HF_HUB_CACHE``, computed in one child process (reloading huggingface_hub's
constants would change them for every other test of this process).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CASES = {  # which variables are set, and so which place wins
    "HF_HUB_CACHE": {"HF_HUB_CACHE": "/a/hub", "HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c"},
    "HUGGINGFACE_HUB_CACHE": {"HUGGINGFACE_HUB_CACHE": "/b/hub", "HF_HOME": "/c"},
    "HF_HOME": {"HF_HOME": "/c", "XDG_CACHE_HOME": "/d"},
    "XDG_CACHE_HOME": {"XDG_CACHE_HOME": "/d"},
    "home": {},
}

CHILD = """
import importlib, json, os, sys
from huggingface_hub import constants
from posenc_ref._hub_cache import hub_cache
names = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME")
out = {}
for case, env in json.loads(sys.argv[1]).items():
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(env)
    importlib.reload(constants)
    out[case] = [constants.HF_HUB_CACHE, str(hub_cache())]
import posenc_ref
print(json.dumps(out))
print(posenc_ref.__file__)
"""


def test_the_five_places_are_huggingface_hubs():
    pytest.importorskip("huggingface_hub")
    root = str(Path(__file__).resolve().parents[1])  # this tree's posenc_ref, not an installed one
    env = {k: v for k, v in os.environ.items() if "CACHE" not in k and k != "HF_HOME"}
    env.update(HOME="/u/someone", PYTHONPATH=os.pathsep.join([root, env.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(CASES)],
        capture_output=True, text=True, check=True, env=env, cwd=root,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[1].startswith(root), lines[1]  # the child imported this tree
    found = json.loads(lines[0])
    for case, (theirs, ours) in found.items():
        assert ours == theirs, case
    assert [found[c][0] for c in CASES] == [
        "/a/hub", "/b/hub", "/c/hub", "/d/huggingface/hub",
        "/u/someone/.cache/huggingface/hub",
    ]  # fmt: skip
