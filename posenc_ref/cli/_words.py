r"""The command line's own words: its name, its examples, and hints that name flags.

The reader's messages are written for the Python API (``pass layout='half'``); on the command
line the same hint reads ``pass --layout half``. :func:`cli_words` rewrites the keywords that
are also flags; the rest of a message is kept as it is.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

NAMES = ("posenc-ref", "posenc_ref")  # the console scripts pyproject.toml declares

EXAMPLES = {
    "inspect": [
        ("explain a config file", "inspect config.json"),
        ("a model in the local Hugging Face cache", "inspect Qwen/Qwen3-8B"),
        ("the same as JSON", "inspect Qwen/Qwen3-8B --json"),
        ("every cached model, one row each", "inspect --cache"),
        ("only the YaRN ones, as JSON", "inspect --cache --where rope_type=yarn --json"),
        (
            "Mistral Large 4 with its checkpoint's LeRoPE tensor",
            "inspect Mistral-Large-4/ --lerope-alpha Mistral-Large-4/",
        ),
    ],
    "compare": [
        ("a base model and its fine-tune", "compare base/config.json tuned/config.json"),
        ("two cached models, as JSON", "compare meta-llama/Llama-3.1-8B org/My-Llama --json"),
        ("at chosen positions past the original context", "compare a.json b.json --at 20000"),
    ],
    "vectors": [("reference vectors of a model's RoPE", "vectors config.json -o rope.safetensors")],
    "verify": [("check your outputs against them", "verify rope.safetensors outputs.npz")],
}
"""Subcommand -> (what it does, the arguments): the examples ``--help`` shows."""


def prog() -> str:
    """How the user ran the command: ``posenc-ref`` (or ``posenc_ref``), else ``python -m``."""
    import sys

    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name in NAMES else "python -m posenc_ref"


def examples(command: str | None, program: str) -> str:
    """The ``examples:`` block of a help text (the first of each subcommand's for the top level)."""
    commands = [command] if command is not None else list(EXAMPLES)
    lines = ["examples:"]
    for name in commands:
        listed = EXAMPLES.get(name, [])
        for what, arguments in listed if command is not None else listed[:1]:
            lines.append(f"  {program} {arguments}")
            lines.append(f"      {what}")
    return "\n".join(lines)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, which fills descriptions, keeping an ``examples:`` block as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


# Python keyword hints -> flags: layout='half' -> --layout half, layer_type='x' -> --layer-type x
_REWRITES = [
    (re.compile(r"\blayout=(['\"])([\w.-]*)\1"), r"--layout \2"),
    (re.compile(r"\blayer_type=(['\"])([^'\"]*)\1"), r"--layer-type \2"),
    (re.compile(r"\blayer_type (['\"])([^'\"]*)\1"), r"--layer-type \2"),
    (re.compile(r"\bpass layer_type=(?=$|[\s:;,.)])"), "pass --layer-type T"),
    (re.compile(r"\blayer_type\b(?!s)"), "--layer-type"),
    # the messages' own hint names the flag already: "(inspect: --lerope-alpha FILE)"
    (
        re.compile(r"\bPass its values as lerope_alpha= \(inspect: (--lerope-alpha FILE)\)"),
        r"Give them with \1",
    ),
    (re.compile(r"\blerope_alpha\b"), "--lerope-alpha"),
]


def cli_words(message: str) -> str:
    """``message`` with the Python keywords that are also flags written as those flags."""
    for pattern, replacement in _REWRITES:
        message = pattern.sub(replacement, message)
    return message
