"""The model zoo's table of every transformers family, from the sweep's committed results.

``docs/models.md`` calls :func:`render` in a ``markdown-exec`` block: it reads
``tests/data/hf_sweep_results.json`` (written by ``python -m tests.hf_sweep --write`` and kept
current by ``tests/test_models_sweep.py``) and returns HTML: a filter box, one table per group of
families, the families that do not agree yet with the feature each needs, and the model types
whose rotary class rotates only image or audio positions. Nothing is computed here; no network,
no script from elsewhere (``docs/javascripts/zoo-filter.js`` does the filtering).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent.parent / "tests" / "data" / "hf_sweep_results.json"

GROUPS = (
    ("mrope", "M-RoPE: several position rows (text, image and video positions)"),
    ("mla", "The rotary part is the last coordinates of the head (MLA)"),
    ("nope", "Some layers without RoPE"),
    ("partial", "Partial rotary: the first coordinates of the head"),
    ("whole", "The whole head rotates"),
    ("other", "Not read yet by the sweep"),
)


def load(path: Path = RESULTS) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def group(row: dict) -> str:
    """The table a family goes in (the first that applies, in the order of ``GROUPS``)."""
    if row.get("encoding") is None:
        return "other"
    if row["encoding"].startswith("M-RoPE"):
        return "mrope"
    if "last" in (row.get("rotary_part") or []):
        return "mla"
    if row.get("nope_layers"):
        return "nope"
    if "first" in (row.get("rotary_part") or []):
        return "partial"
    return "whole"


def _join(values, fmt=str) -> str:
    if values is None or values == []:
        return "–"
    if not isinstance(values, list):
        values = [values]
    return " / ".join(fmt(v) for v in values)


def _number(value) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and value >= 10000 and value % 1000 == 0:
        return f"{value:,}".replace(",", " ")
    return f"{value:g}" if isinstance(value, float) else str(value)


def _widths(row: dict) -> str:
    head, rotary = row.get("head_dim"), row.get("rotary_dim")
    if head is None:
        return "–"
    text = f"{_join(head)} / {_join(rotary)}"
    part = [p for p in row.get("rotary_part") or [] if p != "whole"]
    return f"{text} ({_join(part)})" if part else text


def _context(row: dict) -> str:
    original = row.get("original_context")
    top = row.get("max_context")
    if original:
        return f"{_join(original, _number)} → {_number(top)}"
    return _number(top) if top else "–"


def _cell(text: str) -> str:
    return f"<td>{html.escape(text)}</td>"


def _row(row: dict) -> str:
    ok = row["agrees"]
    verdict = "yes" if ok else "not yet"
    title = "" if ok else f' title="{html.escape(row.get("reason") or "")}"'
    model_type = row.get("model_type")
    # the model_type under the family's name where it differs (the cell a config.json names)
    under = (
        f"<br><small><code>{html.escape(model_type)}</code></small>"
        if model_type and model_type != row["family"]
        else ""
    )
    encoding = row.get("encoding")
    if encoding and encoding != "RoPE":  # M-RoPE's rows, layers without RoPE: under the name
        under += f"<br><small>{html.escape(encoding)}</small>"
    cells = [
        f"<td><code>{html.escape(row['family'])}</code>{under}</td>",
        _cell(_join(row.get("rope_type"))),
        _cell((row.get("layout") or "–").replace("->", " → ")),
        _cell(_widths(row)),
        _cell(_join(row.get("base"), _number)),
        _cell(_context(row)),
        f'<td class="zoo-{"ok" if ok else "no"}"{title}>{verdict}</td>',
    ]
    return "<tr>" + "".join(cells) + "</tr>"


HEADER = (
    "<thead><tr><th>family (model_type)</th><th>rope type</th>"
    "<th>layout</th><th>head / rotary</th><th>base</th><th>context</th>"
    "<th>agrees</th></tr></thead>"
)


def render(results: dict | None = None) -> str:
    """The section's HTML: counts, filter, grouped tables, what is missing, vision/audio only."""
    results = load() if results is None else results
    counts = results["counts"]
    rows = list(results["families"].values())
    share = counts["agree"] / counts["text_rotary_families"]
    parts = [
        f"<p>transformers {html.escape(results['transformers'])}: "
        f"<strong>{counts['model_types_with_a_rotary_class']}</strong> model types define a "
        f"rotary class; <strong>{counts['text_rotary_families']}</strong> of them rotate text "
        f"positions, and <code>from_hf_config</code> agrees with "
        f"<strong>{counts['agree']}</strong> of those ({share:.0%}).</p>",
        '<p><input type="search" class="zoo-filter" aria-label="Filter the families" '
        'placeholder="Filter: family, model_type, layout, rope type…"> '
        '<span class="zoo-count" aria-live="polite"></span></p>',
    ]
    for key, title in GROUPS:
        members = sorted((r for r in rows if group(r) == key), key=lambda r: r["family"])
        if not members:
            continue
        parts.append(f'<section class="zoo-group" data-group="{key}">')
        parts.append(f"<h3>{html.escape(title)} ({len(members)})</h3>")
        # Material styles tables without a class, in its own scroll wrapper (wide tables
        # scroll in their box on a phone, not the page)
        parts.append(
            '<div class="md-typeset__scrollwrap"><div class="md-typeset__table"><table>'
            + HEADER
            + "<tbody>"
        )
        parts.extend(_row(r) for r in members)
        parts.append("</tbody></table></div></div></section>")
    missing = sorted((r for r in rows if not r["agrees"]), key=lambda r: r["family"])
    if missing:
        parts.append(f"<h3>Not agreeing yet ({len(missing)}), and what each needs</h3><ul>")
        for r in missing:
            parts.append(
                f"<li><code>{html.escape(r['family'])}</code>: "
                f"{html.escape(r.get('reason') or '')}</li>"
            )
        parts.append("</ul>")
    other = results.get("vision_audio_only") or []
    if other:
        names = ", ".join(f"<code>{html.escape(n)}</code>" for n in other)
        parts.append(
            f"<p>The other {len(other)} model types rotate only image, audio or other "
            f"non-text positions: {names}.</p>"
        )
    return "\n".join(parts)
