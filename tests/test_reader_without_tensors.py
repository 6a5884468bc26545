"""The config reader runs on the standard library alone: no torch, no NumPy.

``posenc_ref``, ``posenc_ref.models``, ``posenc_ref.encodings`` and ``inspect``'s text and
``--json`` import neither (issue 42): the frequencies come from the formulas on Python floats
(:mod:`posenc_ref.values`, :mod:`posenc_ref.rope_scaling_functions`), and the tensors the rest
of the package returns are built from those same floats. Proven here on every file of the corpus
(``../shared/real_configs/``; skipped where it is absent): one interpreter that cannot import
torch or NumPy, one that has imported torch, the same words and numbers from both.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from posenc_ref import values
from posenc_ref.axial import SCHEMES, axial_inv_freq, axial_pair_axes
from posenc_ref.relative import t5_relative_bucket

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "real_configs"
FILES = sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else []
TENSOR_LIBRARIES = ("torch", "numpy")

# A finder first on sys.meta_path that refuses the named top-level packages: for the code that
# follows, they are not installed. transformers is refused in both runs: it cannot be imported
# without torch, and the reader names its version in one refusal (an unknown model_type).
BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked for the test)")
sys.meta_path.insert(0, Block())
"""

READ = """
import contextlib, io, json, sys
from posenc_ref.__main__ import main
out = {}
for path in sys.argv[1:]:
    for flags in ([], ["--json"]):
        text, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(text), contextlib.redirect_stderr(errors):
            code = main(["inspect", path, *flags])
        out[" ".join([path, *flags])] = [code, text.getvalue(), errors.getvalue()]
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"torch", "numpy"})
print(json.dumps({"readings": out, "loaded": loaded}))
"""


def _run(blocked: tuple[str, ...], before: str, paths: list[str]) -> dict:
    code = f"BLOCKED = {blocked!r}\n" + BLOCK + before + READ
    done = subprocess.run(
        [sys.executable, "-c", code, *paths], capture_output=True, text=True, cwd=ROOT,
        check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not FILES, reason="the corpus ../shared/real_configs/ is absent")
def test_every_corpus_reading_is_the_same_without_torch():
    """The text and --json of inspect, each file: equal with torch hidden and with torch loaded."""
    paths = [str(p) for p in FILES]
    hidden = _run((*TENSOR_LIBRARIES, "transformers"), "", paths)
    loaded = _run(("transformers",), "import torch, numpy\n", paths)
    assert hidden["loaded"] == [] and loaded["loaded"] == ["numpy", "torch"]
    assert hidden["readings"].keys() == loaded["readings"].keys()
    differ = [k for k, v in hidden["readings"].items() if loaded["readings"][k] != v]
    assert not differ, f"{len(differ)} readings differ, the first: {differ[0]}"
    codes = [v[0] for v in hidden["readings"].values()]
    assert codes.count(0) > len(codes) // 2  # most files are read, not refused


