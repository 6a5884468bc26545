"""What the sweep does differently for a family, and why (everything else is generic).

Each entry may set ``model_class`` (which text model of the family to run, where the rule in
``families.py`` picks another holder of the rotary class) and ``overrides`` (config arguments
on top of the tiny sizes: where the family's default config cannot build its own model, or names
its sizes differently). ``why`` says what in the family's code needs it.
"""

from __future__ import annotations

from typing import Any

SPECIAL: dict[str, dict[str, Any]] = {}
