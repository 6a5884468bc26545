r"""Command line: ``inspect`` a config's positional encoding; RoPE ``vectors`` and ``verify``.

Explained on the site: [Which positional encoding does my model use?](encodings.md) and
[Check your implementation](check.md#check-inspect).

``CONFIG`` is a ``config.json`` file, a folder holding one, or a model id (``Qwen/Qwen3-8B``)
whose config is in the local Hugging Face cache (never downloaded). The config is read by
:func:`posenc_ref.encodings.positional_encoding`, which says which encoding the family's code
uses: learned absolute, sinusoidal, ALiBi, T5 buckets, none, or RoPE (read by
:func:`posenc_ref.models.rope_spec`, once per layer type). For a RoPE this module prints widths
and layout, base and scaling type, the attention factor, and a per-pair table of frequencies,
wavelengths and turns within the original context; ``--plot FILE`` draws the per-pair
wavelengths (:func:`posenc_ref.plots.check.spec_wavelengths`, needs matplotlib).

``python -m posenc_ref vectors CONFIG.json -o FILE`` writes reference vectors of the config's
RoPE (``.safetensors``, ``.npz`` or ``.json``) and ``python -m posenc_ref verify FILE OUTPUTS``
diagnoses someone's outputs for them (:mod:`posenc_ref.testing`; explained on the site:
[other frameworks](frameworks.md#frameworks-vectors)).

One function per command (``_inspect``, ``_vectors``, ``_verify``), registered in ``COMMANDS``
with the function adding its parser.

Exit status: 0 on success; 2 for a usage error, a missing or unreadable file, bad JSON, or a
config the reader refuses (named in the message); 1 when ``verify`` finds a disagreement; 3
for a failure inside posenc_ref (a bug: the message says so). No input file makes it print a
traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main", "describe", "describe_encoding"]

EXIT_DISAGREES = 1  # verify: the outputs disagree with the vectors
EXIT_USAGE = 2
EXIT_BUG = 3  # a failure inside posenc_ref, never the user's input
MAX_DEPTH = 64  # a model config nests a few levels; deeper JSON is refused before it is read
MAX_DIGITS = 4300  # Python's limit on the digits of an integer read from text


class _Refused(Exception):
    """A problem with the user's input: printed as ``error: ...`` with exit status 2."""


# --------------------------------------------------------------------------- the parser


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc_ref",
        description="posenc_ref's command line: explain a model's positional encoding.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add, _ in COMMANDS.values():
        add(commands)
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


# --------------------------------------------------------------------------- inspect


def _inspect(args: argparse.Namespace) -> int:
    plot = _plot_target(args.plot) if args.plot else None  # refuse a bad target before printing
    path = _locate(args.config)
    config = _read_config(path)
    encoding = _encoding(config, args.layer_type, args.layout)
    print(describe_encoding(encoding, all_pairs=args.all_pairs))
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


def _encoding(config: dict, layer_type: str | None, layout: str | None):
    from .encodings import positional_encoding

    try:
        return positional_encoding(config, layer_type=layer_type, layout=layout)
    except NotImplementedError as error:
        raise _Refused(f"config not supported: {error}") from error
    except (ValueError, TypeError, KeyError, OverflowError, RecursionError) as error:
        message = _message(error)
        if "layer_type" in message and layer_type is None:
            message += " (on the command line: --layer-type T)"
        raise _Refused(f"config refused: {message}") from error


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

    path = Path(argument)
    if path.is_dir() and (path / "config.json").is_file():
        return path / "config.json"
    if path.exists():
        return path
    if looks_like_model_id(argument):
        try:
            found, repo = cached_config(argument)
        except ValueError as error:
            raise _Refused(str(error)) from error
        if found is not None:
            return found
        raise _Refused(
            f"{argument}: no such file, and no config.json of the model {argument} in the local "
            f"Hugging Face cache (looked in {repo}/snapshots/, found from HF_HUB_CACHE, HF_HOME "
            "or ~/.cache/huggingface/hub). posenc_ref never downloads: pass the path of its "
            "config.json instead, e.g. after huggingface-cli download "
            f"{argument} config.json, the file {repo}/snapshots/REVISION/config.json"
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
    try:
        text = path.read_text(encoding="utf-8")
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


# --------------------------------------------------------------------------- describing it


def _number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.6g}"


