"""One entry per scaling method: everything else follows it, or a test here says where it differs.

A context-extension method is its function (``@tensor_method``, in
``posenc_ref/rope_scaling_functions.py``), its row of :data:`posenc_ref.rope_scaling.METHODS` and
its property test. The kit's strategy and a ``rope_scaling`` type whose keys are the method's
(``method_type``) follow from the row, and the explorer asks the types; the re-exports of
``posenc_ref.rope_scaling`` and the JSON schema's enum are written out, checked against it here.
The first test adds a toy method the way a maintainer would, and reads a config that uses it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from posenc_ref import rope_scaling
from posenc_ref.cli import json_schema
from posenc_ref.models import ROPE_TYPES, rope_spec
from posenc_ref.models.rope_types import method_type
from posenc_ref.rope_scaling import METHODS, Method, ScaledValues, Scaling
from posenc_ref.rope_scaling_functions import tensor_method
from posenc_ref.values import inv_freq_values

ROOT = Path(__file__).resolve().parents[1]


@tensor_method
def halved(dim: int, base: float = 10000.0, *, factor: float) -> ScaledValues:
    """A toy method for this test: the slower half of the pairs divided by ``factor``."""
    omega = inv_freq_values(dim, base)
    return ScaledValues([w / factor if i >= dim // 4 else w for i, w in enumerate(omega)], 1.0)


def test_a_new_method_is_a_function_a_row_and_a_type(monkeypatch, capsys):
    """The toy method: its row, then its rope_type entry; a config using it is read, inspected."""
    monkeypatch.setitem(METHODS, "halved", Method(halved, False, ("factor",)))
    monkeypatch.setitem(ROPE_TYPES, "halved", method_type("halved"))
    config = {"model_type": "llama", "head_dim": 8, "max_position_embeddings": 4096,
              "rope_scaling": {"rope_type": "halved", "factor": 4.0}}  # fmt: skip
    spec = rope_spec(config)
    assert spec.scaling == Scaling("halved", {"factor": 4.0}) and spec.factor == 4.0
    assert list(spec.inv_freq_values) == [1.0, 0.1, 0.01 / 4, 0.001 / 4]
    torch.testing.assert_close(spec.inv_freq, halved(8, factor=4.0).inv_freq, rtol=0, atol=0)
    from posenc_ref.__main__ import main

    path = Path(__file__).parent / "data" / "_halved.json"
    try:
        path.write_text(json.dumps(config))
        assert main(["inspect", str(path)]) == 0
    finally:
        path.unlink(missing_ok=True)
    assert "x 0.25" in capsys.readouterr().out  # the scaled pairs, against base^(-2i/d)
    with pytest.raises(ValueError, match="'unknown'"):
        rope_spec({**config, "rope_scaling": {"rope_type": "halved", "factor": 4.0, "unknown": 1}})


def test_the_json_schema_names_every_method():
    """cli/schema.json's enum of scaling methods is METHODS' keys (inspect --json validates)."""
    scaling = json_schema()["$defs"]["scaling"]["properties"]["method"]
    assert scaling["enum"] == list(METHODS)


def test_the_explorer_draws_each_type_with_its_entrys_method():
    """hooks/explorer_data.py asks ROPE_TYPES: each type's method, a key of METHODS or none."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("explorer_data", ROOT / "hooks/explorer_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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
