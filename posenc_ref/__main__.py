r"""Command line: ``inspect`` a config's positional encoding; RoPE ``vectors`` and ``verify``.

Explained on the site: [Which positional encoding does my model use?](encodings.md) and
[Check your implementation](check.md#check-inspect).

``CONFIG`` is a ``config.json`` file, a folder holding one, or a model id (``Qwen/Qwen3-8B``)
whose config is in the local Hugging Face cache (never downloaded). The config is read by
:func:`posenc_ref.encodings.positional_encoding`, which says which encoding the family's code
uses: learned absolute, sinusoidal, ALiBi, T5 buckets, none, or RoPE (read by
:func:`posenc_ref.models.rope_spec`, once per layer type). The text it prints is written by
``posenc_ref.encodings._describe`` (``describe_encoding``; for a RoPE ``describe``: widths and
layout, base and scaling type, the attention factor, and a per-pair table of frequencies,
wavelengths and turns within the original context); ``--plot FILE`` draws the per-pair
wavelengths (:func:`posenc_ref.plots.check.spec_wavelengths`, needs matplotlib).

``python -m posenc_ref vectors CONFIG.json -o FILE`` writes reference vectors of the config's
RoPE (``.safetensors``, ``.npz`` or ``.json``) and ``python -m posenc_ref verify FILE OUTPUTS``
diagnoses someone's outputs for them (:mod:`posenc_ref.testing`; explained on the site:
[other frameworks](frameworks.md#frameworks-vectors)).

One function per command (``_inspect``, ``_vectors``, ``_verify``, ``_compare``), registered in
``COMMANDS`` with the function adding its parser. The console scripts ``posenc-ref`` and
``posenc_ref`` run :func:`main`. ``--json``, ``inspect --cache`` and ``compare A B`` live in
:mod:`posenc_ref.cli`; messages name the command line's flags (``--layout half``), not the
Python keywords.

Exit status: 0 on success; 2 for a usage error, a missing or unreadable file, bad JSON, a
vectors file that breaks its format, or a config the reader refuses (named in the message); 1
when ``verify`` finds a disagreement or a missing case; 141 when the output's reader goes away
(``| head``), quietly; 3 for a failure inside posenc_ref (a bug: the message says so). No input
file makes it print a traceback.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .cli import _commands as cli
from .cli._words import HelpFormatter, cli_words, examples, prog

if TYPE_CHECKING:  # at run time, __getattr__ below
    from .encodings._describe import describe_encoding
    from .encodings._describe import describe_rope as describe

__all__ = ["main", "describe", "describe_encoding"]


def __getattr__(name: str) -> object:
    # The words of inspect, loaded on first use (PEP 562): --version and --help read no config.
    if name in ("describe", "describe_encoding"):
        from .encodings import _describe

        return _describe.describe_rope if name == "describe" else _describe.describe_encoding
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _wrap(text: str, indent: int = 12) -> str:
    from .encodings._describe import wrap

    return wrap(text, indent=indent)


EXIT_DISAGREES = 1  # verify: the outputs disagree with the vectors
EXIT_USAGE = 2
EXIT_BUG = 3  # a failure inside posenc_ref, never the user's input
EXIT_BROKEN_PIPE = 141  # the shell's status for a process stopped by SIGPIPE
MAX_DEPTH = 64  # a model config nests a few levels; deeper JSON is refused before it is read
MAX_DIGITS = 4300  # Python's limit on the digits of an integer read from text
MAX_BYTES = 64 * 2**20  # a model config is a few kilobytes; /dev/zero-sized input is refused


class _Refused(Exception):
    """A problem with the user's input: printed as ``error: ...`` with exit status 2."""


# --------------------------------------------------------------------------- the parser


