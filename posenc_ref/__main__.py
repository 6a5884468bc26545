r"""Command line: ``inspect`` explains a model's RoPE config; ``vectors`` and ``verify`` check one.

Explained on the site: [Check your implementation](check.md#check-inspect).

The config is read by :func:`posenc_ref.models.rope_spec` (the same reader as
``RotaryEmbedding.from_hf_config``); this module only prints the spec: widths and layout, base
and scaling type, the attention factor, a per-pair table of frequencies, wavelengths and turns
within the original context, and with ``--plot FILE`` the per-pair wavelength figure
(:func:`posenc_ref.plots.check.spec_wavelengths`, needs matplotlib).

``python -m posenc_ref vectors CONFIG.json -o FILE`` writes reference vectors of the config's
RoPE (``.safetensors``, ``.npz`` or ``.json``) and ``python -m posenc_ref verify FILE OUTPUTS``
diagnoses someone's outputs for them (:mod:`posenc_ref.testing`; explained on the site:
[other frameworks](frameworks.md#frameworks-vectors)).

Exit status: 0 on success, 1 when ``verify`` finds a disagreement, 2 for a usage error, a
missing or unreadable file, bad JSON, or a config the reader refuses (unknown or inconsistent
keys, named in the message).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "describe"]

EXIT_USAGE = 2


class _Refused(Exception):
    """A problem with the user's input: printed as ``error: ...`` with exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m posenc_ref",
        description="posenc_ref's command line: explain a model's positional encoding.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect",
        help="print what a model's config.json means for its RoPE",
        description=(
            "Read a model's config.json (transformers' format, old or new) and print its RoPE: "
            "widths, pair layout, base, scaling type, attention factor, and per pair the "
            "frequency, wavelength and turns within the original context."
        ),
    )
    inspect.add_argument("config", metavar="CONFIG.json", help="path to the model's config.json")
    inspect.add_argument(
        "--layer-type",
        metavar="T",
        help="for configs with one RoPE per layer type (Gemma 3: sliding_attention, "
        "full_attention)",
    )
    inspect.add_argument(
        "--layout",
        choices=["interleaved", "half"],
        help="pair layout, for a model_type posenc_ref does not know",
    )
    inspect.add_argument(
        "--plot", metavar="FILE", help="also draw the per-pair wavelengths to FILE (.svg, .png)"
    )
    inspect.add_argument(
        "--all-pairs", action="store_true", help="list every pair (default: at most 16 rows)"
    )
    _add_vectors_commands(commands)
    return parser


def _read_config(path: str) -> dict:
    file = Path(path)
    if not file.exists():
        raise _Refused(f"{path}: no such file")
    if file.is_dir():
        raise _Refused(f"{path} is a directory; give the config.json inside it")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise _Refused(f"{path}: cannot read it ({error})") from error
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise _Refused(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from error
    if not isinstance(config, dict):
        raise _Refused(
            f"{path} must hold a JSON object (a model's config), got a {type(config).__name__}"
        )
    return config


def _spec(config: dict, layer_type: str | None, layout: str | None):
    try:
        from .models import rope_spec
    except ImportError as error:  # the reader ships with posenc_ref; guard partial installs
        raise _Refused(
            f"posenc_ref.models (the config reader) cannot be imported: {error}"
        ) from error
    kwargs = {"layer_type": layer_type}
    if layout is not None:
        kwargs["layout"] = layout
    try:
        return rope_spec(config, **kwargs)
    except (ValueError, TypeError, NotImplementedError, KeyError) as error:
        kind = "not supported" if isinstance(error, NotImplementedError) else "refused"
        message = str(error)
        if "layer_type" in message and layer_type is None:
            message += " (on the command line: --layer-type T)"
        raise _Refused(f"config {kind}: {message}") from error


def _number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return str(value)
    return f"{value:.6g}"


def _rows(pairs: int, every: bool) -> list[int]:
    if every or pairs <= 16:
        return list(range(pairs))
    picked = {round(k * (pairs - 1) / 15) for k in range(16)}
    return sorted(picked)


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
    lines = [f"RoPE of {where}: rope_type {spec.rope_type!r}, base {spec.base:.10g}"]
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
            f"            and the model multiplies its softmax scale by {_number(softmax)} "
            "outside RoPE"
        )
    mrope = getattr(spec, "mrope_section", None)
    if mrope:
        lines.append(
            f"M-RoPE:     sections {tuple(mrope)} pairs take their angles from the time, height "
            "and width position rows"
        )
    omega = spec.inv_freq.detach().to("cpu", torch.float64)
    plain = plain_inv_freq(rotary_dim, spec.base)
    wavelength = 2 * math.pi / omega
    context = original or spec.max_len
    summary = (
        f"{pairs}, the fastest turning {_number(float(omega.max()))} rad per position "
        f"(wavelength {_number(float(wavelength.min()))}), the slowest "
        f"{_number(float(omega.min()))} (wavelength {_number(float(wavelength.max()))})."
    )
    if context:
        turns = context / wavelength
        summary += (
            f" {int((turns >= 1).sum())} of {pairs} turn at least once within {context} "
            f"positions; the slowest turns {_number(float(turns.min()))} times."
        )
    lines.append(_wrap("pairs:      " + summary))
    scaled = not torch.allclose(omega, plain, rtol=1e-12, atol=0)
    long_note = None
    if context:
        later = spec.frequencies(2 * context + 1)
        if not torch.allclose(later.inv_freq.to(torch.float64), omega, rtol=1e-12, atol=0):
            long_note = (
                f"length-dependent: calls longer than {context} positions use other frequencies "
                f"(at length {2 * context + 1}: fastest {_number(float(later.inv_freq.max()))}, "
                f"slowest {_number(float(later.inv_freq.min()))}, attention factor "
                f"{_number(float(later.attention_factor))})"
            )
    header = f"{'pair':>5} {'inv_freq':>12} {'wavelength':>12}"
    if context:
        header += f" {'turns in ' + str(context):>16}"
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


