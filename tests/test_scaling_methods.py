"""One entry per scaling method: everything else is read from it.

A context-extension method is its function (``@tensor_method``, in
``posenc_ref/rope_scaling_functions.py``), its row of :data:`posenc_ref.rope_scaling.METHODS` and
its property test. From the row come the keys it takes and whether it depends on the length (the
function's keyword-only parameters), its name in ``posenc_ref.rope_scaling`` (import and
``__all__``), the command line's JSON schema, the ``rope_scaling`` types read as the method
(``ROPE_TYPES``, for the HF names the row gives), the explorer's map and the kit's strategy. The
first test adds a toy method exactly so, and reads and inspects a config that uses it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc_ref import rope_scaling
from posenc_ref.cli import json_schema
from posenc_ref.models import ROPE_TYPES, rope_spec
from posenc_ref.rope_scaling import METHODS, Method, ScaledValues, Scaling
from posenc_ref.rope_scaling_functions import tensor_method
from posenc_ref.values import inv_freq_values

jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema")
ROOT = Path(__file__).resolve().parents[1]


@cache
def explorer_data():
    """The site's hook that writes the explorer's data (hooks/explorer_data.py)."""
    spec = importlib.util.spec_from_file_location("explorer_data", ROOT / "hooks/explorer_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the toy method: what a maintainer writes (its function and its row) ----------------------


@tensor_method
def halved(dim: int, base: float = 10000.0, *, factor: float) -> ScaledValues:
    """A toy method for this test: the slower half of the pairs divided by ``factor``."""
    omega = inv_freq_values(dim, base)
    return ScaledValues([w / factor if i >= dim // 4 else w for i, w in enumerate(omega)], 1.0)


HALVED = Method(halved, rope_types=("halved",))  # its row, as METHODS would hold it


@pytest.fixture
def with_halved(monkeypatch):
    """The row added to METHODS, for one test (a maintainer writes it in the table)."""
    monkeypatch.setitem(METHODS, "halved", HALVED)


def test_a_new_method_is_its_function_and_its_row(with_halved):
    """The toy's row, added at run time: exported, named by the schema and the kit's table.

    What is made when the package is imported (``__all__``, the ``rope_type`` entry a row's
    ``rope_types`` derives) is checked on the maintainer's diff, below, in a copy of the package.
    """
    assert (HALVED.keys, HALVED.length_dependent) == (("factor",), False)
    from posenc_ref.rope_scaling import halved as exported  # the re-export, from the row

    assert exported is halved and "halved" in dir(rope_scaling)
    assert rope_scaling.SCALING_METHODS["halved"] is halved
    assert json_schema()["$defs"]["scaling"]["properties"]["method"]["enum"][-1] == "halved"
    assert Scaling("halved", {"factor": 4.0}).values(8, 10000.0).inv_freq == [
        1.0, 0.1, 0.01 / 4, 0.001 / 4]  # fmt: skip
    torch.testing.assert_close(
        Scaling("halved", {"factor": 4.0}).frequencies(8, 10000.0).inv_freq,
        halved(8, factor=4.0).inv_freq, rtol=0, atol=0,
    )  # fmt: skip
    with pytest.raises(ValueError, match="not accepted by method 'halved'"):
        Scaling("halved", {"factor": 4.0, "original_max_len": 64})


@given(dim=st.integers(2, 64).map(lambda n: 2 * n), factor=st.floats(1.0, 1e3))
def test_halved_keeps_the_fast_half_and_interpolates_the_slow_half(dim, factor):
    """The toy's property test (the third thing a maintainer writes): its two halves."""
    plain, scaled = inv_freq_values(dim, 10000.0), halved.values(dim, factor=factor).inv_freq
    assert scaled[: dim // 4] == plain[: dim // 4]
    assert scaled[dim // 4 :] == [w / factor for w in plain[dim // 4 :]]


def test_without_its_row_the_toy_is_nowhere():
    """The same names, without the row: not exported, not in the schema, not a rope_type."""
    assert "halved" not in METHODS and "halved" not in rope_scaling.__all__
    with pytest.raises(AttributeError, match="halved"):
        rope_scaling.halved  # noqa: B018
    assert "halved" not in json_schema()["$defs"]["scaling"]["properties"]["method"]["enum"]
    assert "halved" not in ROPE_TYPES
    with pytest.raises(ValueError, match="unknown rope_type 'halved'"):
        rope_spec({"model_type": "llama", "head_dim": 8,
                   "rope_scaling": {"rope_type": "halved", "factor": 4.0}})  # fmt: skip


# --- the package's own rows ---------------------------------------------------------------------


def test_the_json_schema_names_every_method():
    """The enum of scaling methods in the schema inspect --json follows is METHODS' keys."""
    scaling = json_schema()["$defs"]["scaling"]["properties"]["method"]
    assert scaling["enum"] == list(METHODS)


def test_the_explorer_draws_each_type_with_its_entrys_method():
    """hooks/explorer_data.py asks ROPE_TYPES: each type's method, a key of METHODS or none."""
    module = explorer_data()
    assert module.method_of("default") == "none" and module.method_of("dynamic") == "dynamic_ntk"
    assert module.method_of("proportional") is None and module.method_of("unknown") is None
    for rope_type, kind in ROPE_TYPES.items():
        assert module.method_of(rope_type) in {*METHODS, "none", None}, rope_type
        assert module.method_of(rope_type) == ("none" if rope_type == "default" else kind.transform)


def test_rope_scaling_re_exports_every_method():
    """Each row's function is importable from posenc_ref.rope_scaling under its own name."""
    for name, method in METHODS.items():
        assert method.function.__name__ == name
        assert getattr(rope_scaling, name) is method.function and name in rope_scaling.__all__
        assert callable(method.function.values)  # the formula on floats, for the reader
    assert sorted(rope_scaling.__all__) == sorted(set(rope_scaling.__all__))
    assert set(rope_scaling.__all__) <= set(dir(rope_scaling))
    namespace: dict = {}
    exec("from posenc_ref.rope_scaling import *", namespace)  # noqa: S102
    assert set(namespace) - {"__builtins__"} == set(rope_scaling.__all__)


def test_hf_linear_is_the_method_read_with_its_own_keys():
    """HF ``linear`` is derived from its row (factor required, a positive float, the spec's)."""
    assert METHODS["linear"].rope_types == ("linear",)
    kind = ROPE_TYPES["linear"]
    assert (kind.keys, kind.transform) == (frozenset({"factor"}), "linear")
    config = {"model_type": "llama", "head_dim": 8, "max_position_embeddings": 4096,
              "original_max_position_embeddings": 1024,
              "rope_scaling": {"rope_type": "linear", "factor": 2}}  # fmt: skip
    spec = rope_spec(config)
    assert spec.scaling.params == {"factor": 2.0} and type(spec.scaling["factor"]) is float
    assert (spec.factor, spec.original_max_len) == (2.0, 1024)
    assert list(spec.inv_freq_values) == [w / 2 for w in inv_freq_values(8, 10000.0)]
    for rope, words in [({}, "rope_type 'linear' needs the key 'factor'"),
                        ({"factor": "2"}, "factor must be a finite real number"),
                        ({"factor": 0.5}, "factor must be >= 1.0")]:  # fmt: skip
        with pytest.raises((TypeError, ValueError), match=words):
            rope_spec({**config, "rope_scaling": {"rope_type": "linear", **rope}})


def test_a_written_entry_and_a_row_never_claim_the_same_rope_type():
    """A type a row names is derived (not also written by hand); a written one names a method."""
    named = [hf for row in METHODS.values() for hf in row.rope_types]
    assert len(named) == len(set(named))
    for rope_type, kind in ROPE_TYPES.items():
        derived = kind.read.__qualname__.startswith("method_type.")
        assert derived == (rope_type in named), rope_type
        assert kind.transform is None or kind.transform in METHODS, rope_type


def test_zero_as_not_set_is_the_type_entrys_rule(monkeypatch):
    """YaRN's entry says 0 means "not set"; the steps ask it: without the rule, 0 is refused."""
    import dataclasses

    config = {"model_type": "deepseek_v3", "head_dim": 64, "qk_rope_head_dim": 64,
              "max_position_embeddings": 16384,
              "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 0,
                               "original_max_position_embeddings": 4096, "mscale": 0,
                               "mscale_all_dim": 0}}  # fmt: skip
    plain = {**config, "rope_scaling": {k: v for k, v in config["rope_scaling"].items() if v}}
    zero, absent = rope_spec(config), rope_spec(plain)
    assert zero.scaling == absent.scaling and zero.scaling["beta_fast"] == 32.0
    assert zero.softmax_scale_factor == absent.softmax_scale_factor == 1.0
    yarn = dataclasses.replace(ROPE_TYPES["yarn"], unset_when_zero=frozenset())
    monkeypatch.setitem(ROPE_TYPES, "yarn", yarn)
    with pytest.raises(ValueError, match="(beta_fast|mscale) must be > 0"):
        rope_spec(config)


# --- the maintainer's diff, applied to a copy of the package -------------------------------------

# What a maintainer writes to add a method (besides its property test): the function, appended to
# rope_scaling_functions.py, and the row, in METHODS (rope_scaling.py). Nothing else.
NEW_FUNCTION = '''


@tensor_method
def halved(dim: int, base: float = 10000.0, *, factor: float) -> ScaledFrequencies:
    r"""Halved scaling (a toy): the slower half of the pairs divided by ``factor``.

    .. math::

        \\omega'_i = \\omega_i \\;(i < d/4), \\qquad \\omega'_i = \\omega_i / s \\;\\text{else}
    """
    factor = check_factor("factor", factor)
    omega = inv_freq_values(check_dim("dim", dim), base)
    return ScaledValues([w / factor if i >= dim // 4 else w for i, w in enumerate(omega)], 1.0)
'''
LAST_ROW = '    "longrope": Method(functions.longrope),\n'
NEW_ROW = '    "halved": Method(functions.halved, rope_types=("halved",)),\n'

# Run in the copy: what the package then says about the method, as JSON.
PROBE = """
import importlib.util, json, sys
from posenc_ref import rope_scaling
from posenc_ref.cli import json_schema
from posenc_ref.models import ROPE_TYPES
from posenc_ref.rope_scaling import halved, METHODS

spec = importlib.util.spec_from_file_location("explorer_data", sys.argv[1])  # the site's hook
explorer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(explorer)
print(json.dumps({
    "file": rope_scaling.__file__,
    "all": rope_scaling.__all__,
    "row": [list(METHODS["halved"].keys), METHODS["halved"].length_dependent],
    "function": halved.__module__ + "." + halved.__name__,
    "rope_type": [sorted(ROPE_TYPES["halved"].keys), ROPE_TYPES["halved"].transform],
    "schema": json_schema(),
    "explorer": explorer.method_of("halved"),
}))
"""


@pytest.fixture(scope="module")
def maintainers_copy(tmp_path_factory):
    """A copy of posenc_ref with the toy method added by the diff above, and nothing else."""
    root = tmp_path_factory.mktemp("maintainer")
    package = root / "posenc_ref"
    shutil.copytree(ROOT / "posenc_ref", package, ignore=shutil.ignore_patterns("__pycache__"))
    functions = package / "rope_scaling_functions.py"
    functions.write_text(functions.read_text(encoding="utf-8") + NEW_FUNCTION, encoding="utf-8")
    table = package / "rope_scaling.py"
    text = table.read_text(encoding="utf-8")
    assert text.count(LAST_ROW) == 1
    table.write_text(text.replace(LAST_ROW, LAST_ROW + NEW_ROW), encoding="utf-8")
    return root


def _in_copy(root: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip


def test_the_maintainers_diff_is_all_a_new_method_takes(maintainers_copy):
    """Function and row: exported, in ``__all__`` and the schema, a rope_type, read, inspected."""
    probe = _in_copy(maintainers_copy, "-c", PROBE, str(ROOT / "hooks" / "explorer_data.py"))
    assert probe.returncode == 0, probe.stderr
    facts = json.loads(probe.stdout)
    assert Path(facts["file"]).parent == maintainers_copy / "posenc_ref"
    assert facts["all"][-1] == "halved" and facts["row"] == [["factor"], False]
    assert facts["function"] == "posenc_ref.rope_scaling_functions.halved"
    enum = facts["schema"]["$defs"]["scaling"]["properties"]["method"]["enum"]
    assert enum == [*METHODS, "halved"] and facts["rope_type"] == [["factor"], "halved"]
    assert facts["explorer"] == "halved"  # the explorer's map: the rope_type's method

    config = {"model_type": "llama", "head_dim": 8,
              "rope_scaling": {"rope_type": "halved", "factor": 4.0}}  # fmt: skip
    (maintainers_copy / "config.json").write_text(json.dumps(config))
    text = _in_copy(maintainers_copy, "-m", "posenc_ref", "inspect", "config.json")
    assert text.returncode == 0 and "x 0.25" in text.stdout, text.stderr
    out = _in_copy(maintainers_copy, "-m", "posenc_ref", "inspect", "--json", "config.json")
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    jsonschema.Draft202012Validator(facts["schema"]).validate(document)
    assert '"method": "halved"' in out.stdout


def test_the_api_reference_reads_the_new_method_statically(maintainers_copy):
    """What mkdocstrings reads (griffe, statically): the function, and its name in rope_scaling."""
    griffe = pytest.importorskip("griffe", reason="the docs extra installs griffe")
    package = griffe.load(maintainers_copy / "posenc_ref", resolve_aliases=True,
                          resolve_external=False)  # fmt: skip
    assert Path(package.filepath).parent == maintainers_copy / "posenc_ref"
    function = package["rope_scaling_functions"]["halved"]
    assert function.is_function and function.is_public and "toy" in function.docstring.value
    exported = package["rope_scaling"]["halved"]  # [halved][posenc_ref.rope_scaling.halved]
    assert exported.is_alias and exported.target_path == function.path
    assert "posenc_ref.rope_scaling.halved" in function.aliases
    for name in METHODS:  # and every method of the package the same way
        target = package["rope_scaling"][name].target_path
        assert target == f"posenc_ref.rope_scaling_functions.{name}"