# Built once per program name (prog()): a run changes nothing in the parser (its values go to a
# namespace of its own; --where's [] is only read), so each call of main() in a process need
# not rebuild the four subcommands' parsers (about 2 ms of CPU).
@functools.cache
def _parser(program: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=program,
        description="posenc_ref's command line: explain a model's positional encoding.",
        epilog=examples(None, program),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"posenc-ref {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add, _ in COMMANDS.values():
        add(commands)
    for name, sub in commands.choices.items():  # an example per subcommand, under its help
        sub.epilog = examples(name, program)
        sub.formatter_class = HelpFormatter
    return parser


def _add_inspect(commands: argparse._SubParsersAction) -> None:
    inspect = commands.add_parser(
        "inspect",
        help="print which positional encoding a model's config uses, and its numbers",
        description=(
            "Read a model's config.json (transformers' format, old or new) and print its "
            "positional encoding as the family's code decides it: learned absolute, "
            "sinusoidal, ALiBi, T5 buckets, none, or RoPE with its widths, pair layout, base, "
            "scaling type, attention factor, and per pair the frequency, wavelength and turns "
            "within the original context."
        ),
    )
    inspect.add_argument(
        "config",
        metavar="CONFIG",
        nargs="?",
        help="a config.json, a folder holding one, or a model id (ORG/NAME) whose config.json "
        "is in the local Hugging Face cache (nothing is downloaded)",
    )
    inspect.add_argument(
        "--layer-type",
        metavar="T",
        help="only this layer type, for configs with one RoPE per layer type (Gemma 3: "
        "sliding_attention, full_attention); by default every one is explained",
    )
    inspect.add_argument(
        "--layout",
        choices=["interleaved", "half"],
        help="RoPE pair layout, for a model_type posenc_ref does not know",
    )
    inspect.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw a RoPE's per-pair wavelengths to FILE (.svg, .png, .pdf), or into an "
        "existing folder (one file per layer type)",
    )
    inspect.add_argument(
        "--all-pairs", action="store_true", help="list every pair (default: at most 16 rows)"
    )
    inspect.add_argument(
        "--lerope-alpha",
        metavar="FILE",
        help="Mistral Large 4 only: its learned frequency scales (LeRoPE), which the checkpoint "
        "holds and config.json does not. Give the checkpoint's folder or one .safetensors "
        "shard (the tensor lerope.alpha or model.language_model.rotary_emb.alpha is found by "
        "the index or the headers; only its bytes are read), or the values alone in a .npy, "
        ".pt or .json file",
    )
    cli.add_inspect_flags(inspect)


# --------------------------------------------------------------------------- inspect


def _inspect(args: argparse.Namespace) -> int:
    if args.cache or args.config is None:
        return _inspect_cache(args)
    if args.where:
        raise _Refused("--where filters the rows of --cache; add --cache, or leave --where out")
    plot = _plot_target(args.plot) if args.plot else None  # refuse a bad target before printing
    alpha = _lerope_alpha(args.lerope_alpha) if args.lerope_alpha is not None else None
    path = _locate(args.config)
    config = _read_config(path)
    tower = _vision_tower(config)
    if tower is not None and not tower.read_from:  # a vision config alone
        print(cli.inspect_json(args.config, path, None, tower) if args.json else tower.describe())
        return 0
    encoding = _encoding(config, args.layer_type, args.layout, alpha)
    if args.json:
        print(cli.inspect_json(args.config, path, encoding, tower))
        if plot is not None and encoding.kind == "rope":
            _plot(encoding, *plot)
        return 0
    # the package's notes name Python keywords (layout='half'); here they name the flags
    from .encodings._describe import describe_encoding

    print(cli_words(describe_encoding(encoding, all_pairs=args.all_pairs)))
    if tower is not None:  # a vision-language config's tower: its axial RoPE too
        print("\n" + tower.describe())
    if plot is not None:
        if encoding.kind != "rope":
            print(
                "\nnote: --plot draws a RoPE's per-pair wavelengths; this model has no RoPE, "
                "so no figure was written"
            )
        else:
            for written in _plot(encoding, *plot):
                print(f"\nwavelength figure written to {written}")
    return 0


