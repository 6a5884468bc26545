"""The model zoo's sections on released configs and on the architectures vLLM serves.

``docs/models.md`` calls :func:`render` in a ``markdown-exec`` block: it reads
``tests/data/real_configs_status.json`` (written by ``python -m tests.corpus --write`` and kept
honest by ``tests/test_real_configs.py``, whose expected failures are strict) and returns HTML:
the counts, one row per ``model_type`` with its files' verdicts, and every file that does not
agree with the reason (for a refusal, the feature posenc_ref does not implement). Nothing is
computed for it here.

:func:`render_vllm` lists every architecture of vLLM's registry
(``tests/data/vllm_architectures.json``) with what posenc_ref says of a config that names only
it (``tests/vllm_reading.py``: read at build time, checked by
``tests/test_vllm_architectures.py``).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

STATUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "real_configs_status.json"

# Column heads, in the order of the status file's verdicts.
SHORT = {
    "agrees": "agree",
    "remote code, read from its public code": "remote code, read",
    "refused": "refused",
    "wrong": "wrong",
    "transformers cannot build it": "cannot build",
}


def load(path: Path = STATUS) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _cell(text: str) -> str:
    return f"<td>{html.escape(text)}</td>"


def _why(reason: str) -> str:
    """The reason without the harness's prefixes (the reading that failed, the exception type)."""
    for prefix in ("dict: ", "refused: ", "NotImplementedError: ", "ValueError: "):
        reason = reason.removeprefix(prefix)
    return reason


def render(status: dict | None = None) -> str:
    """The section's HTML: counts, a table per model_type, the files that do not agree."""
    status = load() if status is None else status
    counts = status["counts"]
    verdicts = [v for v in SHORT if v in counts]
    head = ", ".join(f"<strong>{counts[v]}</strong> {html.escape(v)}" for v in verdicts)
    parts = [
        f"<p>{counts['files']} released <code>config.json</code> files, against transformers "
        f"{html.escape(status['transformers'])}: {head}. Files in which <code>inspect</code> "
        f"leaves a layer type unnamed: {counts.get('inspect leaves a layer type unnamed', 0)}.</p>",
        '<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table><thead><tr>'
        "<th>model_type</th>"
        + "".join(f"<th>{html.escape(SHORT[v])}</th>" for v in verdicts)
        + "</tr></thead><tbody>",
    ]
    for model_type, per in status["per_model_type"].items():
        cells = "".join(_cell(str(per.get(v, "")) or "–") for v in verdicts)
        parts.append(f"<tr><td><code>{html.escape(model_type)}</code></td>{cells}</tr>")
    parts.append("</tbody></table></div></div>")
    others = [(r["model_type"], r) for r in status["files"].values() if r["verdict"] != "agrees"]
    if others:
        seen: Counter = Counter()
        parts.append("<p>Every file that does not agree, and why:</p><ul>")
        for model_type, r in sorted(others, key=lambda x: (x[1]["verdict"], str(x[0]))):
            seen[model_type] += 1
            name = r.get("family") or r["file"]
            parts.append(
                f"<li><code>{html.escape(str(model_type))}</code> ({html.escape(name)}): "
                f"<em>{html.escape(r['verdict'])}</em>: {html.escape(_why(r['reason'] or ''))}</li>"
            )
        parts.append("</ul>")
    return "\n".join(parts)


# Where a word of an identifier ends: after an underscore, or before a capital that follows a
# lower-case letter or a digit.
_WORD_END = re.compile(r"(?<=_)(?=.)|(?<=[a-z0-9])(?=[A-Z])")

# what the reader says, in the table's words
OUTCOMES = {
    "rope": "RoPE",
    "alibi": "ALiBi",
    "learned": "learned table",
    "nope": "no positions",
    "not implemented": "refused: a feature",
    "needs its language model's config": "wrapper: its sub-config decides",
    "refused": "refused: this config",
    "unknown": "not identified",
}


def _breakable(name: str) -> str:
    """``name`` escaped, with a place to wrap between each two of its words.

    ``Qwen2VL|For|Conditional|Generation``, ``qwen3_|vl_|moe_|text``: in a column narrower than
    the name, the browser would otherwise cut it wherever the line ends (``Conditio|nalGenerati``).
    """
    return _WORD_END.sub("<wbr>", html.escape(name))


def render_vllm() -> str:
    """Every architecture of vLLM's two tables: the family read, and what the reader says."""
    from collections import Counter

    from tests.vllm_reading import reading, registry

    data = registry()
    rows, counts = [], Counter()
    for entry in data["architectures"]:
        got = reading(entry["architecture"])
        where = "0002bff" if entry["in_0002bff"] else "0.33.0"
        counts[(where, got["outcome"])] += 1
        text = _why(got["text"])
        if got["outcome"] == "unknown":
            text = "no row of posenc_ref's reads this architecture's family yet"
        elif got["outcome"] == "refused":  # the reader's own words, without the wrapper's
            text = text.split("refused this config: ", 1)[-1]
        # The row already names the architecture: repeated in the sentence, its 30-45 letters
        # without a space made the table wider than the page.
        own = f"{entry['architecture']}'s "
        if text.startswith(own):
            text = "Its " + text.removeprefix(own)
        if len(text) > 160:
            text = text[:157].rsplit(" ", 1)[0] + " ..."
        rows.append(
            f"<tr><td><code>{_breakable(entry['architecture'])}</code></td>"
            f"<td>{html.escape(entry['table'])}, {where}</td>"
            f"<td>{_breakable(str(got['family'] or '–'))}</td>"
            f"<td>{html.escape(OUTCOMES[got['outcome']])}</td>"
            f"<td>{html.escape(text)}</td></tr>"
        )
    old = sum(n for (w, _), n in counts.items() if w == "0002bff")
    unknown = {w: counts[(w, "unknown")] for w in ("0002bff", "0.33.0")}
    new = sum(n for (w, _), n in counts.items() if w == "0.33.0")
    head = (
        f"<p>{old} architectures in the text-generation and multimodal tables of vLLM's "
        f"registry at commit <code>{data['commit'][:12]}</code>, and {new} that vLLM 0.33.0 "
        f"adds: identified from <code>architectures</code> alone, {old - unknown['0002bff']} of "
        f"{old} and {new - unknown['0.33.0']} of {new}. Each row is what "
        "<code>positional_encoding</code> answers for a config naming only the architecture, "
        "with a Llama-7B's widths and <code>rope_theta</code>.</p>"
    )
    table = (
        '<details class="note"><summary>Every architecture, and what the reader says</summary>'
        '<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table><thead><tr>'
        "<th>architecture</th><th>table, registry</th><th>family read</th>"
        "<th>reader</th><th>what it says</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div></div></details>"
    )
    return head + table