def test_the_package_and_the_reader_import_no_tensor_library():
    """Importing posenc_ref, its reader, the command line: sys.modules has no torch, no NumPy."""
    code = (
        "import sys\n"
        "import posenc_ref, posenc_ref.models, posenc_ref.encodings, posenc_ref.cli\n"
        "import posenc_ref.__main__\n"
        "from posenc_ref.models import rope_spec\n"
        "from posenc_ref.encodings import positional_encoding\n"
        "spec = rope_spec({'model_type': 'llama', 'head_dim': 8, 'rope_scaling': {\n"
        "    'rope_type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 64}})\n"
        "assert len(spec.values(1000).inv_freq) == 4\n"
        "positional_encoding({'model_type': 'bloom', 'n_head': 8})\n"
        "positional_encoding({'model_type': 't5', 'num_heads': 8})\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'numpy'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_spec_values_are_its_tensors():
    """The floats the reader keeps are the tensors' values, inside and past the context."""
    from posenc_ref.models import rope_spec

    configs = [
        {"model_type": "llama", "head_dim": 16, "rope_scaling": {"rope_type": t, **p}}
        for t, p in [
            ("linear", {"factor": 2.0}),
            ("dynamic", {"factor": 2.0}),
            ("yarn", {"factor": 4.0, "original_max_position_embeddings": 512}),
            ("llama3", {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 512}),
        ]
    ]  # fmt: skip
    configs.append({
        "model_type": "phi3", "head_dim": 8, "max_position_embeddings": 64,
        "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0, 2.0, 2.0],
                         "long_factor": [1.0, 2.0, 4.0, 8.0],
                         "original_max_position_embeddings": 16},
    })  # fmt: skip
    for config in configs:
        spec = rope_spec({"max_position_embeddings": 2048, **config})
        assert spec.inv_freq.tolist() == list(spec.inv_freq_values)
        for seq_len in (0, 20, 10_000):
            floats, tensors = spec.values(seq_len), spec.frequencies(seq_len)
            assert floats.inv_freq == tensors.inv_freq.tolist()
            assert floats.attention_factor == tensors.attention_factor


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_the_axial_rules_are_the_schemes(scheme):
    """posenc_ref.values.AXIAL_RULES (floats) and posenc_ref.axial.SCHEMES (tensors) agree."""
    rule, entry = values.AXIAL_RULES[scheme], SCHEMES[scheme]
    assert rule.layout == entry.layout
    for dim, base in [(8, 100.0), (64, 10000.0), (80, 10000.0)]:
        assert axial_inv_freq(dim, base, scheme).tolist() == values.axial_inv_freq_values(
            dim, base, scheme
        )
        assert entry.frequencies(dim, base).tolist() == values.axial_inv_freq_values(
            dim, base, scheme
        )
        assert axial_pair_axes(dim, scheme).tolist() == values.axial_pair_axes_values(dim, scheme)
    assert set(values.AXIAL_RULES) == set(SCHEMES)


@pytest.mark.parametrize(
    ("num_buckets", "max_distance"), [(32, 128), (8, 20), (64, 256), (128, 1024), (12, 100)]
)
@pytest.mark.parametrize("bidirectional", [True, False])
def test_the_scalar_t5_bucket_is_the_tensor_one(num_buckets, max_distance, bidirectional):
    """posenc_ref.values.t5_bucket (inspect's words) equals t5_relative_bucket at every distance.

    The float32 steps of T5's code taken one by one; a sweep of 13 bucket counts and 17
    distances (1.5 million distances) found no difference while it was written.
    """
    relative = torch.arange(-3 * max_distance, 3 * max_distance + 1)
    expected = t5_relative_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    ).tolist()
    got = [
        values.t5_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                         max_distance=max_distance)
        for r in relative.tolist()
    ]  # fmt: skip
    assert got == expected


def test_the_package_root_names_resolve_where_the_static_imports_say():
    """posenc_ref.__all__, its lazy table and the imports type checkers read name the same."""
    import ast

    import posenc_ref

    tree = ast.parse(Path(posenc_ref.__file__).read_text(encoding="utf-8"))
    guarded = next(n for n in tree.body if isinstance(n, ast.If))  # if TYPE_CHECKING:
    static = {a.name: n.module for n in guarded.body for a in n.names}
    assert static == posenc_ref._SOURCES
    assert sorted(static) == sorted(posenc_ref.__all__)
    for name, module in static.items():
        assert getattr(posenc_ref, name) is getattr(
            __import__(f"posenc_ref.{module}", fromlist=[name]), name
        )


def test_transformers_model_types_are_read_without_importing_it():
    """The refusal of an unknown model_type names transformers' types: read from its files."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from posenc_ref.models.families import _transformers_types_from_files, installed_transformers

    assert _transformers_types_from_files() == set(CONFIG_MAPPING_NAMES)
    assert installed_transformers() == (transformers.__version__, set(CONFIG_MAPPING_NAMES))
