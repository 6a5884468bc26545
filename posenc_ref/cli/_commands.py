r"""What the command line adds to ``inspect``, and the ``compare`` command.

``inspect --json`` and ``inspect --cache`` (``_cache``), and ``compare A B``
(``_compare``): their parsers' flags, and the functions that print their text, their JSON
(``_schema``) and the figure. Reading a file or an id, and the refusals, stay in
``posenc_ref.__main__``, which passes its reader in (``read``: argument -> (path, encoding)).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._schema import axial_json, dumps, encoding_json, envelope

Reader = Callable[[str], tuple[Path, Any]]


def add_json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of text (schema posenc_ref.cli, documented on the site)",
    )


# --------------------------------------------------------------------------- inspect


def add_inspect_flags(inspect: argparse.ArgumentParser) -> None:
    """``--json``, ``--cache`` and ``--where`` on ``inspect``."""
    add_json(inspect)
    inspect.add_argument(
        "--cache",
        action="store_true",
        help="every model in the local Hugging Face cache, one row each (no CONFIG)",
    )
    inspect.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --cache: only the rows where KEY is VALUE (or KEY!=VALUE); numbers compare "
        "as numbers, text with shell wildcards (id=Qwen/*); repeat to combine. Keys: id, "
        "model_type, encoding, status, layer_type, rope_type, layout, head_dim, rotary_dim, "
        "base, factor, original_max_len, max_len",
    )


def inspect_json(argument: str, path: Path, encoding: Any, tower: Any = None) -> str:
    """``inspect --json``: the encoding with every layer type, its notes and per-pair tables.

    ``tower`` is the config's vision tower (an ``AxialSpec``): beside the encoding as
    ``vision_tower`` for a vision-language config, or the encoding itself (kind ``axial``) for a
    vision config given alone (``encoding`` None).
    """
    if encoding is None:
        written = {"kind": "axial", "model_type": tower.model_type, "source": tower.source,
                   "notes": list(tower.notes), "parameters": axial_json(tower)}  # fmt: skip
        return dumps(envelope("inspect", input=argument, config=str(path), encoding=written))
    body = {"input": argument, "config": str(path), "encoding": encoding_json(encoding)}
    if tower is not None:
        body["vision_tower"] = axial_json(tower)
    return dumps(envelope("inspect", **body))


def inspect_cache(args: argparse.Namespace, read_path: Callable[[Path], Any]) -> int:
    """``inspect --cache``: a table (or JSON) of every cached model; refused ones get a row."""
    from .._hub_cache import hub_cache
    from ._cache import Where, filtered, scan, table

    wheres = [Where.parse(text) for text in args.where]  # ValueError: refused by the caller
    cache = hub_cache()
    if cache.exists() and not cache.is_dir():
        raise ValueError(
            f"the Hugging Face cache {cache} is a file, not a folder (HF_HUB_CACHE, "
            "HUGGINGFACE_HUB_CACHE, HF_HOME or XDG_CACHE_HOME names it): point it at the hub "
            "cache folder"
        )
    rows = filtered(scan(read_path, cache), wheres)
    if args.json:
        print(dumps(envelope("inspect", cache=str(cache), models=[r.as_json() for r in rows])))
        return 0
    if not rows:
        what = "no model matches --where" if wheres else "no model"
        print(f"{what} in the Hugging Face cache {cache}")
        return 0
    print(table(rows))
    failed = sum(row.error is not None for row in rows)
    models = f"{len(rows)} model" + ("s" if len(rows) != 1 else "")
    print(
        f"\n{models} in {cache}"
        + (f"; {failed} could not be read (the reasons are above)" if failed else "")
    )
    return 0


# --------------------------------------------------------------------------- compare

# Positions and lengths compare takes: int64 positions, float64 angles (exact integers below).
MAX_POSITION = 2**53


def add_compare(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare",
        help="what differs between two configs' RoPE, and by how much the angles move",
        description=(
            "Compare the RoPE of two configs (files, folders or cached model ids): the fields "
            "that differ (widths, layout, base, scaling and its parameters), the largest "
            "angle difference in radians per band of pairs (Llama 3's or YaRN's fast, middle "
            "and slow pairs; deciles otherwise) over the original context and at positions "
            "past it, and the last position up to which every angle agrees within the float32 "
            "bound of posenc_ref.testing."
        ),
    )
    compare.add_argument("a", metavar="A", help="a config.json, a folder or a model id")
    compare.add_argument("b", metavar="B", help="the other one")
    compare.add_argument("--layer-type", metavar="T", help="only this layer type")
    compare.add_argument(
        "--layout",
        choices=["interleaved", "half"],
        help="RoPE pair layout, for a model_type posenc_ref does not know (both configs)",
    )
    compare.add_argument(
        "--context",
        type=int,
        metavar="L0",
        help="the original context (default: the smaller one the two configs state)",
    )
    compare.add_argument(
        "--at",
        metavar="POSITIONS",
        help="comma-separated positions past the original context (default: 2 L0 and each "
        "config's max_position_embeddings - 1)",
    )
    compare.add_argument("--plot", metavar="FILE", help="draw the per-pair difference to FILE")
    add_json(compare)


def positions_of(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        positions = [int(p) for p in text.replace(" ", "").split(",") if p]
    except ValueError:
        raise ValueError(
            f"--at {text}: give positions as integers, e.g. --at 16384,65536"
        ) from None
    if not positions or min(positions) < 0:
        raise ValueError(f"--at {text}: give one or more positions >= 0")
    if max(positions) >= MAX_POSITION:
        raise ValueError(
            f"--at {text}: positions must be below 2**53 (positions are int64, and angles are "
            "float64 products)"
        )
    return positions


def run_compare(args: argparse.Namespace, read: Reader) -> tuple[dict, str]:
    """The comparison as JSON-ready data and as text."""
    from ._compare import compare_specs, pairs_of

    if args.context is not None and not 1 <= args.context < MAX_POSITION:
        raise ValueError(
            f"--context {args.context}: the original context must be >= 1 and below 2**53"
        )
    positions = positions_of(args.at)
    sides = {}
    for name, argument in (("a", args.a), ("b", args.b)):
        path, encoding = read(argument)
        sides[name] = (argument, path, encoding)
    (_, _, ea), (_, _, eb) = sides["a"], sides["b"]
    document = envelope(
        "compare",
        **{
            n: {"input": arg, "config": str(p), "model_type": e.model_type, "kind": e.kind}
            for n, (arg, p, e) in sides.items()
        },
    )
    document["layers"], document["notes"] = [], []
    if ea.kind != "rope" and eb.kind != "rope":
        raise ValueError(
            f"nothing to compare: A ({ea.model_type}) uses {ea.kind} positions and B "
            f"({eb.model_type}) {eb.kind}; compare compares the angles of two RoPEs (inspect "
            "describes each)"
        )
    if ea.kind != "rope" or eb.kind != "rope":
        document["notes"].append(
            f"A uses {ea.kind} positions and B {eb.kind}: only two RoPEs have angles to compare"
        )
        return document, compare_text(document)
    pairs, notes = pairs_of(dict(ea.specs), dict(eb.specs), args.layer_type)
    document["notes"] += notes
    document["layers"] = [
        compare_specs(a, b, context=args.context, positions=positions) for a, b in pairs
    ]
    return document, compare_text(document)


def compare_text(document: dict) -> str:
    from ._report import render

    return render(document)


def compare(args: argparse.Namespace, read: Reader) -> int:
    """``compare A B``: text or JSON, and the figure with ``--plot``."""
    from ._report import plot

    target = Path(args.plot) if args.plot else None
    if target is not None and not target.parent.is_dir():
        raise ValueError(f"--plot {args.plot}: the folder {target.parent} does not exist")
    document, text = run_compare(args, read)
    print(dumps(document) if args.json else text)
    if target is not None:
        written = plot(document, target)
        if not args.json:
            print(f"\nfigure written to {written}" if written else "\nno figure: nothing to draw")
    return 0


# --------------------------------------------------------------------------- vectors, verify


def vectors_json(path: Path, tensors: dict, metadata: dict) -> str:
    """``vectors --json``: the file written, its cases and what each group of cases rotates."""
    keep = ("base", "layout", "head_dim", "rotary_dim", "rope_type", "mrope_section")
    return dumps(
        envelope(
            "vectors",
            file=str(path),
            format=metadata["format"],
            version=metadata["version"],
            sha256=metadata["sha256"],
            tensors=len(tensors),
            groups={
                group: {key: rope.get(key) for key in keep}
                for group, rope in metadata["groups"].items()
            },
            cases=[
                {key: case[key] for key in ("name", "group", "window", "first", "last")}
                for case in metadata["cases"]
            ],
        )
    )


def verify_json(vectors: str, outputs: str, agrees: bool, report: str, cases: list) -> str:
    """``verify --json``: the verdict, one entry per case, and the text report."""
    return dumps(
        envelope(
            "verify",
            vectors=str(vectors),
            outputs=str(outputs),
            agrees=agrees,
            verdict=report.splitlines()[0],
            cases=cases,
            report=report,
        )
    )


def add_vectors(commands: argparse._SubParsersAction) -> None:
    """The ``vectors`` command's parser (its work: ``posenc_ref.testing._vectors``)."""
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
    add_json(vectors)


def add_verify(commands: argparse._SubParsersAction) -> None:
    """The ``verify`` command's parser (its work: ``posenc_ref.testing._vectors``)."""
    verify = commands.add_parser(
        "verify",
        help="diagnose your outputs for a vectors file",
        description=(
            "Compare OUTPUTS (tensors named like the vectors' cases, GROUP/WINDOW/DTYPE/q_rot "
            "and .../k_rot) with the expected outputs of VECTORS, and print the verdict, one line "
            "per case, and the diagnosis assert_rope_equal gives for the same calls. Exit "
            "status 1 on disagreement, or when cases are missing (unless --allow-missing)."
        ),
    )
    verify.add_argument("vectors", metavar="VECTORS", help="a file written by `vectors`")
    verify.add_argument("outputs", metavar="OUTPUTS", help="your outputs (any of the 3 formats)")
    verify.add_argument(
        "--allow-missing",
        action="store_true",
        help="accept outputs for only some of the cases (default: a missing case fails)",
    )
    add_json(verify)
