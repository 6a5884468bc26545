r"""The table of mistakes: each common bug a row, a model that predicts the output, an example.

:data:`BUG_MODELS` is the table of the mistakes the diagnosis knows, one row each, in the order
a report lists them. A row (:class:`~._setting.BugModel`) holds a title, a small function of
the :class:`~._setting.Setting` (the reference, the calls the user's function received, what
was read off its output) that returns the candidate models of that mistake (none when it cannot
apply, several when it has a parameter: each common base, each low-precision dtype), the kind
of mistake it is, and its example: a wrong function written the way the mistake is made, with
its reference, which the check must name (``tests/test_testing_bugs.py`` runs every row's
example, and the list on the check page is :func:`bug_list`). Adding a bug is adding a row.

The rows live by concern: ``_bugs_rotation.py`` (pairs, positions, the rotation, widths,
heads), ``_bugs_frequencies.py`` (bases and scaling methods), ``_bugs_conventions.py``
(engines' conventions), ``_bugs_calls.py`` (call patterns, M-RoPE), ``_bugs_precision.py``.
:func:`candidate_models` runs the table; :func:`~._setting.evaluate` runs one candidate on the
inputs the user's function received and returns its largest error / allowance: at most 1 means
the model reproduces the user's output, and the bug is named. Nothing is inferred from the size
of an error alone.
"""

from __future__ import annotations

from ..rope import RotaryEmbedding
from ._bugs_calls import CALL_BUG_MODELS
from ._bugs_conventions import CONVENTION_BUG_MODELS
from ._bugs_frequencies import COMMON_BASES, FREQUENCY_BUG_MODELS
from ._bugs_precision import PRECISION_BUG_MODELS
from ._bugs_rotation import ROTATION_BUG_MODELS
from ._calls import Call
from ._setting import BugModel, Hypothesis, Setting

__all__ = ["BUG_MODELS", "COMMON_BASES", "GROUPS", "candidate_models", "bug_list"]

BUG_MODELS: dict[str, BugModel] = {
    **ROTATION_BUG_MODELS,
    **FREQUENCY_BUG_MODELS,
    **CONVENTION_BUG_MODELS,
    **CALL_BUG_MODELS,
    **PRECISION_BUG_MODELS,
}
"""Bug name to its row, in the order a report lists the matches."""

GROUPS = {
    "pairs": "Pairs and layouts",
    "positions": "Positions",
    "rotation": "The rotation",
    "widths": "Widths",
    "heads": "Heads",
    "frequencies": "Frequencies",
    "scaling": "Scaling methods",
    "conventions": "Engines' conventions",
    "call patterns": "Call patterns",
    "M-RoPE": "M-RoPE with images and videos",
    "precision": "Low precision",
}
"""The kinds of mistake, in the order the check page lists them."""


def candidate_models(reference: RotaryEmbedding, calls: list[Call]) -> list[Hypothesis]:
    """Every candidate model of every row, for ``reference`` and the calls made."""
    setting = Setting(reference, calls)
    return [h for row in BUG_MODELS.values() for h in row.candidates(setting)]


def bug_list(table: dict[str, BugModel] | None = None) -> str:
    """The table as Markdown, one line per row under its kind, each with its example's name.

    What the check page prints: the rows and their examples, so the page cannot list a bug the
    table lacks, or miss one it has.
    """
    table = BUG_MODELS if table is None else table
    lines = []
    for group, heading in GROUPS.items():
        rows = [row for row in table.values() if row.group == group]
        if not rows:
            continue
        titles = "; ".join(row.title for row in rows)
        lines.append(f"- **{heading}**: {titles}.")
    return "\n".join(lines)