def _inspect_cache(args: argparse.Namespace) -> int:
    if args.config is not None:
        raise _Refused(f"--cache reads every cached model: leave out {args.config}")
    if args.config is None and not args.cache:
        raise _Refused("give a CONFIG (a config.json, a folder or a model id), or --cache")
    if args.plot or args.layer_type or args.lerope_alpha:
        raise _Refused(
            "--plot, --layer-type and --lerope-alpha apply to one CONFIG, not to --cache"
        )
    try:
        return cli.inspect_cache(args, lambda path: _read(str(path), None, args.layout)[1])
    except ValueError as error:  # a --where the filter cannot read
        raise _Refused(str(error)) from error


def _read(argument: str, layer_type: str | None, layout: str | None, lerope_alpha=None):
    """``(path, encoding)`` of a file, a folder or a cached model id, or ``_Refused``."""
    path = _locate(argument)
    return path, _encoding(_read_config(path), layer_type, layout, lerope_alpha)


def _lerope_alpha(argument: str):
    """The values ``--lerope-alpha`` names (a checkpoint folder, a shard, a small file)."""
    from .cli._checkpoint import CheckpointError, read_checkpoint_tensor

    try:
        values, _ = read_checkpoint_tensor(argument)
    except CheckpointError as error:
        raise _Refused(str(error)) from error
    return values


def _vision_tower(config: dict):
    """The config's vision tower as an axial spec, or None; a bad one is refused."""
    from .models.vision import vision_tower

    try:
        return vision_tower(config)
    except (ValueError, TypeError) as error:
        raise _Refused(f"config refused (its vision tower): {_message(error)}") from error


def _encoding(config: dict, layer_type: str | None, layout: str | None, lerope_alpha=None):
    from .encodings import positional_encoding

    try:
        return positional_encoding(
            config, layer_type=layer_type, layout=layout, lerope_alpha=lerope_alpha
        )
    except NotImplementedError as error:
        raise _Refused(f"config not supported: {error}") from error
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as error:
        raise _Refused(f"config refused: {_message(error)}") from error


def _message(error: BaseException) -> str:
    if isinstance(error, RecursionError):
        return "it nests too deeply to read"
    try:
        text = str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)
    except (ValueError, RecursionError):  # a message holding a huge integer or deep nesting
        text = ""
    return text or type(error).__name__


# --------------------------------------------------------------------------- finding the file


def _locate(argument: str) -> Path:
    from ._hub_cache import cached_config, looks_like_model_id

    if not argument.strip():
        # Path("") is the current folder: reading its config.json unasked would be a guess
        raise _Refused(
            "the config argument is empty: give a config.json, a folder holding one, or a model "
            "id (ORG/NAME) from the local Hugging Face cache"
        )
    path = Path(argument)
    if path.is_dir() and (path / "config.json").is_file():
        return path / "config.json"
    if path.is_dir() and (path / "config.json").exists():  # a pipe or a device named so
        raise _Refused(
            f"{path / 'config.json'} is not a regular file (a pipe or a device); give a config.json"
        )
    if path.exists():
        return path
    if looks_like_model_id(argument):
        try:
            found, repo = cached_config(argument)
        except ValueError as error:
            raise _Refused(str(error)) from error
        if found is not None:
            return found
        from .cli._cache import close_ids

        close = close_ids(argument)
        raise _Refused(
            f"{argument}: no such file, and no config.json of the model {argument} in the local "
            f"Hugging Face cache (looked in {repo}/snapshots/, found from HF_HUB_CACHE, HF_HOME "
            "or ~/.cache/huggingface/hub). "
            + (f"Did you mean {' or '.join(close)} (in the cache)? " if close else "")
            + "posenc_ref never downloads: fetch it with hf download "
            f"{argument} config.json, then run this again (or pass the file it writes, "
            f"{repo}/snapshots/REVISION/config.json)"
        )
    raise _Refused(f"{argument}: no such file")


# --------------------------------------------------------------------------- reading it


class _TooManyDigits(ValueError):
    pass


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _TooManyDigits(digits)
    return int(text)


