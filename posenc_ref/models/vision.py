r"""Vision configs read into :mod:`posenc_ref.axial` specs: scheme, head width, base, grid, order.

A vision tower rotates its patches by axial (2-D) RoPE, not by the 1-D RoPE of
:func:`~posenc_ref.models.rope_spec`. :func:`axial_spec` reads a vision config (Pixtral's, a
Qwen2/2.5/3-VL or Qwen3.5 tower's, Llama 4's, MLCD's, DINOv3's), or a vision-language config's
vision part, into an :class:`AxialSpec`: which of :data:`posenc_ref.axial.SCHEMES` the family's code
is, its head width and base as the family's rotary class computes them, the grid positions, and
the order of the patches in the sequence (the ``spatial_merge_size`` blocks of the Qwen towers).

Each row says where its family's code reads these (transformers 5.23), and is proven against
that code with tiny sizes and random weights (tests/test_axial.py, tests/test_vision_configs.py).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..values import AXIAL_RULES, axial_inv_freq_values, axial_pair_axes_values
from ._config import MAX_WIDTH, bounded_int, length, plain, real, shown
from .classes import with_class_defaults

if TYPE_CHECKING:  # tensors are built only when asked for (the properties import axial)
    import torch

__all__ = ["AxialSpec", "VisionRow", "VISION", "VISION_OF", "axial_spec", "vision_tower"]


@dataclass(frozen=True)
class VisionRow:
    """What a vision family's code decides: the scheme, where its widths and base come from.

    Attributes
    ----------
    scheme : str
        The name in :data:`posenc_ref.axial.SCHEMES`.
    width : str
        The key of the attention width divided among the heads (``embed_dim`` for Qwen2-VL).
    heads : tuple of str
        The key of the head count, then the config class's other names for it.
    reads_head_dim : bool
        The rotary class takes ``head_dim`` where the config gives one (``getattr(config,
        "head_dim", None) or width // heads``).
    base : str
        ``"rope_parameters"`` (``rope_parameters["rope_theta"]``) or ``"rope_theta"`` (DINOv3's
        top-level key).
    defaults : dict
        The config class's values where a config leaves a key out.
    grid : str
        The positions of the patches, in words.
    source : str
        Where the family's code decides it.
    """

    scheme: str
    width: str
    heads: tuple[str, ...]
    reads_head_dim: bool
    base: str
    defaults: Mapping[str, Any]
    grid: str
    source: str


_INDICES = "row and column indices 0..H-1, 0..W-1 of the image's patch grid (H x W from the image)"
_QWEN_GRID = (
    "row and column indices of each frame's patch grid (t, h, w from grid_thw; every frame "
    "repeats the same positions)"
)


def _qwen(module: str, width: str, **defaults: Any) -> VisionRow:
    return VisionRow(
        "qwen2_vl", width, ("num_heads", "num_attention_heads"), True, "rope_parameters",
        {"num_heads": 16, "rope_theta": 10_000.0, "spatial_merge_size": 2,
         "temporal_patch_size": 2, **defaults},
        _QWEN_GRID,
        f"modeling_{module}.py: the vision RotaryEmbedding's compute_axial_rope_parameters, and "
        "get_vision_position_ids (patches in spatial_merge_size blocks)",
    )  # fmt: skip


VISION: dict[str, VisionRow] = {
    "pixtral": VisionRow(
        "pixtral", "hidden_size", ("num_attention_heads",), True, "rope_parameters",
        # no head_dim: PixtralVisionConfig derives it, hidden_size // num_attention_heads
        {"hidden_size": 1024, "num_attention_heads": 16, "rope_theta": 10_000.0,
         "patch_size": 16, "image_size": 1024},
        _INDICES + "; at most image_size // patch_size per side",
        "modeling_pixtral.py: PixtralVisionRotaryEmbedding.compute_axial_rope_parameters, and "
        "PixtralVisionModel.forward's meshgrid of each image's patches",
    ),
    "qwen2_vl_vision": _qwen("qwen2_vl", "embed_dim", embed_dim=1280, patch_size=14),
    "qwen2_5_vl_vision": _qwen("qwen2_5_vl", "hidden_size", hidden_size=3584, patch_size=14),
    "qwen3_vl_vision": _qwen("qwen3_vl", "hidden_size", hidden_size=1152, patch_size=16),
    "qwen3_vl_moe_vision": _qwen("qwen3_vl_moe", "hidden_size", hidden_size=1152, patch_size=16),
    "qwen3_5_vision": _qwen("qwen3_5", "hidden_size", hidden_size=1152, patch_size=16),
    "qwen3_5_moe_vision": _qwen("qwen3_5_moe", "hidden_size", hidden_size=1152, patch_size=16),
    "llama4_vision_model": VisionRow(
        "llama4", "hidden_size", ("num_attention_heads",), False, "rope_parameters",
        {"hidden_size": 768, "num_attention_heads": 16, "rope_theta": 10_000.0,
         "patch_size": 14, "image_size": 448},
        "row and column indices plus one, 1..S, of the square grid of image_size // patch_size "
        "= S patches per side; the class token (last) at angle 0",
        "modeling_llama4.py: Llama4VisionRotaryEmbedding._compute_freqs_ci",
    ),
    "mlcd_vision_model": VisionRow(
        "qwen2_vl", "hidden_size", ("num_attention_heads",), True, "rope_parameters",
        {"hidden_size": 1664, "num_attention_heads": 16, "rope_theta": 10_000.0,
         "patch_size": 14, "image_size": 336},
        _INDICES + "; the class token (first) turns by learned angles (class_pos_emb)",
        "modeling_mlcd.py: MLCDRotaryEmbedding.compute_axial_rope_parameters and "
        "MLCDVisionEmbeddings' grid",
    ),
    "dinov3_vit": VisionRow(
        "dinov3", "hidden_size", ("num_attention_heads",), False, "rope_theta",
        {"hidden_size": 384, "num_attention_heads": 6, "rope_theta": 100.0, "patch_size": 16,
         "image_size": 224},
        "patch centres 2 (y + 1/2) / H - 1 and 2 (x + 1/2) / W - 1, in (-1, 1) whatever the grid "
        "(pos_embed_shift, pos_embed_jitter and pos_embed_rescale move them in training only); "
        "the class and register tokens are not rotated",
        "modeling_dinov3_vit.py: DINOv3ViTRopePositionEmbedding",
    ),
}  # fmt: skip
"""A vision config's ``model_type`` -> its :class:`VisionRow`."""

VISION_OF: dict[str, str] = {
    "qwen2_vl": "qwen2_vl_vision",
    "qwen2_5_vl": "qwen2_5_vl_vision",
    "qwen3_vl": "qwen3_vl_vision",
    "qwen3_vl_moe": "qwen3_vl_moe_vision",
    "qwen3_5": "qwen3_5_vision",
    "qwen3_5_moe": "qwen3_5_moe_vision",
    "llama4": "llama4_vision_model",
}
"""A vision-language config's ``model_type`` -> the vision config class its config class builds,
whatever the ``model_type`` its ``vision_config`` says (released Qwen2-VL files give none,
Qwen3-VL files say ``"qwen3_vl"``, Qwen3.5 files ``"qwen3_5"``). Other wrappers (Mistral 3,
LLaVA) build the class their ``vision_config``'s ``model_type`` names."""


@dataclass(frozen=True)
class AxialSpec:
    r"""A vision tower's axial RoPE, as its config and its family's code give it.

    Attributes
    ----------
    model_type : str
        The vision config's ``model_type`` (the row it was read with).
    scheme : str
        The name in :data:`posenc_ref.axial.SCHEMES`.
    layout : str
        The scheme's pair layout.
    head_dim : int
        The rotated head width (all of it: axial RoPE rotates the whole head).
    base : float
        The base :math:`n` (``rope_theta``).
    grid : str
        The positions of the patches, in words.
    merge_size : int
        The side of the blocks the patches come in (``spatial_merge_size``; 1: row-major).
    patch_size : int or None
        The side of a patch, in pixels.
    image_size : int or None
        The largest image side the config states (``None`` for the Qwen towers: any size).
    temporal_patch_size : int or None
        Frames per patch (the Qwen towers).
    read_from : str
        The key the vision config was read from (``"vision_config"``), or ``""`` for a vision
        config given alone.
    source : str
        Where the family's code decides it.
    notes : tuple of str
        What else the reader found.
    """

    model_type: str
    scheme: str
    layout: str
    head_dim: int
    base: float
    grid: str
    merge_size: int = 1
    patch_size: int | None = None
    image_size: int | None = None
    temporal_patch_size: int | None = None
    read_from: str = ""
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def inv_freq(self) -> torch.Tensor:
        r"""The frequency of each pair, ``(head_dim // 2,)`` float64 (:func:`~posenc_ref.axial.axial_inv_freq`)."""  # noqa: E501
        from ..axial import axial_inv_freq

        return axial_inv_freq(self.head_dim, self.base, self.scheme)

    @property
    def pair_axes(self) -> torch.Tensor:
        """The axis of each pair, 0 row, 1 column: ``(head_dim // 2,)`` int64."""
        from ..axial import axial_pair_axes

        return axial_pair_axes(self.head_dim, self.scheme)

    @property
    def inv_freq_values(self) -> list[float]:
        """:attr:`inv_freq` as ``head_dim // 2`` Python floats, computed without torch."""
        return axial_inv_freq_values(self.head_dim, self.base, self.scheme)

    @property
    def pair_axes_values(self) -> list[int]:
        """:attr:`pair_axes` as ``head_dim // 2`` Python ints, computed without torch."""
        return axial_pair_axes_values(self.head_dim, self.scheme)

    @property
    def max_grid(self) -> tuple[int, int] | None:
        """``(rows, columns)`` of the largest image the config states, in patches, or None."""
        if self.image_size is None or self.patch_size is None:
            return None
        side = self.image_size // self.patch_size  # >= 1: axial_spec refuses a smaller image
        return side, side

    def positions(self, height: int, width: int) -> torch.Tensor:
        """The (row, column) coordinates of a ``height x width`` patch grid, in sequence order.

        ``(height * width, 2)`` float64: :func:`~posenc_ref.axial.grid_positions` with the
        scheme's grid and the tower's ``merge_size``.
        """
        from ..axial import grid_positions

        limit = self.max_grid
        if limit is not None:
            for name, value, most in (("height", height, limit[0]), ("width", width, limit[1])):
                if isinstance(value, int) and not isinstance(value, bool) and value > most:
                    raise ValueError(
                        f"{name}={value} patches is past the largest grid the config states: "
                        f"image_size {self.image_size} // patch_size {self.patch_size} = {most} "
                        f"per side ({self.model_type}'s tower is built for at most that)"
                    )
        return grid_positions(height, width, self.scheme, merge_size=self.merge_size)

    def apply(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` ``(..., num_patches, head_dim)`` at ``positions`` (:meth:`positions`)."""
        from ..axial import apply_axial_rope

        width = getattr(x, "shape", (None,))[-1] if getattr(x, "ndim", 0) else None
        if width != self.head_dim:
            raise ValueError(
                f"x's last dimension must be the spec's head_dim {self.head_dim} "
                f"({self.model_type}'s heads), got {width}"
            )
        return apply_axial_rope(x, positions, base=self.base, scheme=self.scheme)

    def describe(self) -> str:
        """The lines ``inspect`` prints for the vision tower."""
        where = f"{self.read_from} " if self.read_from else ""
        order = (
            f"in {self.merge_size} x {self.merge_size} blocks, each block's patches in turn "
            "(merged into one token after the tower)"
            if self.merge_size > 1
            else "row-major"
        )
        lines = [
            f"vision tower ({where}model_type {self.model_type!r}): axial (2-D) RoPE, scheme "
            f"{self.scheme!r} of posenc_ref.axial",
            f"  head width {self.head_dim} (all of it rotates, {self.head_dim // 4} pairs per "
            f"axis), base {self.base:g}, {self.layout} pairs",
            f"  positions: {self.grid}",
            f"  patch order: {order}",
        ]
        if self.patch_size is not None:
            size = f", images up to {self.image_size} px" if self.image_size else ""
            frames = (
                f", {self.temporal_patch_size} frames per patch" if self.temporal_patch_size else ""
            )
            lines.append(f"  patches of {self.patch_size} px{size}{frames}")
        lines.append(f"  code: {self.source}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(
            textwrap.fill(line, 76, subsequent_indent="    ", break_on_hyphens=False)
            for line in lines
        )


def vision_part(config: Mapping[str, Any] | object) -> tuple[dict[str, Any], str, str] | None:
    """``(the vision config, its model_type, the key read)`` where posenc_ref reads one, or None."""
    top = plain(config)
    model_type = top.get("model_type")
    if not isinstance(model_type, str):  # the readers name a model_type of the wrong kind
        model_type = None
    if model_type in VISION:
        return top, model_type, ""
    vision = top.get("vision_config")
    if vision is None:
        return None
    if not isinstance(vision, Mapping):
        to_dict = getattr(vision, "to_dict", None)
        if not callable(to_dict):
            raise TypeError(f"vision_config must be a dict or null, got {shown(vision)}")
        vision = to_dict()
    kind = VISION_OF.get(model_type, vision.get("model_type"))
    known = isinstance(kind, str) and kind in VISION
    return (dict(vision), kind, "vision_config") if known else None


def vision_tower(config: Mapping[str, Any] | object) -> AxialSpec | None:
    """The :class:`AxialSpec` of the config's vision tower, or None where there is none to read.

    A vision config is its own tower; a vision-language config's is its ``vision_config``.
    """
    return axial_spec(config) if vision_part(config) is not None else None


def axial_spec(config: Mapping[str, Any] | object) -> AxialSpec:
    r"""Read a vision tower's axial RoPE from its config: scheme, head width, base, grid, order.

    Explained on the site: [RoPE on a patch grid](axial.md#axial-configs).

    Parameters
    ----------
    config
        A vision config (a ``model_type`` of :data:`VISION`: Pixtral's ``pixtral``, the Qwen
        towers' ``qwen2_vl_vision`` ... ``qwen3_5_moe_vision``, ``llama4_vision_model``,
        ``mlcd_vision_model``, ``dinov3_vit``), or a vision-language config whose
        ``vision_config`` is one (Qwen2/2.5/3-VL, Qwen3.5, Llama 4, Mistral 3), as a dict or a
        transformers config object.

    Returns
    -------
    AxialSpec

    Raises
    ------
    ValueError
        No vision tower posenc_ref reads; values out of range (naming the key).
    TypeError
        A value of the wrong kind (naming the key).

    Examples
    --------
    >>> spec = axial_spec({"model_type": "qwen2_vl", "vision_config": {"embed_dim": 1280,
    ...                    "num_heads": 16, "spatial_merge_size": 2}})
    >>> spec.scheme, spec.head_dim, spec.base, spec.merge_size
    ('qwen2_vl', 80, 10000.0, 2)
    """
    found = vision_part(config)
    if found is None:
        model_type = plain(config).get("model_type")
        raise ValueError(
            f"no vision tower posenc_ref reads in this config (model_type {model_type!r}): "
            f"axial_spec reads the vision configs {sorted(VISION)} and the vision_config of "
            f"{sorted(VISION_OF)} and of wrappers whose vision_config is one of them"
        )
    vision, kind, where = found
    row = VISION[kind]
    # the vision config class's defaults (class_data.json) where the file leaves a key out
    filled, _ = with_class_defaults(
        {k: v for k, v in vision.items() if v is not None}, kind, frozenset(row.defaults)
    )
    given = {**row.defaults, **filled}
    at = f"{where}." if where else ""
    head_dim = _head_dim(given, row, at, kind)
    merge = "spatial_merge_size" in row.defaults
    patch = length(f"{at}patch_size", given["patch_size"])
    image = length(f"{at}image_size", given["image_size"]) if "image_size" in row.defaults else None
    if image is not None and image < patch:
        raise ValueError(
            f"{at}image_size={image} is smaller than {at}patch_size={patch}: the image holds no "
            "patch"
        )
    return AxialSpec(
        model_type=kind,
        scheme=row.scheme,
        layout=AXIAL_RULES[row.scheme].layout,
        head_dim=head_dim,
        base=_base(vision, row, at),
        grid=row.grid,
        merge_size=length(f"{at}spatial_merge_size", given["spatial_merge_size"]) if merge else 1,
        patch_size=patch,
        image_size=image,
        temporal_patch_size=(
            length(f"{at}temporal_patch_size", given["temporal_patch_size"]) if merge else None
        ),
        read_from=where,
        source=row.source,
    )


def _head_dim(given: Mapping[str, Any], row: VisionRow, at: str, kind: str) -> int:
    """The rotary class's width: ``head_dim`` where it reads one, else width // heads."""
    if row.reads_head_dim and given.get("head_dim"):
        dim = bounded_int(f"{at}head_dim", given["head_dim"], kind, minimum=1, maximum=MAX_WIDTH)
    else:
        heads_key = next((k for k in row.heads if given.get(k) is not None), row.heads[0])
        heads = bounded_int(f"{at}{heads_key}", given.get(heads_key), kind, minimum=1,
                            maximum=MAX_WIDTH)  # fmt: skip
        width = bounded_int(f"{at}{row.width}", given.get(row.width), kind, minimum=1,
                            maximum=MAX_WIDTH**2)  # fmt: skip
        if width % heads:
            raise ValueError(
                f"{at}{row.width}={width} is not a multiple of {at}{heads_key}={heads} ({kind}'s "
                "heads share the width equally)"
            )
        dim = width // heads
    if dim % 4:
        raise ValueError(
            f"the head width {dim} of {kind} is not a multiple of 4: axial RoPE gives d/4 pairs "
            "to each axis"
        )
    return dim


def _base(vision: Mapping[str, Any], row: VisionRow, at: str) -> float:
    """``rope_parameters["rope_theta"]``, else the legacy ``rope_theta`` (DINOv3: its own key)."""
    default = row.defaults["rope_theta"]
    outer = vision.get("rope_theta")
    if row.base == "rope_theta":  # DINOv3's rotary reads config.rope_theta
        return real(f"{at}rope_theta", default if outer is None else outer)
    rope = vision.get("rope_parameters")
    if rope is not None and not isinstance(rope, Mapping):
        raise TypeError(f"{at}rope_parameters must be a dict or null, got {shown(rope)}")
    rope = rope or {}
    kind = rope.get("rope_type", rope.get("type", "axial"))
    if kind not in ("axial", "default"):
        raise ValueError(
            f"{at}rope_parameters.rope_type must be 'axial' or 'default' (the vision tower's "
            f"rotary reads rope_theta only and scales nothing), got {shown(kind)}"
        )
    inner = rope.get("rope_theta")
    if inner is not None and outer is not None and inner != outer:
        raise ValueError(
            f"inconsistent rope_theta: {at}rope_parameters gives {shown(inner)} and "
            f"{at}rope_theta gives {shown(outer)}"
        )
    value = inner if inner is not None else outer
    return real(f"{at}rope_theta", default if value is None else value)
