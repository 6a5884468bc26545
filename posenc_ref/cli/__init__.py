r"""The command line's parts beside ``posenc_ref.__main__``: JSON, the cache, ``compare``.

Explained on the site: [The command line](cli.md).

``posenc-ref`` (and ``posenc_ref``, and ``python -m posenc_ref``) runs
``posenc_ref.__main__.main``, which reads configs and refuses bad input. This package adds,
each in a module of its own:

- ``_schema``: the JSON every ``--json`` prints, versioned by :data:`SCHEMA_VERSION` and
  described by the JSON Schema :func:`json_schema` (``schema.json``);
- ``_cache``: ``inspect --cache``, every model in the local Hugging Face cache, and ``--where``;
- ``_compare`` and ``_report``: ``compare A B``, what differs between two RoPEs and how far
  their angles part (:func:`compare_specs`), then its text and figure;
- ``_checkpoint``: ``inspect --lerope-alpha``, one tensor read from a checkpoint's folder, a
  shard or a small file (Mistral Large 4's learned frequency scales);
- ``_commands``: these commands' flags and printing;
- ``_words``: the command's name, its help examples, and hints in terms of its flags.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._schema import SCHEMA_VERSION, encoding_json, json_schema

if TYPE_CHECKING:  # at run time, __getattr__: compare works on tensors (torch), inspect does not
    from ._compare import compare_specs

__all__ = ["SCHEMA_VERSION", "json_schema", "encoding_json", "compare_specs"]


def __getattr__(name: str) -> object:
    if name == "compare_specs":
        from ._compare import compare_specs

        return compare_specs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