def _read_config(path: Path) -> dict:
    if path.is_dir():
        raise _Refused(f"{path} is a folder without a config.json; give the config file")
    if not path.is_file():  # a FIFO would block the read, a device (/dev/zero) never end it
        raise _Refused(f"{path} is not a regular file (a pipe or a device); give a config.json")
    too_big = (
        f"{path} holds more than {MAX_BYTES} bytes; a model config is a few kilobytes, and "
        f"posenc_ref reads at most {MAX_BYTES // 2**20} MiB"
    )
    if path.stat().st_size > MAX_BYTES:
        raise _Refused(too_big)
    try:  # bounded: a file whose size is not what stat says (/proc) cannot run on
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
        if len(data) > MAX_BYTES:
            raise _Refused(too_big)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _Refused(f"{path}: cannot read it ({error})") from error
    try:
        config = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as error:
        raise _Refused(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from error
    except _TooManyDigits as error:
        raise _Refused(
            f"{path} holds an integer of {error.args[0]} digits; Python reads integers of at "
            f"most {MAX_DIGITS} digits from text, and no model config needs one"
        ) from error
    except RecursionError as error:
        raise _Refused(
            f"{path} nests arrays or objects too deeply to read (a model config nests a few "
            f"levels; posenc_ref reads at most {MAX_DEPTH})"
        ) from error
    if not isinstance(config, dict):
        raise _Refused(
            f"{path} must hold a JSON object (a model's config), got a {type(config).__name__}"
        )
    depth = _depth(config)
    if depth > MAX_DEPTH:
        raise _Refused(
            f"{path} nests arrays or objects {depth} levels deep; a model config nests a few "
            f"levels, and posenc_ref reads at most {MAX_DEPTH}"
        )
    return config


def _depth(value: object) -> int:
    """How deeply lists and dicts nest in ``value`` (iterative: no recursion limit to hit)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level + 1)
            if level + 1 <= MAX_DEPTH:  # deeper than that is refused anyway
                stack.extend((child, level + 1) for child in item)
    return deepest


# --------------------------------------------------------------------------- the figure


def _plot_target(argument: str) -> tuple[Path, str | None]:
    """Where ``--plot`` writes: (folder or file, suffix); refused before anything is printed.

    An existing folder gets one ``<model_type>_wavelengths[_<layer type>].svg`` per RoPE; a
    file name must carry a format suffix matplotlib writes (a name without one would be
    written with ``.png`` appended, under a name the user did not give).
    """
    path = Path(argument)
    if path.is_dir():
        return path, None
    suffix = path.suffix.lower().lstrip(".")
    formats = ("svg", "png", "pdf", "eps", "ps", "jpg", "jpeg", "webp", "tif", "tiff")
    if suffix not in formats:
        raise _Refused(
            f"--plot {argument}: give a file name ending in a format (.svg, .png, .pdf, ...) "
            "or an existing folder"
            + (f"; {suffix!r} is not a format matplotlib writes" if suffix else "")
        )
    if not path.parent.is_dir():
        raise _Refused(f"--plot {argument}: the folder {path.parent} does not exist")
    return path, suffix


def _plot(encoding, target: Path, suffix: str | None) -> list[Path]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from .plots.check import spec_wavelengths
    except ImportError as error:
        raise _Refused(
            f"--plot needs matplotlib: pip install 'posenc-ref[plots]' ({error})"
        ) from error
    written = []
    several = len(encoding.specs) > 1
    for layer_type, spec in encoding.specs.items():
        part = f"_{layer_type}" if several else ""
        if suffix is None:
            path = target / f"{encoding.model_type or 'rope'}_wavelengths{part}.svg"
        else:
            path = target.with_name(f"{target.stem}{part}{target.suffix}") if part else target
        fig = spec_wavelengths(spec)
        try:
            fig.savefig(path, bbox_inches="tight")
        except (OSError, ValueError) as error:
            raise _Refused(f"cannot write {path}: {error}") from error
        finally:
            plt.close(fig)
        written.append(path)
    return written


# --------------------------------------------------------------------------- vectors, verify
# The work is in posenc_ref.testing._vectors; these functions only print (their flags: cli/).


def _vectors(args: argparse.Namespace) -> int:
    from .testing import build_vectors, write_vectors

    if not args.output.endswith((".safetensors", ".npz", ".json")):
        raise _Refused(f"{args.output}: the file name must end in .safetensors, .npz or .json")
    config = _read_config(_locate(args.config))
    try:
        tensors, metadata = build_vectors(
            config, layer_type=args.layer_type, layout=args.layout, seed=args.seed
        )
    except (ValueError, TypeError, NotImplementedError, KeyError) as error:
        raise _Refused(f"config refused: {_message(error)}") from error
    try:
        path = write_vectors(args.output, tensors, metadata)
    except OSError as error:
        raise _Refused(f"cannot write {args.output}: {error}") from error
    if args.json:
        print(cli.vectors_json(path, tensors, metadata))
        return 0
    print(
        _wrap(
            f"wrote {path}: {len(metadata['cases'])} cases, {len(tensors)} tensors, format "
            f"{metadata['format']} version {metadata['version']}, sha256 "
            f"{metadata['sha256'][:16]}...",
            indent=2,
        )
    )
    for group, rope in metadata["groups"].items():
        widths = f"head_dim {rope['head_dim']}"
        if rope["rotary_dim"] != rope["head_dim"]:
            widths += f", rotary_dim {rope['rotary_dim']}"
        extra = f", mrope_section {rope['mrope_section']}" if rope.get("mrope_section") else ""
        print(
            f"  {group}: base {rope['base']:.10g}, layout {rope['layout']}, {widths}, rope_type "
            f"{rope['rope_type']}{extra}"
        )
    windows = dict.fromkeys(case["window"] for case in metadata["cases"])
    print(f"  windows: {', '.join(windows)}; dtypes float32 and bfloat16")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from .testing._vectors import verify_details

    try:
        agrees, report, cases = verify_details(
            args.vectors, args.outputs, allow_missing=args.allow_missing
        )
    except (OSError, ValueError) as error:
        raise _Refused(_message(error)) from error
    if args.json:
        print(cli.verify_json(args.vectors, args.outputs, agrees, report, cases))
        return 0 if agrees else EXIT_DISAGREES
    verdict, _, details = report.partition("\n\n")
    print(verdict)  # the verdict and one line per case, unwrapped: grep-able
    if details:
        print()
    for line in details.splitlines():
        indent = len(line) - len(line.lstrip())
        print(_wrap(line, indent=indent + 2) if line.strip() else "")
    return 0 if agrees else EXIT_DISAGREES


# --------------------------------------------------------------------------- main


def _compare(args: argparse.Namespace) -> int:
    try:
        return cli.compare(args, lambda argument: _read(argument, args.layer_type, args.layout))
    except ValueError as error:
        raise _Refused(_message(error)) from error


COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "inspect": (_add_inspect, _inspect),
    "compare": (cli.add_compare, _compare),
    "vectors": (cli.add_vectors, _vectors),
    "verify": (cli.add_verify, _verify),
}
"""Command name to (function adding its parser, function running it and returning a status)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Parameters
    ----------
    argv
        Arguments, e.g. ``["inspect", "config.json", "--plot", "rope.svg"]``.

    Returns
    -------
    int
        0 on success, 1 when ``verify`` finds a disagreement, 2 on a usage error or a refused
        config, 3 on a failure inside posenc_ref, 141 when stdout's reader went away.
    """
    parser = _parser(prog())
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        status = COMMANDS[args.command][1](args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # The reader went away (python -m posenc_ref verify ... | head): stop quietly, and keep
        # Python from reporting the failed flush of stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except _Refused as error:
        print(f"error: {cli_words(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as error:  # noqa: BLE001 - the last guard: a message, never a traceback
        print(
            f"error: posenc_ref failed on this input ({type(error).__name__}: "
            f"{_message(error)[:500]}); this is a bug in posenc_ref, please report it with "
            "the config",
            file=sys.stderr,
        )
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
