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
    """The per-pair angle difference at the end of the context and past it, one panel a layer."""
    layers = [layer for layer in document["layers"] if layer["comparable"]]
    if not layers:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ValueError(
            f"--plot needs matplotlib: pip install 'posenc-ref[plots]' ({error})"
        ) from error
    fig, axes = plt.subplots(len(layers), 1, figsize=(7, 3.2 * len(layers)), squeeze=False)
    for ax, layer in zip(axes[:, 0], layers, strict=True):
        pairs = [p["pair"] for p in layer["pairs"]]
        curves = [(f"largest over m < {layer['context']}", [p["inside"] for p in layer["pairs"]])]
        for k, position in enumerate(layer["positions"]):
            curves.append((f"m = {position}", [p["past"][k] for p in layer["pairs"]]))
        for label, values in curves:
            ax.plot(pairs, [v if v else float("nan") for v in values], marker=".", label=label)
        ax.set_yscale("log")
        ax.set_xlim(-0.5, len(pairs) - 0.5)
        for band in layer["bands"]:  # a dashed line where each band starts, and its name
            first, last = band["pairs"]
            if first > 0:
                ax.axvline(first - 0.5, color="0.6", linewidth=0.8, linestyle="--")
            ax.text((first + last) / 2, 1.02, band["name"], transform=ax.get_xaxis_transform(),
                    ha="center", va="bottom", fontsize=8, color="0.3")  # fmt: skip
        ax.set_xlabel("pair i")
        ax.set_ylabel("|theta_A - theta_B| (rad)")
        title = layer["layer_type_a"] or ""
        ax.set_title(
            f"angle difference per pair {title} (a zero difference is not drawn)".strip(),
            fontsize=10,
            pad=16,
        )
        ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        fig.savefig(target)
    except (OSError, ValueError) as error:
        raise ValueError(f"cannot write {target}: {error}") from error
    finally:
        plt.close(fig)
    return target
