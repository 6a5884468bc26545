r"""``inspect --cache``: every model in the local Hugging Face cache, one row each.

The cache is found as huggingface_hub finds it (:func:`posenc_ref._hub_cache.hub_cache`:
``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``, ``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub``,
``~/.cache/huggingface/hub``). Each ``models--ORG--NAME`` folder is one model; its config is the
one ``inspect ORG/NAME`` reads. A model whose config is missing or refused gets a row with the
reason. Nothing is downloaded.

Rows are filtered by ``--where KEY=VALUE`` (or ``KEY!=VALUE``): numbers compare as numbers
(``base=1e6`` matches 1000000), text case-insensitively with shell wildcards (``id=Qwen/*``). A
model with one RoPE per layer type matches when any of its layer types does.
"""

from __future__ import annotations

import difflib
import fnmatch
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._hub_cache import cached_config, hub_cache

PROGRESS_FROM = 20  # models; a cache this large gets a progress line on stderr

# --where keys: the row's own (one value) and the RoPE's (one value per layer type).
MODEL_KEYS = ("id", "model_type", "encoding", "status")
ROPE_KEYS = (
    "layer_type",
    "rope_type",
    "layout",
    "head_dim",
    "rotary_dim",
    "base",
    "factor",
    "original_max_len",
    "max_len",
)
WHERE_KEYS = MODEL_KEYS + ROPE_KEYS


def cached_ids(cache: Path | None = None) -> list[str]:
    """Model ids with a folder in the cache (``models--ORG--NAME`` -> ``ORG/NAME``), sorted."""
    cache = hub_cache() if cache is None else cache
    if not cache.is_dir():
        return []
    ids = []
    for folder in cache.iterdir():
        if folder.name.startswith("models--") and folder.is_dir():
            ids.append(folder.name[len("models--") :].replace("--", "/", 1))
    return sorted(ids, key=str.lower)


def close_ids(model_id: str, cache: Path | None = None, count: int = 3) -> list[str]:
    """Ids in the cache that read like ``model_id`` (a case slip, a missing letter)."""
    ids = cached_ids(cache)
    lowered = {i.lower(): i for i in ids}
    if model_id.lower() in lowered:  # only the case differs: that one, and no guesses
        return [lowered[model_id.lower()]] if lowered[model_id.lower()] != model_id else []
    close = difflib.get_close_matches(model_id.lower(), list(lowered), n=count, cutoff=0.75)
    return [lowered[i] for i in close if lowered[i] != model_id]


@dataclass
class Row:
    """One model of the cache: its id, where its config is, and what was read (or why not)."""

    id: str
    config: str | None = None
    model_type: str | None = None
    encoding: str | None = None
    layers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def status(self) -> str:
        return "ok" if self.error is None else "error"

    def values(self, key: str) -> list[Any]:
        """The row's values of a ``--where`` key (one per layer type for RoPE keys)."""
        if key in MODEL_KEYS:
            return [getattr(self, key)]
        return [layer.get(key) for layer in self.layers]

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "status": self.status,
            "config": self.config,
            "model_type": self.model_type,
            "encoding": self.encoding,
            "layers": self.layers,
            "notes": self.notes,
            "error": self.error,
        }


def rope_row(spec: Any) -> dict[str, Any]:
    from ._schema import plain

    return {
        "layer_type": spec.layer_type,
        "rope_type": spec.rope_type,
        "layout": spec.layout,
        "head_dim": spec.head_dim,
        "rotary_dim": spec.rotary_dim,
        "base": plain(float(spec.base)),
        "factor": plain(spec.factor),
        "original_max_len": spec.original_max_len,
        "max_len": spec.max_len,
    }


def read_row(model_id: str, read: Callable[[Path], Any], cache: Path) -> Row:
    """The row of one cached model; ``read`` turns a config path into an encoding or raises."""
    row = Row(model_id)
    try:
        path, repo = cached_config(model_id)
    except (ValueError, OSError) as error:
        row.error = str(error)
        return row
    if path is None:
        row.error = f"no config.json in {repo}/snapshots/ (the model's files are not all cached)"
        return row
    row.config = str(path)
    try:
        encoding = read(path)
    except Exception as error:  # noqa: BLE001 - every failure becomes the row's reason
        # the row names the model, and the config's path is in the JSON: not again in the reason
        row.error = (str(error) or type(error).__name__).replace(str(path), "its config.json")
        return row
    row.model_type, row.encoding = encoding.model_type, encoding.kind
    row.notes = list(encoding.notes)
    if encoding.kind == "rope":
        row.layers = [rope_row(spec) for spec in encoding.specs.values()]
    return row


