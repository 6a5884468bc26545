r"""What :func:`~posenc_ref.models.rope_spec` returns: a model's RoPE, and what sits around it.

Also the error it raises for a model without RoPE: :class:`NoRopeError`, a value a caller can
tell from a refusal (it carries what the model uses instead).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._checks import check_int
from ..query_scale import QueryScale
from ..rope_scaling import ScaledFrequencies, ScaledValues, Scaling

if TYPE_CHECKING:
    import torch

    from ._layers import Around
    from ._rope_dict import ChosenRope
    from ._shape import Shape
    from .rope_types import TypeResult
    from .sparse import CompressedKeys

__all__ = ["RopeSpec", "NoRopeError"]


class NoRopeError(ValueError):
    """The config's model uses no RoPE at all (it is not an unknown family).

    ``model_type`` names the family and ``reason`` says what the model does instead, as far as
    posenc_ref knows (learned absolute positions, ALiBi, relative buckets, no positions at all).
    :func:`posenc_ref.models.rope_spec` raises it; a caller that explains every positional
    encoding catches it.
    """

    def __init__(self, model_type: str | None, reason: str) -> None:
        self.model_type = model_type
        self.reason = reason
        super().__init__(f"model_type {model_type!r} uses no RoPE: {reason}")


@dataclass(frozen=True, eq=False)
class RopeSpec:
    r"""A model's RoPE, as its code computes it: widths, layout, frequencies, factors.

    Built by :func:`~posenc_ref.models.rope_spec`; explained on the site:
    [Model zoo](models.md).

    Attributes
    ----------
    head_dim : int
        Width of the query/key head the rotation is applied to. For the MLA families (DeepSeek-V2
        and V3, Mistral 4, GLM-4 MoE Lite, Kimi K2, ...) this is ``qk_rope_head_dim``, the part
        of the head that carries RoPE; see ``nope_dim``.
    rotary_dim : int
        Rotated coordinates: the first ``rotary_dim`` of each head; the rest pass through.
    layout : str
        Pair layout inside the rotary part: ``"interleaved"`` or ``"half"``.
    output_layout : str
        Order in which rotated pairs are written back; equal to ``layout`` except where an MLA
        family reads interleaved pairs and writes them in half order (``rope_interleave``).
    base : float
        ``rope_theta``.
    rope_type : str
        HF's name: a key of :data:`~posenc_ref.models.ROPE_TYPES`.
    inv_freq_values : tuple of float
        The frequencies used inside the original context, ``rotary_dim // 2`` Python floats
        (float64): what the reader computes, without torch. :attr:`inv_freq` is the same as a
        tensor.
    attention_factor : float
        Multiplied into cos and sin.
    original_max_len : int or None
        Pre-training context as the config states it (``original_max_position_embeddings``;
        ``max_position_embeddings`` for ``default`` and ``dynamic``, which have no other);
        ``None`` where the config does not say (``linear`` without the field).
    max_len : int or None
        ``max_position_embeddings``.
    mrope_section : tuple of int or None
        M-RoPE pair counts, one per position row of ``mrope_assignment`` (time, height, width;
        NeoMME: height, width), as the family's code gives them; ``None`` for one position row.
    mrope_interleaved : bool
        ``mrope_assignment == "interleaved"`` (Qwen3-VL's).
    mrope_assignment : str or None
        Which pairs each position row gets: a key of
        :data:`posenc_ref.mrope.MROPE_ASSIGNMENTS`; ``None`` for one position row.
    factor : float or None
        The extension ratio :math:`s` of the scaling types (as given, or derived from
        ``max_position_embeddings / original_max_position_embeddings`` where HF derives it);
        ``None`` for ``default``.
    scaling : Scaling or None
        The :mod:`posenc_ref.rope_scaling` method and its arguments, a
        :class:`~posenc_ref.rope_scaling.Scaling` (it reads as the dict
        ``RotaryEmbedding(scaling=...)`` takes, e.g. ``{"method": "yarn", "factor": 4.0, ...}``):
        for ``linear``, ``dynamic``, ``yarn``, ``longrope`` and ``llama3``; ``None`` for
        ``default`` and ``proportional``.
    softmax_scale_factor : float
        A factor the model applies to its softmax scale outside RoPE (DeepSeek-V3 and the other
        MLA families with YaRN: ``yarn_mscale(s, mscale_all_dim) ** 2``); 1.0 elsewhere. Not
        part of the rotation: the caller applies it.
    model_type, layer_type : str or None
        Where the spec comes from.
    nope_dim : int
        MLA: the width of the part of each query/key head that carries no position
        (``qk_nope_head_dim``). The model computes it separately and hands attention
        ``cat(nope part, rotated part)``: a head of ``nope_dim + head_dim`` coordinates with the
        rotary part last. 0 elsewhere.
    query_scale : QueryScale or None
        A position-dependent factor the model multiplies into its queries
        (``llama_4_scaling_beta``: Ministral 3, Mistral 4). The module built by
        ``RotaryEmbedding.from_hf_config`` applies it to what it rotates; where the head has a
        part without position (``nope_dim`` > 0, Mistral 4), the model scales that part too, and
        the caller multiplies it by ``query_scale(positions)``.
    layers : tuple of int or None
        The layers that use this RoPE, where the config says which (per-layer-type configs,
        configs with layers without RoPE); ``None``: every layer.
    nope_layers : tuple of int or None
        The model's layers that use no RoPE at all (SmolLM3, Llama 4, the linear-attention
        layers of hybrids); empty where every layer rotates; ``None`` where the family has such
        layers but the config does not say which (no ``layer_types``, no layer count).
    nope_query_scale : QueryScale or None
        The query scaling the model applies in its layers *without* RoPE (Llama 4's attention
        temperature tuning). No rotation module is involved there: the caller applies it.
    clockwise : bool
        The model rotates by :math:`-t\,\omega_i` (NanoChat): the module does the same.
    normalized_after : bool
        The model normalizes each query and key head right after the rotation (Llama 4's
        ``qk_norm``, HunYuan's query/key layernorms, NanoChat): a norm cancels any factor on
        cos and sin, so ``attention_factor`` is 1; the caller applies the norm.
    table : str or None
        The name of the RoPE table this layer type uses, where the config names its tables
        (DeepSeek-V4: ``"main"`` for the sliding-window layers, ``"compress"`` for the others).
    compressed_keys : CompressedKeys or None
        The layer's compressed keys (DeepSeek-V4's CSA and HCA layers): one per block of
        ``rate`` tokens, rotated with this RoPE at the block's first token position
        (:func:`~posenc_ref.models.compressed_key_positions`); ``None``: none.
    values_rotated : bool
        The values are the rotated keys (DeepSeek-V4, K = V): the model turns the attention
        output's rotated part back at the query position
        (:func:`~posenc_ref.models.rotate_back`).
    indexer : RopeSpec or None
        The RoPE of the layer's lightning indexer (DeepSeek-V3.2, GLM-5, dots3_note's DSA
        layers, DeepSeek-V4's CSA layers): the same frequencies on the indexer's heads, with its
        own widths, placement (``nope_dim`` > 0: the rotated part last) and layout; ``None``: no
        indexer.
    freq_scales : torch.Tensor or None
        ``(rotary_dim // 2,)`` float64: learned factors of the frequencies that the checkpoint
        holds and the config does not (Mistral Large 4's LeRoPE: ``exp(alpha)``), already
        multiplied into ``inv_freq`` and into :meth:`frequencies`; ``None`` elsewhere.
    notes : tuple of str
        What the reader noticed and the code ignores: keys of the config that this family's code
        does not read (and whether their values agree with what it computes), the family
        inferred from ``architectures``. ``inspect`` prints each.
    """

    head_dim: int
    rotary_dim: int
    layout: str
    base: float
    rope_type: str
    inv_freq_values: tuple[float, ...]
    attention_factor: float
    original_max_len: int | None
    max_len: int | None
    mrope_section: tuple[int, int, int] | None = None
    mrope_interleaved: bool = False
    mrope_assignment: str | None = None
    output_layout: str | None = None
    factor: float | None = None
    scaling: Scaling | None = None
    softmax_scale_factor: float = 1.0
    model_type: str | None = None
    layer_type: str | None = None
    nope_dim: int = 0
    query_scale: QueryScale | None = None
    layers: tuple[int, ...] | None = None
    nope_layers: tuple[int, ...] | None = ()
    nope_query_scale: QueryScale | None = None
    clockwise: bool = False
    normalized_after: bool = False
    table: str | None = None
    compressed_keys: CompressedKeys | None = None
    values_rotated: bool = False
    indexer: RopeSpec | None = None
    freq_scales: torch.Tensor | None = None
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.output_layout is None:
            object.__setattr__(self, "output_layout", self.layout)
        if self.mrope_section is not None and self.mrope_assignment is None:
            kind = "interleaved" if self.mrope_interleaved else "consecutive"
            object.__setattr__(self, "mrope_assignment", kind)

    @classmethod
    def from_steps(
        cls,
        model_type: str | None,
        chosen: ChosenRope,
        shape: Shape,
        read: TypeResult,
        around: Around,
    ) -> RopeSpec:
        """The spec from what the steps of :func:`~posenc_ref.models.rope_spec` found.

        ``chosen``: the RoPE dict, its type, base and layer type; ``shape``: widths, lengths,
        layout and M-RoPE sections; ``read``: the type's factor and original context;
        ``around``: the frequencies as the model applies them, its layers, scalings and norms.
        """
        return cls(
            head_dim=shape.head_dim,
            rotary_dim=shape.rotary_dim,
            layout=shape.layout,
            base=chosen.base,
            rope_type=chosen.rope["rope_type"],
            inv_freq_values=tuple(around.frequencies.inv_freq),
            attention_factor=float(around.frequencies.attention_factor),
            original_max_len=read.original_len,
            max_len=shape.max_len,
            mrope_section=shape.mrope_section,
            mrope_interleaved=shape.mrope_assignment == "interleaved",
            mrope_assignment=shape.mrope_assignment,
            output_layout=shape.output_layout,
            factor=read.factor,
            scaling=around.scaling,
            softmax_scale_factor=around.softmax_scale_factor,
            model_type=model_type,
            layer_type=chosen.layer_type,
            nope_dim=shape.nope_dim,
            query_scale=around.query_scale,
            layers=around.layers,
            nope_layers=around.nope_layers,
            nope_query_scale=around.nope_query_scale,
            clockwise=around.clockwise,
            normalized_after=around.normalized_after,
            table=chosen.table,
        )

    @functools.cached_property
    def inv_freq(self) -> torch.Tensor:
        """``(rotary_dim // 2,)`` float64: :attr:`inv_freq_values` as a tensor (imports torch).

        Built on first use and kept: a module built from the spec holds this very tensor.
        """
        import torch

        return torch.tensor(self.inv_freq_values, dtype=torch.float64, device="cpu")

    def frequencies(self, seq_len: int) -> ScaledFrequencies:
        """Frequencies and attention factor for a call whose largest position is ``seq_len - 1``.

        Differs from ``(inv_freq, attention_factor)`` only for the length-dependent types:
        ``dynamic`` (the NTK base grows past ``max_len``) and ``longrope`` (the long list past
        ``original_max_len``).

        Parameters
        ----------
        seq_len
            Current length (largest position + 1), ``>= 0``.

        Returns
        -------
        ScaledFrequencies
            ``inv_freq`` of shape ``(rotary_dim // 2,)``, float64, and the attention factor.
        """
        seq_len = check_int("seq_len", seq_len)
        if self.scaling is None:
            return ScaledFrequencies(self.inv_freq.clone(), self.attention_factor)
        freqs = self.scaling.frequencies(self.rotary_dim, self.base, seq_len)
        if self.freq_scales is not None:  # LeRoPE: the learned factors on any type's frequencies
            return ScaledFrequencies(freqs.inv_freq * self.freq_scales, freqs.attention_factor)
        return freqs

    def values(self, seq_len: int) -> ScaledValues:
        """:meth:`frequencies` as Python floats, computed without torch (``rotary_dim // 2``)."""
        seq_len = check_int("seq_len", seq_len)
        if self.scaling is None:
            return ScaledValues(list(self.inv_freq_values), self.attention_factor)
        freqs = self.scaling.values(self.rotary_dim, self.base, seq_len)
        if self.freq_scales is not None:  # LeRoPE: the learned factors on any type's frequencies
            scales = self.freq_scales.tolist()
            scaled = [w * s for w, s in zip(freqs.inv_freq, scales, strict=True)]
            return ScaledValues(scaled, freqs.attention_factor)
        return freqs

    def __repr__(self) -> str:
        extra = ""
        if self.mrope_section is not None:
            extra = f", mrope_section={self.mrope_section} ({self.mrope_assignment})"
        if self.output_layout != self.layout:
            extra += f", output_layout={self.output_layout!r}"
        if self.nope_dim:
            extra += f", nope_dim={self.nope_dim}"
        if self.query_scale is not None:
            extra += f", query_scale={self.query_scale}"
        if self.nope_layers:
            extra += f", nope_layers={self.nope_layers}"
        if self.clockwise:
            extra += ", clockwise=True"
        if self.table is not None:
            extra += f", table={self.table!r}"
        if self.compressed_keys is not None:
            extra += f", compressed_keys={self.compressed_keys}"
        if self.indexer is not None:
            extra += ", indexer=RopeSpec(...)"
        if self.freq_scales is not None:
            extra += ", freq_scales=exp(alpha)"
        return (
            f"RopeSpec(model_type={self.model_type!r}, layer_type={self.layer_type!r}, "
            f"rope_type={self.rope_type!r}, head_dim={self.head_dim}, "
            f"rotary_dim={self.rotary_dim}, layout={self.layout!r}, base={self.base:g}, "
            f"attention_factor={self.attention_factor:.6g}, "
            f"original_max_len={self.original_max_len}, max_len={self.max_len}{extra})"
        )
