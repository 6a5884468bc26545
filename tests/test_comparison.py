"""The measured comparison (experiments/): its tasks, its model, its statistics, and its data.

The full run takes hours and is not repeated here; the smoke configuration (seconds) is, and its
rows (counts and the targets' log-probabilities) must come out as stored. The wiring of the
context-extension methods into the evaluated logits is checked against each method's formula,
written out here independently of posenc_ref; the committed full data is checked against the
script's parts, and the page's stated orders against their intervals.
"""

import dataclasses
import json
import math

import pytest
import torch
import torch.nn.functional as F

from experiments import compare, model, report
from experiments.compare import CONFIGS, PARTS, SMOKE, load, run
from experiments.model import ENCODINGS, ROTARY, SCALINGS, TinyTransformer, blockwise_causal_mask
from experiments.stats import interval, paired, t_quantile
from experiments.tasks import (
    BOS,
    DIGITS,
    EOS,
    KEY,
    QRY,
    SEP,
    TASKS,
    VOCAB,
    greedy_answer,
    make_batch,
)
from experiments.train import build_model, score, train
from posenc_ref import inv_freq, relative_positions, t5_relative_bucket, wavelengths

# Tolerance of the re-run. On one machine and one torch build the run is bit for bit the same
# (one thread, deterministic algorithms, seeded generators; also with --workers 2, measured). A CPU
# with other vector instructions may round sums in another order: with ATEN_CPU_CAPABILITY=default
# against AVX2 the smoke run's final losses moved by at most 7.4e-8 relative, its log-probabilities
# (sums over 16 to 248 scored tokens) by at most 8e-6, and no count changed (measured on the
# machine that made the data). The tolerances leave a margin of over 10 on each; the closest two
# methods of one row differ by far more than the log-probability tolerance
# (test_smoke_separates_the_methods), and one flipped prediction per count is allowed (a near-tie
# between two logits can flip under a different rounding).
LOSS_RTOL = 1e-6
CORRECT_SLACK = 1
LOGPROB_ATOL = 1e-4