def _rows(pairs: int, every: bool) -> list[int]:
    if every or pairs <= 16:
        return list(range(pairs))
    picked = {round(k * (pairs - 1) / 15) for k in range(16)}
    return sorted(picked)


def _wrap(text: str, indent: int = 12) -> str:
    # 76 columns: fits a terminal, and an output block on the site
    return textwrap.fill(text, 76, subsequent_indent=" " * indent, break_on_hyphens=False)


def _field(name: str, text: str) -> str:
    return _wrap(f"{name + ':':<12}{text}")


def describe_encoding(encoding: object, *, all_pairs: bool = False) -> str:
    """The text ``inspect`` prints for what ``positional_encoding`` returns, any kind.

    Parameters
    ----------
    encoding
        A :class:`~posenc_ref.encodings.LearnedAbsolute`, ``Sinusoidal``, ``Alibi``,
        ``T5Buckets``, ``RelativeKey``, ``NoPE`` or ``Rope``.
    all_pairs
        For a RoPE: list every pair instead of at most 16 evenly spaced ones.

    Returns
    -------
    str
        Lines of at most 76 characters.
    """
    from .encodings._describe import describe as describe_kind

    if encoding.kind == "rope":
        text = _describe_rope(encoding, all_pairs)
    else:
        fields = describe_kind(encoding)
        text = "\n".join(_wrap(t) if not name else _field(name, t) for name, t in fields)
    for note in encoding.notes:
        text += "\n" + _field("note", note)
    return text


def _describe_rope(encoding, all_pairs: bool) -> str:
    specs = encoding.specs
    if list(specs) == [None]:
        return describe(specs[None], all_pairs=all_pairs)
    names = ", ".join(str(t) for t in specs)
    where = f"model_type {encoding.model_type!r}" if encoding.model_type else "this config"
    head = _wrap(
        f"{where} has one RoPE per layer type: {names}. Each is explained below "
        "(--layer-type T shows one).",
        indent=0,
    )
    blocks = [describe(spec, all_pairs=all_pairs) for spec in specs.values()]
    rule = "-" * 76
    return head + "\n\n" + f"\n{rule}\n".join(blocks)


