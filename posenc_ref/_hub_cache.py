"""A model's ``config.json`` in the local Hugging Face cache, found without huggingface_hub.

The command line takes a model id (``Qwen/Qwen3-8B``) where a file is expected. This module
finds the cache as huggingface_hub does (``HF_HUB_CACHE``, then the older
``HUGGINGFACE_HUB_CACHE``, then ``$HF_HOME/hub``, then ``$XDG_CACHE_HOME/huggingface/hub``, then
``~/.cache/huggingface/hub``) and reads its layout: ``models--ORG--NAME/refs/main`` names the
revision whose ``snapshots/REVISION/config.json`` is the config. Nothing is downloaded and no
network code is imported.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_MODEL_ID = re.compile(r"[\w.-]+(/[\w.-]+)?")


def looks_like_model_id(argument: str) -> bool:
    """Whether ``argument`` reads as ``NAME`` or ``ORG/NAME`` (and not as a ``.json`` file)."""
    # the Hub refuses "--" in names: "org--name" is a cache folder's spelling, not an id
    return (
        bool(_MODEL_ID.fullmatch(argument))
        and not argument.endswith(".json")
        and "--" not in argument
    )


def hub_cache() -> Path:
    """The Hugging Face hub cache, found as huggingface_hub finds it (never imported)."""

    def expand(value: str) -> Path:
        return Path(os.path.expandvars(os.path.expanduser(value)))

    for variable in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(variable):
            return expand(os.environ[variable])
    if os.environ.get("HF_HOME"):
        return expand(os.environ["HF_HOME"]) / "hub"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return expand(cache) / "huggingface" / "hub"


MAX_REF = 255  # a file name's limit; a revision is a 40-character commit hash


def read_ref(ref: Path) -> str:
    """The revision ``refs/main`` names: one folder name of ``snapshots/``, or ``ValueError``.

    Read with a bound (a ref holds a commit hash); a name too long for a file name, or one that
    leaves ``snapshots/`` (``..``, a slash), is refused, never opened.
    """
    try:
        with ref.open("rb") as f:
            raw = f.read(MAX_REF + 2)
    except OSError as error:
        raise ValueError(f"{ref}: cannot read it ({error})") from None
    revision = raw.decode("utf-8", errors="replace").strip()
    if len(revision) > MAX_REF:
        raise ValueError(
            f"{ref} holds more than {MAX_REF} characters; it should name a snapshot (a "
            "40-character commit hash): the cache is damaged, pass the config.json itself"
        )
    if revision in (".", "..") or any(c in revision for c in "/\\\0"):
        raise ValueError(
            f"{ref} names {revision!r}, which is not a folder of snapshots/ (a commit hash): the "
            "cache is damaged, pass the config.json itself"
        )
    return revision


def cached_config(model_id: str) -> tuple[Path | None, Path]:
    """``config.json`` of ``model_id`` in the hub cache (``refs/main``'s snapshot), or None."""
    repo = hub_cache() / ("models--" + model_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        revision = read_ref(ref)
        candidate = snapshots / revision / "config.json"
        if revision and candidate.is_file():
            return candidate, repo
    found = sorted(snapshots.glob("*/config.json")) if snapshots.is_dir() else []
    if len(found) > 1:
        raise ValueError(
            f"{len(found)} snapshots of {model_id} hold a config.json and refs/main names none "
            f"of them; pass one: {', '.join(str(p) for p in found)}"
        )
    return (found[0] if found else None), repo