def _wrap(text: str, indent: int = 12) -> str:
    # 76 columns: fits a terminal, and an output block on the site
    return textwrap.fill(text, 76, subsequent_indent=" " * indent, break_on_hyphens=False)


def _plot(spec: object, path: str) -> None:
    try:
        from .plots.check import spec_wavelengths
    except ImportError as error:
        raise _Refused(
            f"--plot needs matplotlib: pip install 'posenc-ref[plots]' ({error})"
        ) from error
    fig = spec_wavelengths(spec)
    try:
        fig.savefig(path, bbox_inches="tight")
    except (OSError, ValueError) as error:
        raise _Refused(f"cannot write {path}: {error}") from error
    finally:
        import matplotlib.pyplot as plt

        plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Parameters
    ----------
    argv
        Arguments, e.g. ``["inspect", "config.json", "--plot", "rope.svg"]``.

    Returns
    -------
    int
        0 on success, 2 on a usage error or a refused config.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if args.command in _VECTORS_COMMANDS:
        return _VECTORS_COMMANDS[args.command](args)
    try:
        config = _read_config(args.config)
        spec = _spec(config, args.layer_type, args.layout)
        print(describe(spec, all_pairs=args.all_pairs))
        if args.plot:
            _plot(spec, args.plot)
            print(f"\nwavelength figure written to {args.plot}")
    except _Refused as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    return 0


# --------------------------------------------------------------------------- vectors, verify
# The work is in posenc_ref.testing._vectors; these functions only parse and print.

EXIT_DISAGREES = 1


def _add_vectors_commands(commands) -> None:
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
    vectors.add_argument("config", metavar="CONFIG.json", help="path to the model's config.json")
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


def _vectors_command(args: argparse.Namespace) -> int:
    from .testing._vectors import build_vectors, write_vectors

    try:
        config = _read_config(args.config)
        if not args.output.endswith((".safetensors", ".npz", ".json")):
            raise _Refused(f"{args.output}: the file name must end in .safetensors, .npz or .json")
        try:
            tensors, metadata = build_vectors(
                config, layer_type=args.layer_type, layout=args.layout, seed=args.seed
            )
        except (ValueError, TypeError, NotImplementedError, KeyError) as error:
            raise _Refused(f"config refused: {error}") from error
        try:
            path = write_vectors(args.output, tensors, metadata)
        except OSError as error:
            raise _Refused(f"cannot write {args.output}: {error}") from error
    except _Refused as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
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


def _verify_command(args: argparse.Namespace) -> int:
    from .testing._vectors import verify_outputs

    try:
        agrees, report = verify_outputs(args.vectors, args.outputs)
    except (OSError, ValueError, KeyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    for line in report.splitlines():
        indent = len(line) - len(line.lstrip())
        print(_wrap(line, indent=indent + 2) if line.strip() else "")
    return 0 if agrees else EXIT_DISAGREES


_VECTORS_COMMANDS = {"vectors": _vectors_command, "verify": _verify_command}


if __name__ == "__main__":
    sys.exit(main())