def describe(spec: object, *, all_pairs: bool = False) -> str:
    """The text ``inspect`` prints for a :class:`~posenc_ref.models.RopeSpec`.

    Parameters
    ----------
    spec
        A spec from :func:`posenc_ref.models.rope_spec`.
    all_pairs
        List every pair instead of at most 16 evenly spaced ones.

    Returns
    -------
    str
    """
    import torch

    from .absolute import inv_freq as plain_inv_freq

    head_dim, rotary_dim = spec.head_dim, spec.rotary_dim
    pairs = rotary_dim // 2
    layout = spec.layout
    model_type = getattr(spec, "model_type", None)
    layer_type = getattr(spec, "layer_type", None)
    where = f"model_type {model_type!r}" if model_type else "this config"
    if layer_type:
        where += f", layer type {layer_type!r}"
    lines = [_wrap(f"RoPE of {where}: rope_type {spec.rope_type!r}, base {spec.base:.10g}")]
    partial = (
        "all of them rotated"
        if rotary_dim == head_dim
        else f"the first {rotary_dim} rotated, the last {head_dim - rotary_dim} passed through "
        f"(partial rotary, factor {rotary_dim / head_dim:g})"
    )
    lines.append(_wrap(f"widths:     head_dim {head_dim}, rotary_dim {rotary_dim}: {partial}"))
    if layout == "interleaved":
        pairing = "pairs (2i, 2i+1), interleaved (Meta's Llama, GLM, torchtune)"
    else:
        pairing = f"pairs (i, i + {pairs}), half (HF rotate_half, GPT-NeoX)"
    output_layout = getattr(spec, "output_layout", layout)
    if output_layout not in (None, layout):
        pairing += f"; results written back in {output_layout} order"
    lines.append(_wrap(f"layout:     {pairing}"))
    original = spec.original_max_len
    lines.append(
        _wrap(
            "context:    original "
            + (f"{original}" if original else "not stated")
            + f", max_position_embeddings {spec.max_len}"
            + (f", factor {spec.factor:g}" if getattr(spec, "factor", None) else "")
        )
    )
    a = float(spec.attention_factor)
    lines.append(
        _wrap(
            f"attention:  factor {_number(a)} multiplied into cos and sin"
            + (f" (logits scale by a^2 = {_number(a * a)})" if a != 1.0 else " (none)")
        )
    )
    softmax = float(getattr(spec, "softmax_scale_factor", 1.0))
    if softmax != 1.0:
        lines.append(
            _wrap(
                f"            and the model multiplies its softmax scale by {_number(softmax)} "
                "outside RoPE"
            )
        )
    mrope = getattr(spec, "mrope_section", None)
    if mrope:
        lines.append(
            _wrap(
                f"M-RoPE:     sections {tuple(mrope)} pairs take their angles from the time, "
                "height and width position rows"
            )
        )
    lines += _layer_lines(spec)
    omega = spec.inv_freq.detach().to("cpu", torch.float64)
    plain = plain_inv_freq(rotary_dim, spec.base)
    wavelength = 2 * math.pi / omega
    # a float: an integer context past int64 (10**20) cannot enter a tensor operation
    context = float(original or spec.max_len or 0)
    label = f"{original or spec.max_len}" if context < 1e9 else f"{context:.3g}"  # fits a column
    summary = (
        f"{pairs}, the fastest turning {_number(float(omega.max()))} rad per position "
        f"(wavelength {_number(float(wavelength.min()))}), the slowest "
        f"{_number(float(omega.min()))} (wavelength {_number(float(wavelength.max()))})."
    )
    if context:
        turns = context / wavelength
        summary += (
            f" {int((turns >= 1).sum())} of {pairs} turn at least once within {label} "
            f"positions; the slowest turns {_number(float(turns.min()))} times."
        )
    lines.append(_wrap("pairs:      " + summary))
    scaled = not torch.allclose(omega, plain, rtol=1e-12, atol=0)
    long_note = _length_note(spec, context, omega) if context else None
    header = f"{'pair':>5} {'inv_freq':>12} {'wavelength':>12}"
    if context:
        header += f" {'turns in ' + label:>16}"
    if scaled:
        header += f" {'vs base^(-2i/d)':>16}"
    lines += ["", header]
    for i in _rows(pairs, all_pairs):
        row = f"{i:>5} {_number(float(omega[i])):>12} {_number(float(wavelength[i])):>12}"
        if context:
            row += f" {_number(context / float(wavelength[i])):>16}"
        if scaled:
            row += f" {'x ' + _number(float(omega[i] / plain[i])):>16}"
        lines.append(row)
    if not all_pairs and pairs > 16:
        lines.append(f"({len(_rows(pairs, False))} of {pairs} pairs shown; --all-pairs lists all)")
    if long_note:
        lines += ["", _wrap(long_note, indent=0)]
    return "\n".join(lines)


def _listed(layers: Sequence[int]) -> str:
    shown = ", ".join(str(i) for i in layers[:8])
    return shown + (f", ... ({len(layers)} layers)" if len(layers) > 8 else "")


def _layer_lines(spec: object) -> list[str]:
    """Which layers use the spec, MLA's position-free part, query scaling: where a spec says."""
    lines = []
    layers = getattr(spec, "layers", None)
    if layers:
        lines.append(_wrap(f"layers:     {_listed(list(layers))} use this RoPE"))
    nope = getattr(spec, "nope_layers", None)
    if nope:
        lines.append(_wrap(f"no RoPE:    layers {_listed(list(nope))} rotate nothing"))
    nope_dim = getattr(spec, "nope_dim", 0)
    if nope_dim:
        lines.append(
            _wrap(
                f"MLA:        each query/key head is {nope_dim} coordinates without position, "
                f"then the {spec.head_dim} rotated ones"
            )
        )
    scale = getattr(spec, "query_scale", None)
    if scale is not None:
        lines.append(
            _wrap(
                f"queries:    multiplied by a factor that grows with the position "
                f"(beta {_number(float(scale.beta))}, every {scale.length} positions)"
            )
        )
    return lines


