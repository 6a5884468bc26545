r"""``compare``'s text and figure, both read from the JSON-ready document it builds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..encodings._describe import wrap

MAX_SHOWN = 28  # characters of a value in the table of differences


def shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, str):
        return repr(value)
    text = str(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def radians(value: float | None) -> str:
    if value is None:
        return "nan"
    return "0" if value == 0 else f"{value:.3g}"


def side_line(name: str, side: dict) -> str:
    kind = "RoPE" if side["kind"] == "rope" else f"{side['kind']} positions"
    what = f"model_type {side['model_type']!r}" if side["model_type"] else "no model_type"
    return wrap(f"{name}: {side['input']} ({what}, {kind})", indent=3)


def render(document: dict) -> str:
    """The text ``compare`` prints."""
    lines = [side_line("A", document["a"]), side_line("B", document["b"])]
    for note in document["notes"]:
        lines += ["", wrap(f"note: {note}", indent=6)]
    for layer in document["layers"]:
        lines += ["", *layer_text(layer)]
    return "\n".join(lines)


def layer_text(layer: dict) -> list[str]:
    ta, tb = layer["layer_type_a"], layer["layer_type_b"]
    lines = []
    if ta is not None or tb is not None:
        same = ta if ta == tb else f"{ta} (A) and {tb} (B)"
        lines += [f"--- layer type {same}", ""]
    lines += differences_text(layer["differences"])
    if not layer["comparable"]:
        return [*lines, "", wrap(layer["reason"], indent=0)]
    return [*lines, "", *bands_text(layer), "", *agreement_text(layer)]


def differences_text(differences: list[dict]) -> list[str]:
    if not differences:
        return ["What differs: nothing (every field of the two RoPEs is equal)."]
    width = max(len(d["field"]) for d in differences) + 2
    lines = ["What differs:", f"  {'field':<{width}}{'A':<{MAX_SHOWN + 2}}B"]
    for d in differences:
        lines.append(f"  {d['field']:<{width}}{shown(d['a']):<{MAX_SHOWN + 2}}{shown(d['b'])}")
    return lines


def bands_text(layer: dict) -> list[str]:
    context = layer["context"]
    columns = [f"m < {context}", *(f"m = {p}" for p in layer["positions"])]
    lines = [
        wrap(
            "Angle difference |theta_A(m) - theta_B(m)| in radians, the largest per band of "
            f"pairs ({layer['bands_from']}):",
            indent=0,
        ),
        f"  {'band':<22}{'pairs':<10}" + "".join(f"{c:>12}" for c in columns),
    ]
    for band in layer["bands"]:
        name = band["name"] + (f" ({band['meaning']})" if band["meaning"] else "")
        first, last = band["pairs"]
        pairs = f"{first}-{last}" if last != first else str(first)
        values = [band["inside"], *band["past"]]
        lines.append(f"  {name:<22}{pairs:<10}" + "".join(f"{radians(v):>12}" for v in values))
    return lines


def agreement_text(layer: dict) -> list[str]:
    agreement = layer["agreement"]
    if agreement["everywhere"]:
        text = (
            "Every angle agrees within the float32 bound at every position up to "
            f"{agreement['checked_up_to']} (the last one compared)."
        )
    elif agreement["until"] == 0:
        text = (
            "The angles part from position 1 on: beyond the float32 bound (of posenc_ref.testing) "
            "at every position but 0."
        )
    else:
        text = (
            "Every angle agrees within the float32 bound up to position "
            f"{agreement['until']}; at {agreement['until'] + 1} some pair differs by more."
        )
    return [wrap(text, indent=0)]


def plot(document: dict, target: Path) -> Path | None:
    """Draw :func:`posenc_ref.plots.check.compare_angles` of the document to ``target``."""
    if not any(layer["comparable"] for layer in document["layers"]):
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from ..plots.check import compare_angles
    except ImportError as error:
        raise ValueError(
            f"--plot needs matplotlib: pip install 'posenc-ref[plots]' ({error})"
        ) from error
    fig = compare_angles(document)
    try:
        fig.savefig(target, bbox_inches="tight")
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot write {target}: {error}") from error
    finally:
        plt.close(fig)
    return target