def _as_stored(value) -> dict:
    """A dataclass as the data file holds it (JSON: tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(value)))


@pytest.fixture(scope="module")
def smoke_fresh():
    torch.set_num_threads(1)
    return run(CONFIGS["smoke"], SMOKE, workers=1)


def _key(row):
    return tuple(row[k] for k in ("task", "encoding", "seed", "finetune", "eval_len", "method"))


def test_smoke_rows_reproduce(smoke_fresh):
    """Re-running the smoke configuration, single-threaded, gives the stored rows."""
    stored = load()["smoke"]
    assert stored["config"] == _as_stored(CONFIGS["smoke"]), "smoke config changed: re-run it"
    assert [_key(r) for r in smoke_fresh["rows"]] == [_key(r) for r in stored["rows"]]
    for new, old in zip(smoke_fresh["rows"], stored["rows"], strict=True):
        where = _key(old)
        assert (new["scored"], new["sequences"]) == (old["scored"], old["sequences"]), where
        for count in ("correct", "exact", "first"):
            assert abs(new[count] - old[count]) <= CORRECT_SLACK, (where, count)
        assert math.isclose(new["logprob"], old["logprob"], abs_tol=LOGPROB_ATOL), where
    for new, old in zip(smoke_fresh["jobs"], stored["jobs"], strict=True):
        assert math.isclose(new["final_loss"], old["final_loss"], rel_tol=LOSS_RTOL), old


def test_smoke_separates_the_methods():
    """From 2 L0 on, every two methods of a stored smoke row differ by more than the tolerance.

    So a re-run with one method wired as another, or scaling switched off, fails the re-run test.
    """
    methods: dict[tuple, dict[str, float]] = {}
    l0 = CONFIGS["smoke"].train_len  # at L0 every method is the identity (blockwise too)
    for row in load()["smoke"]["rows"]:
        if row["finetune"] is None and row["eval_len"] >= 2 * l0:
            key = (row["task"], row["encoding"], row["eval_len"])
            methods.setdefault(key, {})[row["method"]] = row["logprob"]
    checked = 0
    for key, by_method in methods.items():
        values = sorted(by_method.values())
        if len(values) > 1:
            gap = min(b - a for a, b in zip(values, values[1:], strict=False))
            assert gap > 2 * LOGPROB_ATOL, (key, by_method)
            checked += 1
    far = [n for n in CONFIGS["smoke"].eval_lengths if n >= 2 * l0]
    assert checked == len(TASKS) * (len(ROTARY) + 1) * len(far) and far  # + NoPE's logscale


# --------------------------------------------------------------------------- the wiring


def _yarn_by_formula(dim, base, s, l0):
    """YaRN's frequencies and attention factor, written out from the reference code's formulas.

    Pairs turning more than 32 times within L0 keep their frequency, pairs turning less than once
    are divided by s, a ramp linear in the pair index between; the bounds are the fractional pair
    indices of 32 and 1 turns, floored and ceiled; the factor is 0.1 ln s + 1 on cos and sin.
    """
    omega = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    index = [dim * math.log(l0 / (2 * math.pi * r)) / (2 * math.log(base)) for r in (32, 1)]
    low, high = max(math.floor(index[0]), 0), min(math.ceil(index[1]), dim - 1)
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return omega * (1 - ramp) + omega / s * ramp, 0.1 * math.log(s) + 1


def _by_formula(method, dim, base, s, l0):
    """``(inv_freq, attention_factor)`` of each method, from its formula (not from posenc_ref)."""
    omega = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    if method == "none":
        return omega, 1.0
    if method == "pi":  # every position divided by s
        return omega / s, 1.0
    if method == "ntk":  # base * s^(d / (d - 2))
        pairs = torch.arange(0, dim, 2, dtype=torch.float64)
        return (base * s ** (dim / (dim - 2))) ** (-pairs / dim), 1.0
    frequencies, temperature = _yarn_by_formula(dim, base, s, l0)
    return frequencies, (temperature if method == "yarn" else 1.0)


@pytest.mark.parametrize("encoding", ROTARY)
@pytest.mark.parametrize("method", SCALINGS[1:])
def test_scaling_wiring_matches_the_formulas(encoding, method, monkeypatch):
    """Each method's evaluated logits are the model's with that method's formula frequencies.

    The expected logits come from the unscaled path with its frequencies replaced by the ones
    written out above; the actual ones from ``model(tokens, method=..., factor=s)``. Swapping two
    methods, dropping YaRN's temperature or switching scaling off fails here (each was tried).
    """
    torch.manual_seed(0)
    l0, s = 8, 4.0
    net = TinyTransformer(encoding, vocab=VOCAB, dim=32, heads=2, layers=2, train_len=l0,
                          t5_buckets=8).double()  # fmt: skip
    tokens = torch.randint(0, VOCAB, (2, int(s * l0)))
    actual = net(tokens, method=method, factor=s)
    expected_freqs = _by_formula(method, net.head_dim, net.base, s, l0)
    monkeypatch.setattr(model, "rotary_frequencies", lambda *args: expected_freqs)
    expected = net(tokens)
    torch.testing.assert_close(actual, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("encoding", ROTARY)
def test_methods_give_different_logits(encoding):
    """The wiring test has power: every two methods (and none) give logits far apart."""
    torch.manual_seed(0)
    net = TinyTransformer(encoding, vocab=VOCAB, dim=32, heads=2, layers=2, train_len=8).double()
    tokens = torch.randint(0, VOCAB, (2, 32))
    logits = {m: net(tokens, method=m, factor=4.0) for m in SCALINGS}
    for a in SCALINGS:
        for b in SCALINGS:
            if a < b:
                assert float((logits[a] - logits[b]).abs().max()) > 1e-3, (a, b)


def test_yarn_formula_is_posenc_refs():
    """The test's written-out YaRN is the package's (so the wiring test checks the method)."""
    from posenc_ref.rope_scaling import yarn

    for dim, l0, s in [(16, 8, 4.0), (16, 32, 8.0), (64, 4096, 16.0)]:
        frequencies, temperature = _yarn_by_formula(dim, 10000.0, s, l0)
        scaled = yarn(dim, factor=s, original_max_len=l0)
        torch.testing.assert_close(frequencies, scaled.inv_freq, rtol=1e-12, atol=0)
        assert math.isclose(temperature, scaled.attention_factor)


def test_teacher_forced_exact_match_is_greedy_generation():
    """A sequence scores as exact iff the model, generating its own answer, writes the true one.

    The answers are set to the model's own greedy output, then one token is changed in half the
    sequences: exactly the unchanged half score. A fixed factor (YaRN at s = 2) keeps a prefix's
    logits those of the whole sequence, so this holds with a method too.
    """
    torch.manual_seed(0)
    net = TinyTransformer("rope", vocab=VOCAB, dim=32, heads=2, layers=1, train_len=8).eval()
    batch = make_batch("copy", 6, 16, torch.Generator().manual_seed(0))

    def forward(tokens):
        return net(tokens, method="yarn", factor=2.0)

    answer = greedy_answer(forward, batch)  # (6, 7)
    first = int(batch.mask[0].nonzero()[0])
    seq = torch.cat([batch.inputs[:, : first + 1], answer, batch.targets[:, -1:]], dim=1)  # + EOS
    own = batch._replace(inputs=seq[:, :-1], targets=seq[:, 1:])
    assert score(net, own, method="yarn", factor=2.0)["exact"] == 6
    changed = seq.clone()
    changed[::2, -3] = (changed[::2, -3] + 1) % VOCAB  # one answer token, every other sequence
    wrong = batch._replace(inputs=changed[:, :-1], targets=changed[:, 1:])
    assert score(net, wrong, method="yarn", factor=2.0)["exact"] == 3


def test_logscale_multiplies_each_query_by_the_log_length_scale(monkeypatch):
    """The "logscale" logits are the plain model's with every query scaled by log_length_scale.

    Inside L0 the scale is 1, so there the logits are the plain ones; past it they differ.
    """
    from posenc_ref.query_scale import log_length_scale

    torch.manual_seed(0)
    net = TinyTransformer("nope", vocab=VOCAB, dim=32, heads=2, layers=2, train_len=8).double()
    tokens = torch.randint(0, VOCAB, (2, 32))
    actual = net(tokens, method="logscale")
    scale = log_length_scale(torch.arange(32), 8).double()
    plain = F.scaled_dot_product_attention

    def scaled(q, *args, **kwargs):  # the query scaled by hand, before plain attention
        return plain(q * scale[:, None], *args, **kwargs)

    monkeypatch.setattr(model.F, "scaled_dot_product_attention", scaled)
    torch.testing.assert_close(actual, net(tokens), rtol=1e-10, atol=1e-10)
    monkeypatch.undo()
    short = tokens[:, :8]
    torch.testing.assert_close(net(short, method="logscale"), net(short), rtol=0, atol=0)
    assert float((actual - net(tokens)).abs().max()) > 1e-3


# --------------------------------------------------------------------------- tasks and model


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("length", [16, 32, 256])
def test_task_batches(task, length):
    """Each batch has `length` inputs, targets shifted by one, and the answers scored."""
    batch = make_batch(task, 4, length, torch.Generator().manual_seed(0))
    assert batch.inputs.shape == batch.targets.shape == batch.mask.shape == (4, length)
    assert torch.equal(batch.inputs[:, 1:], batch.targets[:, :-1])
    assert bool((batch.inputs[:, 0] == BOS).all())
    assert int(batch.inputs.max()) < VOCAB and int(batch.targets.max()) < VOCAB
    rows = batch.mask.sum(1)
    if task in ("copy", "reverse"):
        n = length // 2 - 1
        assert bool((rows == n).all())
        first, answer = batch.inputs[:, 1 : n + 1], batch.targets[batch.mask].view(4, n)
        assert torch.equal(first.flip(1) if task == "reverse" else first, answer)
        assert bool((batch.inputs[:, n + 1] == SEP).all())
        assert bool((batch.targets[:, -1] == EOS).all())
    else:
        assert bool((rows == 4).all())
        assert bool((batch.inputs[:, -4] == QRY).all()) and batch.mask[:, -4].all()
        for b in range(4):
            at = int((batch.inputs[b] == KEY).nonzero())
            digits = batch.inputs[b, at + 1 : at + 5].tolist()
            assert digits == batch.targets[b, -4:].tolist()
            assert len(set(digits)) == 4 and all(d in DIGITS for d in digits)  # distinct
            assert int(batch.distance[b]) == (length - 4) - (at + 1)  # QRY to the first digit


def test_passkey_distances_cover_the_length():
    """Needles sit anywhere from 4 to L - 6 positions before the query, and every digit occurs."""
    batch = make_batch("passkey", 2000, 64, torch.Generator().manual_seed(1))
    assert int(batch.distance.min()) == 4 and int(batch.distance.max()) == 64 - 6
    assert set(batch.targets[batch.mask].tolist()) == set(DIGITS)


def test_task_lengths_refused():
    g = torch.Generator()
    with pytest.raises(ValueError, match="multiple of 4"):
        make_batch("copy", 2, 30, g)
    with pytest.raises(ValueError, match=">= 12"):
        make_batch("passkey", 2, 8, g)
    with pytest.raises(ValueError, match="task must be one of"):
        make_batch("sort", 2, 16, g)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_model_runs_every_encoding_past_l0(encoding):
    """Each encoding runs at 8 L0; a method is refused where it does not apply."""
    net = TinyTransformer(encoding, vocab=VOCAB, dim=16, heads=2, layers=1, train_len=8,
                          t5_buckets=8)  # fmt: skip
    tokens = torch.zeros(2, 64, dtype=torch.long)
    assert net(tokens).shape == (2, 64, VOCAB)
    for method in [*SCALINGS[1:], "blockwise", "logscale"]:
        special = {"blockwise": encoding == "xpos", "logscale": True}  # logscale: any encoding
        applies = special.get(method, encoding in ROTARY)
        if applies:
            assert torch.isfinite(net(tokens, method=method, factor=8.0)).all()
        else:
            with pytest.raises(ValueError, match="applies to"):
                net(tokens, method=method, factor=8.0)
    with pytest.raises(ValueError, match="method must be one of"):
        net(tokens, method="longrope")


def test_blockwise_mask_sees_its_block_and_the_one_before():
    """Blocks of 4: a query sees its block up to itself and the whole block before, no more."""
    mask = blockwise_causal_mask(16, 4)
    seen = mask == 0
    for i in range(16):
        keys = seen[i].nonzero().flatten().tolist()
        start = max(0, (i // 4 - 1) * 4)
        assert keys == list(range(start, i + 1))
        assert len(keys) - 1 <= 2 * 4 - 1  # earlier tokens: at most 2 * block - 1


def test_blockwise_reach_of_the_question():
    """The page's reach: at 256 tokens, blocks of 16, the question (QRY at 252) sees 28 back.

    The first visible key is the start of the block before the question's own (224), which is
    what report.observations computes as query - (query // size - 1) * size.
    """
    size, length = CONFIGS["full"].train_len // 2, 8 * CONFIGS["full"].train_len
    query = length - 4
    first = int((blockwise_causal_mask(length, size)[query] == 0).nonzero()[0])
    assert query - first == query - (query // size - 1) * size == 28


def test_learned_rows_past_l0_are_never_trained():
    """The learned table has 8 L0 rows; training moves rows < L0 and leaves the others as drawn."""
    config = dataclasses.replace(CONFIGS["smoke"], max_steps=3, check_every=3)
    net = build_model(config, "learned", 0, 10000.0)
    before = net.learned.weight.detach().clone()
    assert before.shape[0] == 8 * config.train_len
    torch.set_num_threads(1)
    train(net, config, "copy", 0)
    after = net.learned.weight.detach()
    assert torch.equal(after[config.train_len :], before[config.train_len :])
    assert not torch.equal(after[: config.train_len], before[: config.train_len])


def test_kerple_parameters_stay_positive():
    """A step that would push KERPLE's r1, r2 below 0.01 is clamped back, as in its code."""
    net = TinyTransformer("kerple", vocab=VOCAB, dim=16, heads=2, layers=2, train_len=8)
    with torch.no_grad():
        net.kerple.fill_(-1.0)
    net.clamp_()
    assert bool((net.kerple == torch.tensor(model.KERPLE_MIN)).all())


def test_fire_bias_depends_on_distance_only_within_l0():
    """FIRE's threshold is L0: up to L0 the bias is a function of m - p, past it not."""
    torch.manual_seed(0)
    net = TinyTransformer("fire", vocab=VOCAB, dim=16, heads=2, layers=1, train_len=8)
    bias = net._biases(24, None)[0].detach()  # (H, 24, 24)
    for k in range(8):  # distance k: queries k .. 7 share one value; queries past 8 do not
        inside = torch.diagonal(bias[:, :8, :8], offset=-k, dim1=1, dim2=2)
        assert torch.allclose(inside, inside[:, :1].expand_as(inside))
    past = torch.diagonal(bias, offset=-1, dim1=1, dim2=2)[:, 8:]
    assert not torch.allclose(past, past[:, :1].expand_as(past))


def test_t5_buckets_of_the_comparison():
    """32 causal buckets with max_distance L0 = 32: trained distances 0 .. 31 use all but one.

    The last bucket is first reached at distance 31 (L0 - 1) and holds every longer one; bucket
    20 falls between distances 19 and 20 and is never used.
    """
    l0 = CONFIGS["full"].train_len
    rel = relative_positions(1, 8 * l0)[0].flip(0)  # key - query: 0, -1, .., -(8 L0 - 1)
    buckets = t5_relative_bucket(rel, bidirectional=False, num_buckets=32, max_distance=l0)
    assert set(buckets[:l0].tolist()) == set(range(32)) - {20}
    assert int((buckets == 31).nonzero()[0]) == l0 - 1 and bool((buckets[l0 - 1 :] == 31).all())


def test_limits_page_numbers():
    """2 of 8 pairs turn within L0 = 32 (head 16, base 1e4); 46 of 64 in 4096 tokens (head 128)."""
    small = wavelengths(16, 10000.0)
    assert int((small < 32).sum()) == 2
    assert [round(float(x)) for x in small[:2]] == [6, 20]
    large = wavelengths(128, 10000.0)
    assert int((large < 4096).sum()) == 46 and int((4096 / large >= 10).sum()) == 30
    assert float(inv_freq(16)[0]) == 1.0


# --------------------------------------------------------------------------- statistics


def test_t_quantiles():
    """Student's t 97.5 % points, from the tables: df 1, 4, 9 and a large df (the normal's)."""
    assert math.isclose(t_quantile(0.975, 1), 12.706205, rel_tol=1e-6)
    assert math.isclose(t_quantile(0.975, 4), 2.776445, rel_tol=1e-6)
    assert math.isclose(t_quantile(0.975, 9), 2.262157, rel_tol=1e-6)
    assert math.isclose(t_quantile(0.975, 100000), 1.959985, rel_tol=1e-5)


def test_paired_interval_is_the_interval_of_differences():
    """Paired over the common seeds; a shift shared by both runs does not widen it."""
    a = {0: 0.9, 1: 0.5, 2: 0.7, 3: 0.2}
    b = {0: 0.8, 1: 0.45, 2: 0.6, 3: 0.1, 4: 1.0}  # seed 4 has no partner
    d = paired(a, b)
    assert d.n == 4 and d == interval([a[s] - b[s] for s in range(4)])
    assert d.excludes_zero()  # every difference positive and close: the interval is above zero
    assert not paired(a, {s: v - 0.01 * (-1) ** s for s, v in a.items()}).excludes_zero()
    assert interval([0.5]).n == 1 and not interval([0.5]).excludes_zero()


# --------------------------------------------------------------------------- the committed data


def _expected_rows(config, part, encoding, seed) -> set:
    rows = set()
    for length in config.eval_lengths:
        s = length / config.train_len
        methods = SCALINGS if encoding in ROTARY and s > 1 else ("none",)
        rows |= {(None, length, m) for m in methods}
        if encoding == "xpos":
            rows.add((None, length, "blockwise"))
        if part.temperature and encoding == "nope" and s > 1:
            rows.add((None, length, "logscale"))
        if part.finetune and encoding == "rope":
            rows |= {(m, length, m) for m in compare.FINETUNE_METHODS}
    return rows


@pytest.mark.parametrize("name", sorted(PARTS))
def test_stored_part_matches_the_script(name):
    """A stored part ran today's configuration and part, and has every row exactly once."""
    stored = load()["parts"].get(name)
    if stored is None:
        pytest.skip(f"part {name} is not in the data file (the page lists it as not run)")
    config, part = CONFIGS["full"], PARTS[name]
    # A field added to Part after a part ran is absent from its block: its default was in force.
    fields = {f.name: f.default for f in dataclasses.fields(compare.Part)}
    assert stored["config"] == _as_stored(config)
    assert {**_as_stored(part), **stored["part"]} == _as_stored(part)
    assert all(_as_stored(part)[k] == fields[k] for k in fields if k not in stored["part"])
    jobs = {(j["encoding"], j["base"], j["seed"]): j for j in stored["jobs"]}
    assert set(jobs) == {(e, float(b), s) for e, b, s in part.jobs()}
    for job in jobs.values():
        assert job["steps"] <= config.max_steps and job["steps"] % config.check_every == 0
        assert job["converged"] == (job["val_exact"] >= config.target)
        assert job["converged"] or job["steps"] == config.max_steps
    got = {}
    for row in stored["rows"]:
        key = (row["encoding"], row["base"], row["seed"])
        got.setdefault(key, []).append((row["finetune"], row["eval_len"], row["method"]))
        assert 0 <= row["exact"] <= row["first"] + row["sequences"] - row["first"]
        assert row["exact"] <= min(row["first"], row["sequences"])
        assert 0 <= row["correct"] <= row["scored"] and row["logprob"] <= 0
        if part.task == "passkey":
            bins = row["by_distance"]
            assert [sum(b[i] for b in bins) for i in range(3)] == [
                row["sequences"], row["exact"], row["first"]]  # fmt: skip
    for key, rows in got.items():
        assert len(rows) == len(set(rows)) and set(rows) == _expected_rows(
            config, part, key[0], key[2])  # fmt: skip
    assert stored["wall_s"] > 0 and stored["cpu_s"] > 0 and len(stored["loadavg_before"]) == 3


def test_stated_orders_have_intervals_that_exclude_zero():
    """Every order the page states is one whose paired 95 % interval excludes zero."""
    results = report.Results(load())
    for task in ("passkey", "copy"):
        length = max(results.lengths()) if task == "passkey" else 2 * results.l0
        for a, b, diff in report.supported_orders(results, task, length):
            assert diff.excludes_zero() and diff.mean > 0, (task, a, b)
            mine = results.scores(task, a, length)
            theirs = results.scores(task, b, length)
            assert paired(mine, theirs) == diff


def test_order_matrix_splits_its_columns_and_keeps_every_pair():
    """The page's matrix of paired differences, split so no table is wider than the text column.

    Every ordered pair of encodings is still in it once, with its paired mean, bold where the
    interval excludes zero.
    """
    results = report.Results(load())
    far = max(results.lengths())
    scores = {e: results.scores("passkey", e, far) for e in ENCODINGS}
    present = [e for e in ENCODINGS if scores[e]]
    text = report.order_matrix(results, "passkey", far, max_columns=4)
    found = {}
    for table in text.split("\n\n"):
        cells = [[cell.strip() for cell in line[1:-1].split("|")] for line in table.splitlines()]
        head, _, *rows = cells
        assert head[0] == "row − column" and 1 <= len(head) - 1 <= 4
        assert [row[0] for row in rows] == [report.NAMES[e] for e in present]
        for row in rows:
            for column, cell in zip(head[1:], row[1:], strict=True):
                assert (row[0], column) not in found
                found[(row[0], column)] = cell
    assert len(text.split("\n\n")) == -(-len(present) // 4)
    for a in present:
        for b in present:
            cell = found[(report.NAMES[a], report.NAMES[b])]
            if a == b:
                assert cell == ""
                continue
            d = paired(scores[a], scores[b])
            assert cell == (f"**{d.mean:+.2f}**" if d.excludes_zero() else f"{d.mean:+.2f}")
    with pytest.raises(ValueError, match="max_columns"):
        report.order_matrix(results, "passkey", far, max_columns=0)


def test_report_tables_and_figures():
    """Every table of the page has one row per encoding (or method), and every figure is drawn."""
    data = load()
    results = report.Results(data)
    lengths = results.lengths()
    present = {e for (t, e, b, s) in results.jobs if t == "passkey" and b == report.BASE}
    table = report.accuracy_table(results, "passkey", lengths)
    converged = {e for e in present if results.converged("passkey", e)}
    assert len(table.splitlines()) == (2 + len(converged) if converged else 1)
    assert len(report.parts_table(data).splitlines()) == 2 + len(PARTS)
    assert set(report.site_figures(data)) == {
        "comparison_accuracy.svg", "comparison_scaling.svg", "comparison_distance.svg",
        "comparison_base.svg", "comparison_finetune.svg",
    }  # fmt: skip


@pytest.mark.parametrize("task", ["passkey", "copy"])
def test_retrained_nope_models_reproduce_the_full_run(task):
    """The NoPE temperature parts retrain the main parts' NoPE models from the same seeds.

    Every count of every unscaled row they share must be the same: a re-run of full-run numbers,
    part of the data file, not a copy of them.
    """
    data = load()
    agree, compared = report.retrained_rows_agree(data, task)
    if not compared:
        pytest.skip(f"the {task} NoPE rows are not in both a main part and the temperature part")
    assert agree == compared