def _length_note(spec: object, context: float, omega) -> str | None:
    """Say so when calls longer than the original context use other frequencies."""
    import torch

    longer = int(2 * context + 1)
    if longer > 2**53:  # past float64's integers: no length-dependent type reads such a length
        return None
    later = spec.frequencies(longer)
    if torch.allclose(later.inv_freq.to(torch.float64), omega, rtol=1e-12, atol=0):
        return None
    return (
        f"length-dependent: calls longer than {int(context)} positions use other frequencies "
        f"(at length {longer}: fastest {_number(float(later.inv_freq.max()))}, "
        f"slowest {_number(float(later.inv_freq.min()))}, attention factor "
        f"{_number(float(later.attention_factor))})"
    )


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
# The work is in posenc_ref.testing._vectors; these functions only parse and print.


def _add_vectors(commands: argparse._SubParsersAction) -> None:
    vectors = commands.add_parser(
        "vectors",
        help="write reference vectors of a model's RoPE (.safetensors, .npz, .json)",
        description=(
            "Write inputs, expected outputs, cos/sin rows and per-element tolerances of a "
            "model's RoPE, for a test in any language: windows at the start, at the end of the "
            "original context, across it and far past it, float32 and bfloat16 inputs, every "
            "layer type, three position rows for M-RoPE. The suffix of FILE picks the format."
        ),
    )
    vectors.add_argument(
        "config",
        metavar="CONFIG",
        help="a config.json, a folder holding one, or a model id in the local Hugging Face cache",
    )
    vectors.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="FILE.safetensors, .npz or .json"
    )
    vectors.add_argument("--layer-type", metavar="T", help="one layer type only (default: all)")
    vectors.add_argument(
        "--layout",
        choices=["interleaved", "half"],
        help="pair layout, for a model_type posenc_ref does not know",
    )
    vectors.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def _add_verify(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser(
        "verify",
        help="diagnose your outputs for a vectors file",
        description=(
            "Compare OUTPUTS (tensors named like the vectors' cases, GROUP/WINDOW/DTYPE/q_rot "
            "and .../k_rot) with the expected outputs of VECTORS, and print the diagnosis "
            "assert_rope_equal gives for the same calls. Exit status 1 on disagreement."
        ),
    )
    verify.add_argument("vectors", metavar="VECTORS", help="a file written by `vectors`")
    verify.add_argument("outputs", metavar="OUTPUTS", help="your outputs (any of the 3 formats)")


def _vectors(args: argparse.Namespace) -> int:
    from .testing._vectors import build_vectors, write_vectors

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
    groups = ", ".join(metadata["groups"])
    print(
        _wrap(
            f"wrote {path}: {len(metadata['cases'])} cases ({groups}), {len(tensors)} tensors, "
            f"format {metadata['format']} version {metadata['version']}, sha256 "
            f"{metadata['sha256'][:16]}...",
            indent=2,
        )
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from .testing._vectors import verify_outputs

    try:
        agrees, report = verify_outputs(args.vectors, args.outputs)
    except (OSError, ValueError, KeyError) as error:
        raise _Refused(_message(error)) from error
    for line in report.splitlines():
        indent = len(line) - len(line.lstrip())
        print(_wrap(line, indent=indent + 2) if line.strip() else "")
    return 0 if agrees else EXIT_DISAGREES


# --------------------------------------------------------------------------- main

COMMANDS: dict[str, tuple[Callable, Callable[[argparse.Namespace], int]]] = {
    "inspect": (_add_inspect, _inspect),
    "vectors": (_add_vectors, _vectors),
    "verify": (_add_verify, _verify),
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
        config, 3 on a failure inside posenc_ref.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        return COMMANDS[args.command][1](args)
    except _Refused as error:
        print(f"error: {error}", file=sys.stderr)
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
