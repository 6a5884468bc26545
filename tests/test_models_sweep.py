"""Every transformers family with a rotary class, proven from its own code (skipped without it).

The sweep (``tests/hf_sweep``) builds each text family's model from its own config class, tiny
and random, runs it, and records the query and key states its code hands to attention, before and
after its RoPE. ``RotaryEmbedding.from_hf_config`` on the same config must rotate the same states
to the same result within HF's float32-angle bound, with every pair layout check backed by the
other layout failing. The results file behind the site's model zoo table must be what the run
computes. The harness itself is checked first, on rotations it did not compute.

The families run in ``results.parts`` (a few parts of about equal cost, fixed by the truth
file): each part's families must give the committed rows and truth, so that the parts can run
on different workers (a unit of the suite's scheduler per part id). The enumeration (which
families there are) is run once, and must give the committed files' lists and counts from the
committed rows; the aggregate checks then read the committed files, which the two prove equal
to a whole run.
"""

import json
import math

import pytest
import torch

from tests.hf_sweep import results, truth

pytestmark = pytest.mark.peers

AGREEMENT_TARGET = 0.95
PARTS = results.parts()


@pytest.fixture(
    scope="module", params=range(len(PARTS)), ids=[f"part-{i}" for i in range(len(PARTS))]
)
def part(request):
    """One part of the sweep, run: its families' truths and rows."""
    pytest.importorskip("transformers")
    return results.run(PARTS[request.param])


