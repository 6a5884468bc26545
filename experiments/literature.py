"""The comparison set beside the papers: a protocol of Kazemnejad et al., and five findings.

:func:`mean_reciprocal_rank` is Kazemnejad et al.'s summary over tasks and lengths;
:func:`literature` states each paper's finding in words (no number of theirs that could not be
checked) beside the matching numbers of this run, and computes whether they agree: a paired
difference whose 95 % interval excludes zero, of the sign the paper's finding predicts.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from .compare import FINETUNE_METHODS, KAZEMNEJAD
from .model import ENCODINGS
from .report import NAMES, Results, fmt, fmt_diff
from .stats import Interval, paired

__all__ = ["mean_reciprocal_rank", "literature"]


def mean_reciprocal_rank(r: Results, tasks=("copy", "reverse"), encodings=KAZEMNEJAD) -> dict:
    """Kazemnejad et al.'s summary: each encoding's mean of 1/rank over (task, length) cells.

    In each cell past L0 (every evaluation length up to 2 L0), the encodings are ranked by their
    mean exact-match score over converged seeds (ties share the better rank).
    """
    lengths = [n for n in r.lengths() if r.l0 < n <= 2 * r.l0]
    reciprocal: dict[str, list[float]] = defaultdict(list)
    for task in tasks:
        for n in lengths:
            means = {e: r.cell(task, e, n).mean for e in encodings}
            if any(math.isnan(v) for v in means.values()):
                continue
            for e, v in means.items():
                rank = 1 + sum(other > v for other in means.values())
                reciprocal[e].append(1 / rank)
    return {e: statistics.fmean(v) for e, v in reciprocal.items()}


def _agreement(diff: Interval, expected_sign: int) -> str:
    if diff.n < 2:
        return "not measured yet"
    if diff.excludes_zero():
        return "agrees" if (diff.mean > 0) == (expected_sign > 0) else "disagrees"
    return "not separated by these seeds"


def literature(r: Results) -> str:
    """Each paper's finding beside the matching numbers of this run, with the verdict computed."""
    far = max(r.lengths())
    two = 2 * r.l0
    bullets = []
    ranks = mean_reciprocal_rank(r)
    if ranks:
        order = sorted(ranks, key=lambda e: -ranks[e])
        bullets.append(
            "**Kazemnejad et al. (2023)**: on algorithmic tasks NoPE generalizes to longer inputs "
            "best, and ALiBi, RoPE and the absolute encoding poorly. Here, on copy and reverse "
            "between L0 and 2 L0, the mean reciprocal rank orders them "
            f"{', '.join(NAMES[e] for e in order)} (NoPE {ranks.get('nope', math.nan):.2f}): "
            + ("NoPE first, as in the paper." if order[0] == "nope" and ranks["nope"] > max(
                v for e, v in ranks.items() if e != "nope") else "NoPE not alone in first place, "
               "unlike the paper (a rank has no interval: the orders under Copy and reverse say "
               "which differences the seeds support).")
        )  # fmt: skip
    alibi_rope = paired(r.scores("passkey", "alibi", far), r.scores("passkey", "rope", far))
    alibi_sin = paired(r.scores("passkey", "alibi", far), r.scores("passkey", "sinusoidal", far))
    bullets.append(
        "**Press et al. (2022)**: trained short, ALiBi keeps its perplexity on longer inputs where "
        "the sinusoidal encoding and RoPE do not. Perplexity rewards the recent context, which "
        "ALiBi's penalty favours; passkey asks for one far token. Here, whole passkeys at "
        f"{far // r.l0} L0, ALiBi minus RoPE {fmt_diff(alibi_rope)} "
        f"({_agreement(alibi_rope, 1)}), ALiBi minus sinusoidal {fmt_diff(alibi_sin)} "
        f"({_agreement(alibi_sin, 1)}); the distance figure shows where ALiBi loses the needle."
    )
    copies = [r.cell("copy", e, two).mean for e in ENCODINGS if r.cell("copy", e, two).n]
    verdict = (f"no encoding copies a whole sequence of 2 L0 more than {max(copies):.2f} of the "
               f"time: {'agrees' if max(copies) < 0.5 else 'disagrees'}" if copies
               else "not measured yet")  # fmt: skip
    bullets.append(
        "**Ruoss et al. (2023)**: on algorithmic tasks such as duplicating or reversing a string, "
        "the usual encodings (sinusoidal, relative, RoPE, ALiBi, learned) fail on longer inputs, "
        f"which motivates their randomized positions. Here {verdict}."
    )
    tuned = {m: r.cell("passkey", "rope", far, m, finetune=m) for m in FINETUNE_METHODS}
    pi_gain = paired(r.scores("passkey", "rope", far, "pi", finetune="pi"),
                     r.scores("passkey", "rope", far, "pi"))  # fmt: skip
    adapted = _finetune_convergence(r, "passkey")
    if adapted:
        faster = adapted["pi"][0] > adapted["none"][0]
        speed = (
            "converged within the cap: "
            + ", ".join(f"{name} {done} of {runs}" for name, (done, runs) in (
                ("unscaled", adapted["none"]), ("PI", adapted["pi"]), ("YaRN", adapted["yarn"])))
            + (" (agrees that PI adapts faster)" if faster
               else " (disagrees: here plain fine-tuning adapts faster than PI)")
        )  # fmt: skip
    else:
        speed = "not measured yet"
    bullets.append(
        "**Chen et al. (2023)**: Position Interpolation needs a short fine-tune at the new length, "
        "after which it works, and it adapts faster than plain fine-tuning at that length. Here, "
        f"whole passkeys at {far // r.l0} L0 after the fine-tune: unscaled {fmt(tuned['none'])}, "
        f"PI {fmt(tuned['pi'])}, YaRN {fmt(tuned['yarn'])}; the fine-tune's gain for PI "
        f"{fmt_diff(pi_gain)} ({_agreement(pi_gain, 1)} that PI needs it); {speed}."
    )
    yarn_ntk = paired(
        r.scores("passkey", "rope", far, "yarn"), r.scores("passkey", "rope", far, "ntk")
    )
    yarn_pi = paired(
        r.scores("passkey", "rope", far, "yarn"), r.scores("passkey", "rope", far, "pi")
    )
    temp = paired(r.scores("passkey", "rope", far, "yarn"),
                  r.scores("passkey", "rope", far, "yarn-t1"))  # fmt: skip
    bullets.append(
        "**Peng et al. (2023)**: without fine-tuning YaRN extends further than NTK-aware scaling "
        "and PI, it needs less fine-tuning, and its temperature lowers perplexity. Here, RoPE on "
        "passkey at "
        f"{far // r.l0} L0: YaRN minus NTK-aware {fmt_diff(yarn_ntk)} ({_agreement(yarn_ntk, 1)}), "
        f"YaRN minus PI {fmt_diff(yarn_pi)} ({_agreement(yarn_pi, 1)}), YaRN minus YaRN without "
        f"its temperature {fmt_diff(temp)} ({_agreement(temp, 1)}); on fine-tuning, see the "
        "Chen et al. line."
    )
    nope = paired(r.scores("passkey", "nope", far, "logscale"), r.scores("passkey", "nope", far))
    bullets.append(
        "**Wang et al. (2024)**: NoPE extends past its training length further than RoPE but not "
        "without limit, and a temperature per head extends it more. Here one log-length "
        f"temperature for every head changes NoPE's whole passkeys at {far // r.l0} L0 by "
        f"{fmt_diff(nope)} ({_agreement(nope, 1)})."
    )
    why = (
        "\n\nWhere they differ, the setting explains more than the encodings need to: these "
        f"models have {_parameters(r):,} parameters, three to five orders of magnitude fewer than "
        "the papers', and are trained to a criterion on one synthetic task "
        "rather than on text, with factors up to 8 rather than 16 to 32, and scored on whole "
        "answers rather than perplexity. A result that holds here and in the paper is evidence "
        "that it does not depend on those differences; one that does not is a question about "
        "which of them matters, not a refutation."
    )
    return "\n".join(f"- {b}" for b in bullets) + why


def _finetune_convergence(r: Results, task: str) -> dict[str, tuple[int, int]]:
    """Per fine-tune method: how many of the converged RoPE runs' fine-tunes converged."""
    jobs = [r.jobs[task, "rope", 10000.0, s] for s in r.converged(task, "rope")]
    out = {}
    for m in FINETUNE_METHODS:
        tuned = [j[f"finetune_{m}"] for j in jobs if f"finetune_{m}" in j]
        if tuned:
            out[m] = (sum(t["converged"] for t in tuned), len(tuned))
    return out if len(out) == len(FINETUNE_METHODS) else {}


def _parameters(r: Results) -> int:
    """The trainable parameters of the RoPE model of the full configuration."""
    from .compare import CONFIGS
    from .train import build_model

    return sum(p.numel() for p in build_model(CONFIGS["full"], "rope", 0, 10000.0).parameters())
