"""Which model types of the installed transformers rotate, and what they rotate.

A *rotary family* is a model directory ``transformers/models/<name>/`` whose modeling file
defines a class named ``*RotaryEmbedding``. Each such class is *held* by the modules that
instantiate it (``self.rotary_emb = XRotaryEmbedding(config)``). A rotary class rotates **token
positions** when its holder embeds token ids: the holder, a module it builds, or (for a holder
that is an attention layer) the model that builds that layer has an ``nn.Embedding`` over the
vocabulary (``embed_tokens``, ``word_embeddings``, ``nn.Embedding(config.vocab_size, ...)``).
Every other rotary class rotates patches of images, frames of audio, time-series patches or
atoms: the family is then *vision/audio only* for posenc_ref's purpose (its text model, if it has
one, is another directory's family, or has no RoPE).

A few families are classified by hand, each with the reason (``HAND``): the rule reads source
text, and these holders take embeddings built elsewhere.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import io
import os
import re
from dataclasses import dataclass, field

TOKEN_EMBEDDING = re.compile(
    r"embed_tokens\s*=|word_embeddings\s*=|tok_embeddings\s*=|"
    r"nn\.Embedding\(\s*(?:self\.)?(?:config\.)?(?:text_config\.)?vocab_size"
)

# family -> (True for token positions / False for not, why the rule does not decide it)
HAND: dict[str, tuple[bool, str]] = {
    "muse_glimmer_assistant": (
        True,
        "a speculative-decoding drafter: it takes the target model's token embeddings "
        "(noise_embeds) instead of embedding ids itself, and rotates token positions",
    ),
}


@dataclass
class RotaryClass:
    name: str
    holders: list[str]
    token_positions: bool


@dataclass
class Family:
    """One model directory with a ``*RotaryEmbedding`` class."""

    name: str
    rotary: list[RotaryClass] = field(default_factory=list)
    text: bool = False
    why: str = ""
    # the text model class (a holder of a token-position rotary class) the sweep builds
    model_class: str | None = None

    @property
    def module(self) -> str:
        return f"transformers.models.{self.name}.modeling_{self.name}"


def models_dir() -> str:
    import transformers

    return os.path.join(os.path.dirname(transformers.__file__), "models")


def rotary_dirs() -> list[str]:
    """Every model directory whose modeling file defines a ``*RotaryEmbedding`` class."""
    root = models_dir()
    found = []
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name, f"modeling_{name}.py")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                if re.search(r"^class \w*RotaryEmbedding\(", f.read(), re.M):
                    found.append(name)
    return found


# A top-level class of a modeling file: its ``class`` line, then indented lines, blank lines,
# comments and closing brackets (a header split over lines ends with ``):`` at column 0), up to
# the next line of code at column 0 (a statement, a decorator).
CLASS_LINE = re.compile(r"class\s+(\w+)")
TRAILING_COMMENT = re.compile(r"[ \t]+#[^\"']*$")


@functools.cache
def class_sources(module_name: str) -> dict[str, str]:
    """Source of every top-level class of a module, as ``ast.get_source_segment`` cuts it.

    Read from the lines of the file, not from its parse: ``ast.parse`` of a modeling file (a few
    thousand lines) costs tens of milliseconds, and the sweep, the enumeration and the corpus
    read several hundred files. The reading relies on the files being formatted (ruff): no line
    of a class's body starts at column 0 except closing brackets and comments, and none of
    their strings holds a line that starts with ``class`` or with code at column 0.
    tests/test_models_sweep.py checks it against ``ast`` (every modeling file of transformers
    5.23 gave the same classes and text). Like the segment, the text ends at the last
    statement's last character: trailing blank and comment lines, and a comment closing the
    last line (one without quotes: a quote may close a string), are not part of it.
    """
    mod = importlib.import_module(module_name)
    with open(inspect.getsourcefile(mod), encoding="utf-8") as f:
        return sources_of_classes(f.read())


def sources_of_classes(text: str) -> dict[str, str]:
    """``{name: source}`` of the top-level classes of a formatted Python file's text."""
    lines = io.StringIO(text, newline="").readlines()  # split as ast does: \n, \r, \r\n
    out = {}
    for first, line in enumerate(lines):
        found = CLASS_LINE.match(line)
        if not found:
            continue
        stop = first + 1
        while stop < len(lines) and lines[stop][:1] in " \t\r\n#)]}":
            stop += 1
        while stop > first + 1 and lines[stop - 1].strip()[:1] in ("", "#"):
            stop -= 1
        last = TRAILING_COMMENT.sub("", lines[stop - 1].rstrip())
        out[found.group(1)] = "".join(lines[first : stop - 1]) + last
    return out