@pytest.fixture(scope="module")
def committed():
    with open(results.RESULTS_FILE, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def committed_truth():
    with open(results.TRUTH_FILE, encoding="utf-8") as f:
        return json.load(f)


# --- the reading of states: known rotations in, known answers out -----------------------------


def _rotated(x, positions, layout_in, layout_out, base=10000.0, scale=1.0):
    """Rotate ``(batch, heads, seq, width)`` by hand: pairs read one way, written another."""
    width = x.shape[-1]
    a, b = truth.pairs(width, layout_in)
    a2, b2 = truth.pairs(width, layout_out)
    omega = base ** (-torch.arange(width // 2, dtype=torch.float64) * 2 / width)
    angle = positions[:, None].double() * omega  # (seq, pairs)
    c, s = angle.cos() * scale, angle.sin() * scale
    out = torch.empty_like(x)
    out[..., a2] = x[..., a] * c - x[..., b] * s
    out[..., b2] = x[..., a] * s + x[..., b] * c
    return out


@pytest.mark.parametrize(
    "layout_in, layout_out",
    [("half", "half"), ("interleaved", "interleaved"), ("interleaved", "half")],
)
def test_the_pairing_is_read_from_the_states(layout_in, layout_out):
    """The fitted layout is the one used, the others leave a large residual, angles are found."""
    gen = torch.Generator().manual_seed(0)
    positions = torch.tensor([0, 1, 2, 5, 100])
    q = torch.randn(2, 4, 5, 16, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 2, 5, 16, generator=gen, dtype=torch.float64)
    layer = truth.analyse(
        q,
        _rotated(q, positions, layout_in, layout_out),
        k,
        _rotated(k, positions, layout_in, layout_out),
    )
    assert (layer.best.layout_in, layer.best.layout_out) == (layout_in, layout_out)
    assert layer.best.residual < 1e-12
    assert min(f.residual for f in layer.fits[1:]) > 0.1
    omega = truth.frequencies(layer, positions)
    assert omega[0] == pytest.approx(1.0) and truth.base_from(omega) == pytest.approx(10000.0)


def test_the_fits_of_every_layout_are_each_layouts_own_fit():
    """``fit_layouts`` (shared work) gives exactly what ``fit_pairs`` gives layout by layout."""
    gen = torch.Generator().manual_seed(2)
    pre = torch.randn(2, 3, 7, 16, generator=gen, dtype=torch.float64)
    post = _rotated(pre, torch.tensor([0, 1, 2, 3, 7, 31, 100]), "interleaved", "half")
    for target in (post, torch.randn(2, 3, 7, 16, generator=gen, dtype=torch.float64)):
        fits = truth.fit_layouts(pre, target)
        assert [(f.layout_in, f.layout_out) for f in fits] == [
            (a, b) for a in truth.LAYOUTS for b in truth.LAYOUTS
        ]
        for f in fits:
            one = truth.fit_pairs(pre, target, f.layout_in, f.layout_out)
            assert f.residual == one.residual
            assert torch.equal(f.angle, one.angle) and torch.equal(f.scale, one.scale)


def test_partial_rotary_and_query_scaling_are_read_from_the_states():
    """A rotary part in the last coordinates, and a query scaled by position, are both seen."""
    gen = torch.Generator().manual_seed(1)
    positions = torch.tensor([0, 1, 7, 4096])
    q = torch.randn(2, 4, 4, 24, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 2, 4, 24, generator=gen, dtype=torch.float64)
    sigma = torch.tensor([1.0, 1.0, 1.0, 1.25], dtype=torch.float64)[:, None]

    def rope_last(x):
        return torch.cat([x[..., :8], _rotated(x[..., 8:], positions, "half", "half")], -1)

    layer = truth.analyse(q, rope_last(q) * sigma, k, rope_last(k))
    assert layer.block == (8, 24) and layer.location == "last"
    assert layer.query_scale.tolist() == pytest.approx([1.0, 1.0, 1.0, 1.25])
    nope = truth.analyse(q, q, k, k)
    assert nope.nope and nope.query_scale.tolist() == pytest.approx([1.0] * 4)


def test_vision_and_text_families_are_told_apart():
    """Pixtral and SAM 2 rotate patches; Llama and Recurrent Gemma (rotary in attention) text."""
    pytest.importorskip("transformers")
    from tests.hf_sweep.families import classify

    assert not classify("pixtral").text and not classify("sam2_video").text
    assert classify("llama").text and classify("llama").model_class == "LlamaModel"
    gemma = classify("recurrent_gemma")
    assert gemma.text and gemma.model_class == "RecurrentGemmaModel"
    paddle = classify("paddleocr_vl")  # a vision tower inside a model that embeds tokens
    assert [r.token_positions for r in paddle.rotary] == [False, True]


CLASSES = '''"""A module."""
import torch


@decorated
class Header(
    torch.nn.Module,
):
    """A docstring.

    With a line that is not indented further.
    """

# a comment at column 0, inside the class
    size = {"a": 1}  # a comment

    def forward(self, x):
        return (
            x  # inside
        )  # the statement ends


    # a trailing comment

LIMIT = 3


class One(Header): pass  # closing comment
class Last:
    text = "# not a comment"
'''


def test_class_sources_are_ast_segments():
    """The sweep's line reading of class sources cuts each class as ``ast`` does."""
    import ast
    import inspect

    from tests.hf_sweep.families import sources_of_classes

    def by_ast(text):
        tree = ast.parse(text)
        return {
            n.name: ast.get_source_segment(text, n)
            for n in tree.body
            if isinstance(n, ast.ClassDef)
        }

    assert sources_of_classes(CLASSES) == by_ast(CLASSES)
    assert list(sources_of_classes(CLASSES)) == ["Header", "One", "Last"]
    pytest.importorskip("transformers")
    from transformers.models.llama import modeling_llama

    text = inspect.getsource(modeling_llama)
    assert sources_of_classes(text) == by_ast(text)


# --- the sweep, part by part ----------------------------------------------------------------


def test_the_parts_hold_every_family_once(committed_truth):
    """Every text rotary family of the truth file is in exactly one part."""
    names = [name for p in PARTS for name in p]
    assert sorted(names) == committed_truth["text_rotary_families"]
    assert len(names) == len(set(names))
    assert all(PARTS)


def test_committed_results_equal_the_run(part, committed):
    """The site's table cannot go stale: ``python -m tests.hf_sweep --write`` rewrites it."""
    fresh = json.loads(json.dumps(part.rows))
    changed = sorted(name for name in fresh if fresh[name] != committed["families"].get(name))
    assert not changed, (
        f"tests/data/hf_sweep_results.json is stale (rerun python -m tests.hf_sweep --write): "
        f"families {changed}: "
        + json.dumps({n: [committed["families"].get(n), fresh[n]] for n in changed})[:4000]
    )


def test_committed_truth_equals_the_run(part, committed_truth):
    """The structure in the truth file (layouts, widths, NoPE layers) is what the run reads."""
    names = sorted(part.truth["families"])
    mine = results.digest(part.truth)
    theirs = results.digest({"families": {n: committed_truth["families"][n] for n in names}})
    assert mine == theirs


def test_every_agreement_proves_its_layout(part):
    """An agreement is backed by the other pair layout failing (a 2-wide rotary part has one)."""
    for row in part.rows.values():
        if row["agrees"]:
            assert row["layout_proven"] or row.get("rotary_dim") == [2], row["family"]


def test_every_disagreement_names_what_is_missing(part):
    for row in part.rows.values():
        if not row["agrees"]:
            assert row["reason"], row["family"]


def test_the_value_states_saw_the_same_layer_inputs(part):
    """Attention contributes nothing, so both runs of a family fed every layer the same input."""
    for name, family in part.truth["families"].items():
        for group in family.get("layers", []):
            assert group["values_equal"], (name, group["layers"])


# --- the whole sweep: the enumeration run, the aggregates on the committed files ---------------


def test_the_enumeration_is_the_committed_one(committed, committed_truth):
    """The families there are, the vision/audio-only ones and the counts are the committed ones.

    Both files are what the run assembles from the committed per-family entries (which the
    parts prove equal to the run): with the parts, the committed files equal a whole run.
    """
    pytest.importorskip("transformers")
    text, other = results.enumeration()
    assert sorted(f.name for f in text) == sorted(committed["families"])
    assert sorted(committed_truth["families"]) == sorted(committed["families"])
    assembled = results.assemble(committed_truth["families"], committed["families"], text, other)
    assert json.loads(json.dumps(assembled.results)) == committed
    assert json.loads(json.dumps(assembled.truth)) == committed_truth


def test_every_text_rotary_family_agrees_with_from_hf_config(committed):
    """At least 95 % of the text rotary families agree, layout proven by the other layout."""
    counts = committed["counts"]
    rows = committed["families"].values()
    for row in rows:
        if row["agrees"]:
            assert row["layout_proven"] or row.get("rotary_dim") == [2], row["family"]
    share = counts["agree"] / counts["text_rotary_families"]
    missing = {r["family"]: r["reason"] for r in rows if not r["agrees"]}
    assert share >= AGREEMENT_TARGET, (
        f"{counts['agree']} of {counts['text_rotary_families']} agree ({share:.1%}); "
        f"not yet: {json.dumps(missing, indent=1)[:4000]}"
    )


def test_counts_are_the_enumeration(committed, committed_truth):
    counts = committed["counts"]
    assert counts["text_rotary_families"] == len(committed_truth["text_rotary_families"])
    assert counts["model_types_with_a_rotary_class"] == counts["text_rotary_families"] + len(
        committed_truth["vision_audio_only"]
    )
    assert counts["model_types_with_a_rotary_class"] >= 190
    assert math.isclose(counts["agree"] + counts["do_not_agree"], counts["text_rotary_families"])