def scan(read: Callable[[Path], Any], cache: Path | None = None, progress=None) -> list[Row]:
    """Every model of the cache, read by ``read``; ``progress`` (default stderr) on a large one."""
    cache = hub_cache() if cache is None else cache
    ids = cached_ids(cache)
    stream = sys.stderr if progress is None else progress
    show = len(ids) >= PROGRESS_FROM
    rows = []
    for done, model_id in enumerate(ids, 1):
        if show:
            end = "\r" if getattr(stream, "isatty", lambda: False)() else "\n"
            if end == "\r" or done == 1 or done % 10 == 0 or done == len(ids):
                print(f"reading {done}/{len(ids)} models in {cache}", end=end, file=stream)
        rows.append(read_row(model_id, read, cache))
    if show and getattr(stream, "isatty", lambda: False)():
        print(file=stream)
    return rows


# --------------------------------------------------------------------------- --where


@dataclass(frozen=True)
class Where:
    """One ``--where`` filter: ``key``, ``value`` and whether it is negated (``!=``)."""

    key: str
    value: str
    negated: bool = False

    @classmethod
    def parse(cls, text: str) -> Where:
        negated = "!=" in text
        key, sep, value = text.partition("!=" if negated else "=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValueError(f"--where {text}: give KEY=VALUE or KEY!=VALUE, e.g. rope_type=yarn")
        if key not in WHERE_KEYS:
            raise ValueError(
                f"--where {text}: unknown key {key!r}; the keys: {', '.join(WHERE_KEYS)}"
            )
        return cls(key, value.strip(), negated)

    def matches(self, row: Row) -> bool:
        found = any(same(value, self.value) for value in row.values(self.key))
        return found != self.negated


def same(value: Any, wanted: str) -> bool:
    """Whether a row's value is ``wanted``: as numbers where both are, else as text patterns."""
    if value is None:
        return wanted.lower() in ("none", "null", "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(value) == float(wanted)
        except ValueError:
            return False
    return fnmatch.fnmatchcase(str(value).lower(), wanted.lower())


def filtered(rows: Iterable[Row], wheres: Sequence[Where]) -> list[Row]:
    return [row for row in rows if all(w.matches(row) for w in wheres)]


# --------------------------------------------------------------------------- the table

COLUMNS = ("id", "encoding", "rope type", "layout", "rotary/head", "base", "factor", "contexts")


def joined(values: Iterable[Any], shown: Callable[[Any], str] = str) -> str:
    """Distinct values in order, joined by ``,`` (one per layer type where they differ)."""
    return ",".join(dict.fromkeys(shown(v) for v in values))


def number(value: Any) -> str:
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def cells(row: Row) -> list[str]:
    if row.error is not None:
        return [row.id, "error", *["-"] * (len(COLUMNS) - 2)]
    if not row.layers:
        return [row.id, row.encoding or "-", *["-"] * (len(COLUMNS) - 2)]
    layers = row.layers
    return [
        row.id,
        row.encoding,
        joined(layer["rope_type"] for layer in layers),
        joined(layer["layout"] for layer in layers),
        joined(f"{layer['rotary_dim']}/{layer['head_dim']}" for layer in layers),
        joined((layer["base"] for layer in layers), number),
        joined((layer["factor"] for layer in layers), number),
        joined(
            f"{number(layer['original_max_len'])}/{number(layer['max_len'])}" for layer in layers
        ),
    ]


def table(rows: Sequence[Row]) -> str:
    """Aligned columns, then the reason of each row that could not be read, wrapped."""
    from ..encodings._describe import wrap

    data = [cells(row) for row in rows]
    widths = [max(len(line[k]) for line in [list(COLUMNS), *data]) for k in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
             for line in [list(COLUMNS), *data]]  # fmt: skip
    failed = [row for row in rows if row.error is not None]
    if failed:
        lines += ["", "could not be read:"]
        lines += [wrap(f"  {row.id}: {row.error}", indent=4) for row in failed]
    return "\n".join(lines)
