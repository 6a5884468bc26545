"""The explorer and the widgets compute the package's numbers, and a reader can drive them.

``docs/javascripts/posenc_ref.js`` re-implements the formulas that the explorer (``explorer.md``)
and the widgets on the derivation pages draw. These tests run that code in Chromium, on the built
site, and compare it with ``posenc_ref``:

* at a grid of settings (every method, bases, widths, factors, contexts, and the boundary cases:
  YaRN's clamps and fallback, Llama 3's band edges, both sides of L for the length-dependent
  methods, refusals), the frequencies and the attention factor to a relative error of 1e-12;
* cos/sin at a position, the decay bound and the score, against ``rope_cos_sin``,
  ``plots.rope_decay_bound`` and ``apply_rope`` given the *same* frequencies, to 1e-12 of their
  scale. (Starting from the same frequencies matters: JavaScript's ``Math.pow`` and the C
  library's ``pow`` may differ in the last bit of ``omega_i``, and an angle ``m * omega_i`` at
  position 10**6 turns that bit into ~1e-10 rad. Each stage is checked at the float64 bound.)

Then through the page itself: every released family loaded from the picker equals
``RopeSpec.frequencies``; keyboard and typed input update the numbers; controls are labelled.
Every widget's numbers (as loaded and after a keyboard step) and its fit at 1280 and 390 px are
checked in ``test_site.py``, from the one load of each page that all its checks share
(``tests/site/pageview.py``); ``check_widget`` here is the comparison they use.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pageview import WIDGETS_READY, widget_state

ROOT = Path(__file__).resolve().parents[2]
RTOL = 1e-12  # the float64 bound: a few thousand ulps at most, a drifted formula is far above
WORST: dict[str, float] = {}  # worst error seen per quantity, printed by the grid test

# --- the package's side ---------------------------------------------------------------------


def _torch():
    import torch

    return torch


# The grid test asks for each case's frequencies three times (which cases are valid, which
# regimes they reach, the comparison): the package computes each once, the answer is reused.
_FREQUENCIES: dict[str, tuple[list[float], float] | str] = {}


def package_frequencies(method: str, dim: int, base: float, params: dict):
    """(inv_freq list, attention factor) from posenc_ref, or the error it raises."""
    key = repr((method, dim, base, sorted(params.items())))  # 1 and 1.0, lists and tuples apart
    if key not in _FREQUENCIES:
        _FREQUENCIES[key] = _package_frequencies(method, dim, base, params)
    return _FREQUENCIES[key]


def _package_frequencies(method: str, dim: int, base: float, params: dict):
    from posenc_ref import inv_freq
    from posenc_ref.rope_scaling import SCALING_METHODS

    try:
        if method == "none":
            return inv_freq(dim, base).tolist(), 1.0
        result = SCALING_METHODS[method](dim, base, **params)
        return result.inv_freq.tolist(), result.attention_factor
    except (ValueError, TypeError) as error:
        return str(error)


def package_quantities(omega: list[float], a: float, positions, distances) -> dict:
    """What the package computes from these frequencies: cos/sin, decay bound, score."""
    return package_quantities_many([(omega, a, positions, distances)])[0]


def package_quantities_many(settings: list[tuple]) -> list[dict]:
    """:func:`package_quantities` of each ``(omega, a, positions, distances)``, in batches.

    Settings with as many pairs, the same attention factor, positions and distances are computed
    together: their frequencies side by side in one ``inv_freq`` for ``rope_cos_sin`` (each angle
    is still ``m * omega_i``, each value the package's), and their scores in one batched
    ``apply_rope``. One call per setting cost ~3 ms, ~4 CPU-s for the grid test's 1231 settings.
    """
    torch = _torch()
    from posenc_ref import apply_rope, rope_cos_sin
    from posenc_ref.plots import rope_decay_bound

    groups: dict[tuple, list[int]] = {}
    for k, (omega, a, positions, distances) in enumerate(settings):
        groups.setdefault((len(omega), a, tuple(positions), tuple(distances)), []).append(k)
    found: list[dict] = [{} for _ in settings]
    for (n, a, positions, distances), members in groups.items():
        b = len(members)
        w = torch.tensor([settings[k][0] for k in members], dtype=torch.float64)  # (B, N)
        flat = w.reshape(b * n)
        cos, sin = rope_cos_sin(
            torch.tensor(positions), flat, attention_factor=a, dtype=torch.float64
        )  # (P, B N)
        r = torch.tensor(distances, dtype=torch.float64)
        # The score of a query and a key that are (1, 0) in every pair: the query rotated to
        # distance r, the key at 0 (unrotated), through the package's own rotation.
        rc, rs = rope_cos_sin(r, flat, dtype=torch.float64)  # (R, B N)
        rc, rs = (t.reshape(len(distances), b, n).transpose(0, 1) for t in (rc, rs))  # (B, R, N)
        x = torch.zeros(b, len(distances), 2 * n, dtype=torch.float64)
        x[..., 0::2] = 1.0
        q = apply_rope(x, rc, rs, layout="interleaved")
        score = ((q * x).sum(-1) / n).tolist()  # (B, R)
        cos = cos.reshape(len(positions), b, n).transpose(0, 1).tolist()  # (B, P, N)
        sin = sin.reshape(len(positions), b, n).transpose(0, 1).tolist()
        for j, k in enumerate(members):
            found[k] = {
                "cos": cos[j],
                "sin": sin[j],
                "bound": rope_decay_bound(r.numpy(), inv_freq=w[j]).tolist(),
                "score": score[j],
            }
    return found


def _rel(js, py, scale=None) -> float:
    """Largest |js - py| / max(|py|, scale) over (nested) lists; inf for a NaN or a null."""
    import numpy as np

    js = np.asarray(js, dtype=np.float64)  # null (a JavaScript NaN) becomes nan
    py = np.asarray(py, dtype=np.float64)
    assert js.shape == py.shape, (js.shape, py.shape)
    if js.size == 0:
        return 0.0
    if not np.isfinite(js).all():  # a NaN compares False with any tolerance
        return math.inf
    denominator = np.abs(py) if scale is None else np.maximum(np.abs(py), scale)
    error = np.abs(js - py)
    return float(
        np.where(denominator > 0, error / np.where(denominator > 0, denominator, 1), error).max()
    )


def _record(name: str, error: float) -> float:
    WORST[name] = max(WORST.get(name, 0.0), error)
    return error


def compare(case: dict, js: dict) -> list[str]:
    """Problems with the explorer's result ``js`` for ``case``; [] when it is the package's."""
    return compare_many([case], [js])


def compare_many(cases: list[dict], results: list[dict]) -> list[str]:
    """:func:`compare` of each case with its result, the package's quantities computed together."""
    staged = [_compare_frequencies(case, js) for case, js in zip(cases, results, strict=True)]
    ready = [k for k, (_, _, checks) in enumerate(staged) if checks is not None]
    # From the explorer's own frequencies (see the module's docstring).
    mine = package_quantities_many(
        [
            (
                results[k]["invFreq"],
                results[k]["attentionFactor"],
                cases[k]["positions"],
                cases[k]["distances"],
            )
            for k in ready
        ]
    )
    quantities_of = dict(zip(ready, mine, strict=True))
    problems = []
    for k, (label, found, checks) in enumerate(staged):
        problems += found
        if checks is None:
            continue
        js, quantities = results[k], quantities_of[k]
        scale = max(1.0, js["attentionFactor"])
        cos_sin = max(
            _rel(js["cos"], quantities["cos"], scale), _rel(js["sin"], quantities["sin"], scale)
        )
        checks += [
            ("cos/sin", cos_sin),
            ("decay bound", _rel(js["bound"], quantities["bound"], 1.0)),
            ("score", _rel(js["score"], quantities["score"], 1.0)),
        ]
        for name, error in checks:
            if _record(name, error) > RTOL:
                problems.append(f"{label}: {name} off by {error:.3g} (relative)")
    return problems


def _compare_frequencies(case: dict, js: dict) -> tuple[str, list[str], list | None]:
    """The case's label, its problems so far, and its frequency checks (None: nothing further)."""
    label = (
        f"{case['method']} dim={case['dim']} base={case['base']} params={_short(case['params'])}"
    )
    expected = package_frequencies(case["method"], case["dim"], case["base"], case["params"])
    if isinstance(expected, str):
        if "error" not in js:
            return label, [f"{label}: the package raises ({expected}), the explorer does not"], None
        if js["error"] != expected:  # the package's message, character for character
            return label, [f"{label}: package: {expected!r}; explorer: {js['error']!r}"], None
        return label, [], None
    if "error" in js:
        return label, [f"{label}: the explorer raises {js['error']!r}, the package does not"], None
    omega, a = expected
    checks = [
        ("inv_freq", _rel(js["invFreq"], omega)),
        ("attention_factor", _rel(js["attentionFactor"], a)),
    ]
    if max(error for _, error in checks) == math.inf:  # NaN or null: nothing further to compare
        return label, [f"{label}: non-finite frequencies or attention factor"], None
    return label, [], checks


def _short(params: dict) -> dict:
    return {k: (f"[{len(v)} values]" if isinstance(v, list) else v) for k, v in params.items()}


# --- the grid -------------------------------------------------------------------------------

BASES = [1.5, 100.0, 10000.0, 500000.0, 1e7]
DIMS = [2, 4, 8, 64, 96, 128, 512]
FACTORS = [1.0, 1.5, 4.0, 8.0, 64.0]
CONTEXTS = [64, 2048, 4096, 8192, 131072]
POSITIONS = [0, 1, 1000, 65535, 1_000_000]
DISTANCES = [0, 1, 7, 100, 4095, 65536, 1_000_000]


def _lists(dim: int, factor: float) -> tuple[list[float], list[float]]:
    """Made-up LongRoPE lists of the right length: positive, uneven, rising to the factor."""
    n = dim // 2
    short = [1.0 + 0.05 * ((7 * i) % 5) for i in range(n)]
    long = [1.0 + (factor - 1.0) * i / max(n - 1, 1) + 0.01 * (i % 3) for i in range(n)]
    return short, long


def grid() -> list[dict]:
    from posenc_ref import inv_freq

    cases = []

    def add(method, dim, base, params, positions=POSITIONS, distances=DISTANCES):
        cases.append(
            {
                "method": method,
                "dim": dim,
                "base": base,
                "params": params,
                "positions": positions,
                "distances": distances,
            }
        )

    k = 0
    for base in BASES:
        for dim in DIMS:
            add("none", dim, base, {})
            for factor in FACTORS:
                k += 1
                L = CONTEXTS[k % len(CONTEXTS)]
                add("linear", dim, base, {"factor": factor})
                add("ntk_aware", dim, base, {"factor": factor})
                seq_len = [L // 2, L, L + 1, 4 * L][k % 4]
                add(
                    "dynamic_ntk",
                    dim,
                    base,
                    {"factor": factor, "seq_len": seq_len, "original_max_len": L},
                )
                add("yarn", dim, base, {"factor": factor, "original_max_len": L})
                add(
                    "yarn",
                    dim,
                    base,
                    {
                        "factor": factor,
                        "original_max_len": CONTEXTS[(k + 2) % 5],
                        "truncate": False,
                        "beta_fast": 16.0,
                        "beta_slow": 2.0,
                    },
                )
                add(
                    "llama3",
                    dim,
                    base,
                    {
                        "factor": factor,
                        "original_max_len": L,
                        "low_freq_factor": [1.0, 2.0][k % 2],
                        "high_freq_factor": [4.0, 2.0, 8.0][k % 3],
                    },
                )
                short, long = _lists(dim, factor)
                add(
                    "longrope",
                    dim,
                    base,
                    {
                        "short_factor": short,
                        "long_factor": long,
                        "original_max_len": L,
                        "seq_len": L + k % 2,
                        "factor": factor,
                    },
                )
    # Boundary cases, each named by what it reaches.
    add("yarn", 8, 10000.0, {"factor": 4.0, "original_max_len": 64})  # the docstring example
    add("yarn", 64, 10000.0, {"factor": 8.0, "original_max_len": 100})  # low < 0: clamped to 0
    add("yarn", 8, 100.0, {"factor": 4.0, "original_max_len": 10**6})  # high > dim - 1: clamped
    add("yarn", 16, 1.5, {"factor": 4.0, "original_max_len": 131072})  # high <= low: the fallback
    add("yarn", 16, 1.5, {"factor": 4.0, "original_max_len": 131072, "truncate": False})
    add("yarn", 64, 10000.0, {"factor": 40.0, "original_max_len": 4096, "attention_factor": 1.0})
    add("yarn", 64, 10000.0, {"factor": 4.0, "original_max_len": 4096, "attention_factor": 0.7})
    add(
        "yarn",
        64,
        10000.0,
        {"factor": 4.0, "original_max_len": 4096, "beta_fast": 1.0, "beta_slow": 32.0},
    )
    add("yarn", 64, 10000.0, {"factor": 0.5, "original_max_len": 4096})  # refused
    add("llama3", 128, 500000.0, {})  # Meta's defaults
    add("llama3", 128, 500000.0, {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0})
    add("llama3", 128, 500000.0, {"low_freq_factor": 4.0, "high_freq_factor": 1.0})  # refused
    # Band edges exactly on a pair's turn count (computed as llama3 computes it): each edge, and
    # both at once (l == h: that pair must be kept, not blended with 0/0).
    turns = _torch().tensor(8192.0) * inv_freq(128, 500000.0) / (2 * math.pi)
    for bands in [
        {"low_freq_factor": float(turns[30]), "high_freq_factor": 8.0},
        {"low_freq_factor": 0.5, "high_freq_factor": float(turns[20])},
        {"low_freq_factor": float(turns[25]), "high_freq_factor": float(turns[25])},
    ]:
        add("llama3", 128, 500000.0, {"factor": 8.0, "original_max_len": 8192, **bands})
    for seq_len in [0, 4095, 4096, 4097, 40960]:
        add(
            "dynamic_ntk",
            64,
            10000.0,
            {"factor": 4.0, "seq_len": seq_len, "original_max_len": 4096},
        )
    add("dynamic_ntk", 64, 10000.0, {"factor": 1.0, "seq_len": 9000, "original_max_len": 4096})
    short, long = _lists(96, 32.0)
    lists = {"short_factor": short, "long_factor": long, "original_max_len": 4096}
    for seq_len in [4096, 4097]:
        add("longrope", 96, 10000.0, {**lists, "seq_len": seq_len, "max_len": 131072})
    add(
        "longrope", 96, 10000.0, {**lists, "seq_len": 5000, "factor": 32.0, "attention_factor": 1.3}
    )
    add("longrope", 96, 10000.0, {**lists, "seq_len": 5000, "max_len": 2048})  # refused
    add("longrope", 96, 10000.0, {**lists, "seq_len": 5000})  # refused: no factor, no max_len
    add("longrope", 94, 10000.0, {**lists, "seq_len": 5000, "factor": 4.0})  # refused: lengths
    add("ntk_aware", 2, 10000.0, {"factor": 4.0})  # refused: one pair
    add("linear", 64, 10000.0, {"factor": 0.5})  # refused
    add("none", 3, 10000.0, {})  # refused: odd
    add("none", 0, 10000.0, {})  # refused
    add("none", 64, 1.0, {})  # refused: base 1
    add("none", 64, 0.5, {})  # refused
    return cases


def _coverage(cases: list[dict]) -> set[str]:
    """Which boundary regimes the grid reaches, judged by the package's own helpers."""
    from posenc_ref.rope_scaling_functions import _yarn_pair_index

    reached = set()
    for c in cases:
        p, dim, base = c["params"], c["dim"], c["base"]
        if isinstance(package_frequencies(c["method"], dim, base, p), str):
            reached.add("refused")
            continue
        if c["method"] == "yarn":
            low = _yarn_pair_index(p.get("beta_fast", 32.0), dim, base, p["original_max_len"])
            high = _yarn_pair_index(p.get("beta_slow", 1.0), dim, base, p["original_max_len"])
            if p.get("truncate", True):
                low, high = math.floor(low), math.ceil(high)
            reached |= {"yarn low < 0"} if low < 0 else set()
            reached |= {"yarn high > dim - 1"} if high > dim - 1 else set()
            if min(high, dim - 1) <= max(low, 0):
                reached.add("yarn fallback")
            if p.get("truncate") is False:
                reached.add("yarn truncate off")
        if c["method"] == "llama3":
            low, high = p.get("low_freq_factor", 1.0), p.get("high_freq_factor", 4.0)
            L = p.get("original_max_len", 8192)
            turns = [L * base ** (-(2 * i) / dim) / (2 * math.pi) for i in range(dim // 2)]
            reached |= {"llama3 l == h"} if low == high else set()
            if any(t < low for t in turns) and any(t > high for t in turns):
                if any(low <= t <= high for t in turns):
                    reached.add("llama3 three bands")
            if any(t in (low, high) for t in turns):
                reached.add("llama3 on a band edge")
        if c["method"] in ("dynamic_ntk", "longrope"):
            side = "above" if p["seq_len"] > p["original_max_len"] else "within"
            reached.add(f"{c['method']} {side} L")
    return reached


# One JSON string each way per chunk, parsed by JSON.parse and json.loads: Playwright's own
# transfer of the ~10^6 numbers back (each an object of its protocol, built and read in Python)
# cost several times the computation, and of the cases there (its argument validator walks every
# value, ~2 CPU-s for the grid) as much again. JSON keeps every finite float64 exactly (shortest
# round-trip digits); NaN and Infinity become null, which ``_rel`` reads as not finite, as it
# reads NaN and Infinity. The cases hold finite numbers only.
_RUN_CASES = """
(cases) => JSON.stringify(JSON.parse(cases).map((c) => {
  try {
    const s = posencRef.scaled(c.method, c.dim, c.base, c.params);
    const at = c.positions.map((m) => posencRef.cosSin(m, s.invFreq, s.attentionFactor));
    return {
      invFreq: Array.from(s.invFreq),
      attentionFactor: s.attentionFactor,
      cos: at.map((x) => Array.from(x.cos)),
      sin: at.map((x) => Array.from(x.sin)),
      bound: posencRef.decayBound(c.distances, s.invFreq),
      score: posencRef.selfScore(c.distances, s.invFreq),
    };
  } catch (error) {
    return { error: error.message };
  }
}))
"""


def _open(tab, site, src: str, width: int = 1400):
    """The page, loaded, with every widget started and its model list in.

    The tests end with :func:`_clean`, which waits for every request to end before judging.
    """
    page = tab.page
    page.set_viewport_size({"width": width, "height": 1000})
    page.goto(site.page_url(src), wait_until="load")
    page.wait_for_function(WIDGETS_READY)
    return page


def _clean(tab) -> None:
    """No request left the host and nothing failed, once every request the page made has ended."""
    tab.page.wait_for_load_state("networkidle")
    tab.assert_clean()


def _explorer(page):
    page.wait_for_selector("[data-pe-widget=explorer]")
    page.wait_for_function(
        "() => document.querySelector('[data-pe-widget=explorer]').dataset.peZoo"
    )
    return page.locator("[data-pe-widget=explorer]")


@pytest.mark.browser
def test_explorer_formulas_equal_the_package_on_a_grid(tab_without_search, site):
    """At every setting of the grid the explorer's numbers are the package's (see the module)."""
    cases = grid()
    valid = [
        c
        for c in cases
        if not isinstance(package_frequencies(c["method"], c["dim"], c["base"], c["params"]), str)
    ]
    # What explorer.md says about this grid.
    assert len(valid) > 1000
    assert min(c["base"] for c in valid) == 1.5 and max(c["base"] for c in valid) == 1e7
    assert min(c["dim"] for c in valid) == 2 and max(c["dim"] for c in valid) == 512
    assert {c["params"].get("factor", 1.0) for c in valid} >= {1.0, 64.0}
    assert _coverage(cases) >= {
        "refused",
        "yarn low < 0",
        "yarn high > dim - 1",
        "yarn fallback",
        "yarn truncate off",
        "llama3 l == h",
        "llama3 three bands",
        "llama3 on a band edge",
        "dynamic_ntk within L",
        "dynamic_ntk above L",
        "longrope within L",
        "longrope above L",
    }
    page = _open(tab_without_search, site, "explorer.md")
    problems = []
    for start in range(0, len(cases), 200):
        chunk = cases[start : start + 200]
        results = json.loads(page.evaluate(_RUN_CASES, json.dumps(chunk, allow_nan=False)))
        problems += compare_many(chunk, results)
    print(
        f"\nexplorer grid: {len(cases)} settings ({len(valid)} valid); worst relative errors:",
        {k: f"{v:.2g}" for k, v in WORST.items()},
    )
    assert problems == [], "\n".join(problems[:20])
    _clean(tab_without_search)


def test_explorer_comparison_catches_a_drift():
    """The comparison fails on a formula off by one part in 1e9 (the test can fail)."""
    case = grid()[1]  # linear
    omega, a = package_frequencies(case["method"], case["dim"], case["base"], case["params"])
    good = {"invFreq": omega, "attentionFactor": a}
    good.update(package_quantities(omega, a, case["positions"], case["distances"]))
    assert compare(case, good) == []
    drifted = dict(good, invFreq=[w * (1 + 1e-9) for w in omega])
    assert any("inv_freq" in p for p in compare(case, drifted))
    drifted = dict(good, bound=[b * (1 + 1e-9) + 1e-9 for b in good["bound"]])
    assert any("decay bound" in p for p in compare(case, drifted))


# --- the page, driven as a reader would ---------------------------------------------------


def _zoo_specs():
    from posenc_ref.models import zoo_rows

    return zoo_rows()


def state_case(state: dict, rows) -> dict:
    """The package call that an explorer state stands for (as explorer.js's methodParams)."""
    m, seq_len, L = state["method"], state["position"] + 1, state["L0"]
    params: dict = {}
    if m in ("linear", "ntk_aware"):
        params = {"factor": state["factor"]}
    elif m == "dynamic_ntk":
        params = {"factor": state["factor"], "seq_len": seq_len, "original_max_len": L}
    elif m == "yarn":
        params = {
            "factor": state["factor"],
            "original_max_len": L,
            "beta_fast": state["betaFast"],
            "beta_slow": state["betaSlow"],
            "truncate": state["truncate"],
        }
        if state["attentionOverride"] is not None:
            params["attention_factor"] = state["attentionOverride"]
    elif m == "llama3":
        params = {
            "factor": state["factor"],
            "low_freq_factor": state["lowFreq"],
            "high_freq_factor": state["highFreq"],
            "original_max_len": L,
        }
    elif m == "longrope":
        scaling = rows[state["longropeSource"]]["spec"].scaling
        params = {
            "short_factor": scaling["short_factor"],
            "long_factor": scaling["long_factor"],
            "original_max_len": L,
            "seq_len": seq_len,
            "factor": state["factor"],
        }
        if state["attentionOverride"] is not None:
            params["attention_factor"] = state["attentionOverride"]
    return {
        "method": m,
        "dim": state["dim"],
        "base": state["base"],
        "params": params,
        "positions": [state["position"]],
        "distances": None,
    }


def check_widget(found: dict, rows) -> list[str]:
    """The explorer's current result equals the package's for its current state."""
    state, result = found["state"], found["result"]
    case = state_case(state, rows)
    if result is None:
        return compare(case, {"error": found["error"]})
    js = {
        "invFreq": result["invFreq"],
        "attentionFactor": result["attentionFactor"],
        "cos": [result["cos"]],
        "sin": [result["sin"]],
    }
    if result["bound"] is None:  # a widget without the decay panel: nothing more to compare
        case["distances"] = [0]
        mine = package_quantities(result["invFreq"], result["attentionFactor"], [0], [0])
        js["bound"], js["score"] = mine["bound"], mine["score"]
    else:  # the curves, and the values the readout quotes at the chosen position
        at = "boundAtPosition" in result
        case["distances"] = result["distances"] + ([state["position"]] if at else [])
        js["bound"] = result["bound"] + ([result["boundAtPosition"]] if at else [])
        js["score"] = result["score"] + ([result["scoreAtPosition"]] if at else [])
    return compare(case, js)


@pytest.mark.browser
def test_every_released_family_loads_with_the_package_frequencies(tab_without_search, site):
    """Picking a family sets the controls so that the explorer computes RopeSpec.frequencies."""
    rows = _zoo_specs()
    page = _open(tab_without_search, site, "explorer.md")
    explorer = _explorer(page)
    zoo = json.loads((site.directory / "data" / "zoo.json").read_text(encoding="utf-8"))["families"]
    assert [f["name"] for f in zoo] == [r["name"] for r in rows]
    picker = explorer.get_by_label("load a released model")
    problems, loaded = [], 0
    for index, (family, row) in enumerate(zip(zoo, rows, strict=True)):
        if not family["supported"]:
            continue
        picker.select_option(str(index))
        found = widget_state(explorer)
        spec = row["spec"]
        expected = spec.frequencies(found["state"]["position"] + 1)
        name = f"{row['name']} {row['layer_type'] or ''}"
        if found["result"] is None:
            problems.append(f"{name}: {found['error']}")
            continue
        loaded += 1
        assert (found["state"]["dim"], found["state"]["headDim"]) == (
            spec.rotary_dim,
            spec.head_dim,
        )
        if (
            _record("family inv_freq", _rel(found["result"]["invFreq"], expected.inv_freq.tolist()))
            > RTOL
        ):
            problems.append(f"{name}: inv_freq differs from RopeSpec.frequencies")
        if _rel(found["result"]["attentionFactor"], expected.attention_factor) > RTOL:
            mine = found["result"]["attentionFactor"]
            problems.append(f"{name}: attention factor {mine} != {expected.attention_factor}")
        problems += check_widget(found, rows)
    assert loaded >= len(rows) - 2, f"only {loaded} of {len(rows)} families could be loaded"
    assert problems == [], "\n".join(problems)
    # LongRoPE past L: move the position beyond the original context, the long list applies.
    phi = next(i for i, f in enumerate(zoo) if f["method"] == "longrope")
    picker.select_option(str(phi))
    position = explorer.get_by_label("position m", exact=True)
    position.fill(str(zoo[phi]["context"] + 10))
    position.press("Enter")
    found = widget_state(explorer)
    expected = rows[phi]["spec"].frequencies(found["state"]["position"] + 1)
    assert found["state"]["position"] == zoo[phi]["context"] + 10
    assert _rel(found["result"]["invFreq"], expected.inv_freq.tolist()) <= RTOL
    _clean(tab_without_search)


@pytest.mark.browser
def test_explorer_controls_are_labelled_and_work_by_keyboard(tab_without_search, site):
    """Every control has an accessible name; arrow keys, typing and selects update the numbers."""
    rows = _zoo_specs()
    page = _open(tab_without_search, site, "explorer.md")
    explorer = _explorer(page)
    unnamed = explorer.evaluate(
        """(root) => [...root.querySelectorAll("input, select")].filter((e) => {
             const label = [...(e.labels || [])].map((l) => l.textContent.trim()).join(" ");
             return !(label || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby"));
           }).map((e) => e.outerHTML)"""
    )
    assert unnamed == []
    tree = explorer.aria_snapshot()
    for name in ["base n", "rotary width d", "factor s", "position m", "pair i"]:
        assert f'slider "{name} (slider)"' in tree, tree
        assert f'spinbutton "{name}"' in tree, tree
    assert 'combobox "scaling method"' in tree and 'combobox "load a released model"' in tree
    problems = []

    def check():
        found = widget_state(explorer)
        assert found["result"] is not None, found["error"]
        problems.extend(check_widget(found, rows))
        return found["state"]

    base = explorer.get_by_role("slider", name="base n (slider)")
    before = check()["base"]
    base.focus()
    for _ in range(5):
        base.press("ArrowRight")
    after = check()["base"]
    assert after > before
    base.press("Home")
    assert check()["base"] == pytest.approx(10**0.31, rel=0.01)
    method = explorer.get_by_label("scaling method")
    for value in ["none", "linear", "ntk_aware", "dynamic_ntk", "yarn", "llama3", "longrope"]:
        method.select_option(value)
        check()
        explorer.get_by_role("slider", name="position m (slider)").press("PageUp")
        check()
        explorer.get_by_role("slider", name="pair i (slider)").press("End")
        check()
    method.select_option("yarn")
    override = explorer.get_by_label("explicit attention factor a")
    override.check()
    box = explorer.get_by_label("attention factor a", exact=True)
    box.fill("0.8")
    box.press("Enter")
    assert check()["attentionOverride"] == 0.8
    truncate = explorer.get_by_label("truncate (floor/ceil the range)")
    truncate.press("Space")
    assert check()["truncate"] is False
    # Typed values that the package refuses show its error, naming the argument.
    method.select_option("ntk_aware")
    dim = explorer.get_by_label("rotary width d", exact=True)
    dim.fill("2")
    dim.press("Enter")
    error = explorer.locator(".pe-error")
    assert error.is_visible()
    assert error.text_content() == "dim must be an even integer >= 4 for NTK scaling, got 2"
    problems += check_widget(widget_state(explorer), rows)
    dim.fill("64")
    dim.press("Enter")
    assert not error.is_visible()
    check()
    assert problems == [], "\n".join(problems)
    _clean(tab_without_search)


_HEAD = (
    "(root) => [...root.querySelectorAll('rect[data-pair]')].map((r) => r.getAttribute('class'))"
)


@pytest.mark.browser
def test_explorer_head_is_coloured_from_the_pre_training_frequencies(tab_without_search, site):
    """At the default (Llama 3.1: d 128, base 500000, L0 8192, s = 8), blue = 35 pairs.

    35 pairs turn at least once within L0 with the pre-training frequencies, 32 with Llama 3's
    (colouring from those marked 3 protected pairs as breaking); Llama 3 keeps the other 29
    within the arc they swept up to s L0, so none is amber. Without a method the 29 are amber.
    """
    from posenc_ref import inv_freq
    from posenc_ref.rope_scaling import llama3

    L0, s = 8192, 8.0
    omega, scaled = inv_freq(128, 500000.0), llama3(128, 500000.0).inv_freq  # Meta's defaults
    fast = L0 * omega / (2 * math.pi) >= 1
    assert int(fast.sum()) == 35
    assert int((L0 * scaled / (2 * math.pi) >= 1).sum()) == 32
    kept = s * L0 * scaled <= L0 * omega * (1 + 1e-12)
    expected = [
        "pe-cell-fast" if f else "pe-cell-kept" if k else "pe-cell-slow"
        for f, k in zip(fast.tolist(), kept.tolist(), strict=True)
    ]
    page = _open(tab_without_search, site, "explorer.md")
    explorer = _explorer(page)
    state = widget_state(explorer)["state"]
    assert (state["method"], state["dim"], state["base"], state["L0"], state["factor"]) == (
        "llama3",
        128,
        500000,
        L0,
        s,
    )
    colours = explorer.evaluate(_HEAD)
    assert colours == expected
    assert (colours.count("pe-cell-kept"), colours.count("pe-cell-slow")) == (29, 0)
    explorer.get_by_label("scaling method").select_option("none")
    colours = explorer.evaluate(_HEAD)
    assert (colours.count("pe-cell-fast"), colours.count("pe-cell-slow")) == (35, 29)
    _clean(tab_without_search)


@pytest.mark.browser
def test_explorer_rotation_says_seen_where_it_draws_inside_the_arc(tab_without_search, site):
    """The readout's verdict is the drawing's: the angle mod 2 pi against the arc [0, L0 w)."""
    from posenc_ref import inv_freq

    page = _open(tab_without_search, site, "explorer.md")
    explorer = _explorer(page)
    explorer.get_by_label("scaling method").select_option("none")
    pair, L0 = 40, 8192
    w = float(inv_freq(128, 500000.0)[pair])
    assert L0 * w < 2 * math.pi  # a partial arc
    position = explorer.get_by_label("position m", exact=True)
    readout = explorer.locator(".pe-panel-rotation .pe-readout")
    for m in (L0 - 1, L0, 12000, 23000, 40000):
        position.fill(str(m))
        position.press("Enter")
        assert widget_state(explorer)["state"]["pair"] == pair
        seen = math.fmod(m * w, 2 * math.pi) < L0 * w
        text = readout.text_content()
        assert ("lies on the arc" in text) == seen, (m, text)
        assert ("Out of the pre-training range" in text) == (not seen), (m, text)
    assert math.fmod(23000 * w, 2 * math.pi) < L0 * w < 23000 * w  # past one turn, seen again
    _clean(tab_without_search)


# --- the widgets on the derivation pages ------------------------------------------------------


def _widget_pages(site) -> dict[str, int]:
    """Built nav pages with widgets (the explorer's included): how many each has."""
    from test_site import PAGES  # noqa: PLC0415 (the nav, as the other site tests read it)

    found = {}
    for src in PAGES:
        html = site.directory / urlsplit(site.page_url(src)).path.lstrip("/") / "index.html"
        count = len(re.findall(r'class="pe-widget"', html.read_text(encoding="utf-8")))
        if count:
            found[src] = count
    return found


def test_the_widget_tests_see_every_widget_page(site):
    """test_site.py's widget tests, parametrized from the Markdown, cover every built widget page.

    They are parametrized per page (so that they share the page's one load with the other checks
    of that page); a widget placed by an include or a hook would otherwise go unchecked.
    """
    from test_site import WIDGET_PAGES  # noqa: PLC0415

    assert sorted(_widget_pages(site)) == sorted(WIDGET_PAGES)
    assert "explorer.md" in WIDGET_PAGES


def test_widgets_sit_beside_their_derivation_with_a_link_to_the_function(site):
    """At least three widgets on derivation pages, each with a caption linking its function.

    The caption is the paragraph right after the widget: it links the API entry of the function
    the widget mirrors, as the captions of the static figures do.
    """
    pages = {src: n for src, n in _widget_pages(site).items() if src != "explorer.md"}
    assert sum(pages.values()) >= 3, pages
    problems = []
    for src in pages:
        html = (
            site.directory / urlsplit(site.page_url(src)).path.lstrip("/") / "index.html"
        ).read_text("utf-8")
        for m in re.finditer(r'<div class="pe-widget"[^>]*></div>', html):
            caption = html[m.end() : html.find("</p>", m.end())]
            if not re.search(r'href="[^"]*api/[\w.]+/#posenc_ref\.', caption):
                problems.append(f"{src}: a widget without a caption linking its function")
    assert problems == []


@pytest.mark.browser
def test_widgets_start_after_instant_navigation(tab_without_search, site):
    """After an in-place page swap (Material's instant navigation) the explorer still starts.

    The click goes from the home page to the explorer; the explorer must load its model list and
    compute, as on a fresh load.
    """
    page = tab_without_search.page
    page.goto(site.url, wait_until="networkidle")
    page.evaluate("() => { window.__same_document = true; }")
    page.locator("article a[href$='explorer/']").first.click()
    page.wait_for_url(site.page_url("explorer.md") + "**")
    explorer = _explorer(page)
    assert page.evaluate("() => window.__same_document === true"), "the click reloaded the page"
    assert explorer.evaluate("(e) => e.posencExplorer.result !== null")
    _clean(tab_without_search)
