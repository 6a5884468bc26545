"""What every trait of a family row shares: the base class, and the type of a layer rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# A rule of the config (and its layer count): see posenc_ref.models._rules.
LayerRule = Callable[[Mapping[str, Any], "int | None"], list]


class Trait:
    """What every trait answers: the keys it makes its family's code read."""

    rope_keys: frozenset[str] = frozenset()

    reads: frozenset[str] = frozenset()

    def keys(self) -> dict[str, str]:
        """Top-level keys this trait reads -> what they mean (refused for other families)."""
        return dict.fromkeys(sorted(self.reads), "read by its code")