def _source(cls: type) -> str:
    return class_sources(cls.__module__).get(cls.__name__, "")


def _module_classes(mod) -> dict[str, type]:
    import torch

    return {
        n: c
        for n, c in vars(mod).items()
        if inspect.isclass(c) and c.__module__ == mod.__name__ and issubclass(c, torch.nn.Module)
    }


def _builds(source: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}(?:\._from_config)?\(", source) is not None


def _embeds_tokens(
    holder: str, classes: dict[str, type], pretrained: type
) -> tuple[bool, str | None]:
    """Whether ``holder``, a module it builds, or the model building it embeds token ids.

    Returns ``(embeds, model)``: ``model`` is the model class to run for it (the holder
    itself, or for an attention layer holding its own rotary module the model above it).
    """
    sources = {n: class_sources(c.__module__).get(n, "") for n, c in classes.items()}
    aliases = _aliases(classes)

    def builds(name: str, target: str) -> bool:
        return _builds(sources[name], target) or any(
            _builds(sources[name], a) or re.search(rf"\b{a}\[", sources[name])
            for a in aliases.get(target, ())
        )

    def near(name: str) -> list[str]:  # the class and the classes it builds
        return [name] + [n for n in classes if n != name and builds(name, n)]

    if issubclass(classes[holder], pretrained):
        found = any(TOKEN_EMBEDDING.search(sources[n]) for n in near(holder))
        return found, holder
    # An attention layer holding its own rotary module: look at the models above it.
    frontier, seen = [holder], {holder}
    for _ in range(4):
        frontier = [n for n in classes if n not in seen and any(builds(n, f) for f in frontier)]
        seen.update(frontier)
        models = [n for n in frontier if issubclass(classes[n], pretrained)]
        if models:  # the first models above decide (a vision tower's own model embeds no ids)
            for model in models:
                if any(TOKEN_EMBEDDING.search(sources[n]) for n in near(model)):
                    return True, model
            return False, None
    return False, None


def _aliases(classes: dict[str, type]) -> dict[str, list[str]]:
    """Class name -> names of module-level tables holding it (``TEMPORAL_BLOCK_CLASSES``)."""
    mod = importlib.import_module(next(iter(classes.values())).__module__)
    out: dict[str, list[str]] = {}
    for name, value in vars(mod).items():
        if isinstance(value, dict) and name.isupper():
            for v in value.values():
                if inspect.isclass(v) and v.__name__ in classes:
                    out.setdefault(v.__name__, []).append(name)
    return out


def classify(name: str) -> Family:
    """The family's rotary classes, their holders, and whether it rotates token positions."""
    # A copy of the one reading per family and process: the sweep asks twice per family (its
    # part's list, then the family's run), the enumeration once more, the corpus once per file.
    return copy.deepcopy(_classify(name))


@functools.cache
def _classify(name: str) -> Family:
    from transformers import PreTrainedModel

    mod = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    classes = _module_classes(mod)
    family = Family(name)
    models: list[str] = []
    for rname, rcls in classes.items():
        if not rname.endswith("RotaryEmbedding"):
            continue
        holders = [n for n, c in classes.items() if c is not rcls and _builds(_source(c), rname)]
        found = [_embeds_tokens(h, classes, PreTrainedModel) for h in holders]
        family.rotary.append(RotaryClass(rname, holders, any(e for e, _ in found)))
        models += [m for e, m in found if e]
    if name in HAND:
        family.text, family.why = HAND[name]
        models += [h for r in family.rotary for h in r.holders]
    else:
        family.text = any(r.token_positions for r in family.rotary)
        family.why = "a holder embeds token ids" if family.text else "no holder embeds token ids"
    if family.text and models:
        family.model_class = models[0]
    return family


def all_families() -> list[Family]:
    return [classify(name) for name in rotary_dirs()]
