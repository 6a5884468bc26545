r"""The last step for a family whose frequencies a checkpoint tensor scales (LeRoPE).

Mistral Large 4 multiplies its inverse frequencies by :math:`e^{\alpha_i}`, with
:math:`\alpha` a learned tensor of ``qk_rope_head_dim / 2`` values stored in the checkpoint
(transformers 5.23, ``modeling_mistral_large4.py``: ``MistralLarge4TextRotaryEmbedding.forward``
computes ``inv_freq * alpha.exp()``, whatever the rope type). The config does not hold them:
:func:`~posenc_ref.models.rope_spec` refuses the config alone, naming the tensor, and takes its
values as ``lerope_alpha=``. The same checkpoint holds a learned query scaling per head
(``softmax_scaling``), which posenc_ref describes and does not apply.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .family import Family
from .spec import RopeSpec
from .traits import LearnedScales

if TYPE_CHECKING:
    import torch

__all__ = ["with_learned_scales", "check_alpha", "SOFTMAX_SCALING_NOTE"]

SOFTMAX_SCALING_NOTE = (
    "the checkpoint also holds a learned query scaling, not applied here: every layer multiplies "
    "query head h at position t by scale_h * ln(t + 1) + bias_h (layers.*.self_attn."
    "softmax_scaling.scale and .bias, ssmax_scaling.s and .b in the released checkpoint; "
    "modeling_mistral_large4.py: MistralLarge4TextSoftmaxScaling), the rotated and unrotated "
    "parts alike; with scale 0 and bias 1 it is the identity"
)


def with_learned_scales(spec: RopeSpec, family: Family, alpha: Any) -> RopeSpec:
    """The spec with its frequencies times ``exp(alpha)`` where the family's code learns them."""
    trait = family.trait(LearnedScales)
    if trait is None:
        if alpha is not None:
            raise ValueError(
                f"lerope_alpha scales the frequencies of a model whose code learns them (Mistral "
                f"Large 4, mistral_large4_text); {spec.model_type}'s code does not: leave "
                "lerope_alpha out"
            )
        return spec
    pairs = spec.rotary_dim // 2
    if alpha is None:
        raise ValueError(
            f"{spec.model_type}'s code multiplies its inverse frequencies by exp(alpha) (LeRoPE), "
            f"alpha a learned tensor of {pairs} values stored in the checkpoint, not in the "
            f"config: {trait.tensor} in transformers ({trait.checkpoint} in the released "
            f"checkpoint, {trait.text_only} in a text-only model). Pass its values as "
            f"{trait.argument}= (inspect: --lerope-alpha FILE)"
        )
    import torch  # the learned values are a tensor: the one step of reading that needs it

    values = check_alpha(trait.argument, alpha, pairs)
    scales = torch.exp(values)
    note = (
        f"{trait.argument}: the frequencies are multiplied by exp(alpha) of the {pairs} values "
        f"given ({trait.tensor}); exp(alpha) ranges over [{float(scales.min()):.6g}, "
        f"{float(scales.max()):.6g}]"
    )
    indexer = spec.indexer
    if indexer is not None:  # its indexer rotates with the layer's scaled cos and sin
        indexer = replace(indexer, inv_freq_values=tuple(
            w * s for w, s in zip(indexer.inv_freq_values, scales.tolist(), strict=True)
        ), freq_scales=scales)  # fmt: skip
    return replace(
        spec,
        inv_freq_values=tuple(
            w * s for w, s in zip(spec.inv_freq_values, scales.tolist(), strict=True)
        ),
        freq_scales=scales,
        indexer=indexer,
        notes=(*spec.notes, note, SOFTMAX_SCALING_NOTE),
    )


def check_alpha(name: str, alpha: Any, pairs: int) -> torch.Tensor:
    """``alpha`` as a float64 tensor of ``(pairs,)`` finite values, or an error naming ``name``.

    A torch tensor, a NumPy array or a list of numbers; float16, bfloat16, float32 and float64
    values are exact in float64 (a checkpoint stores one of these).
    """
    import torch

    if isinstance(alpha, torch.Tensor):
        tensor = alpha.detach()
    else:
        try:
            import numpy as np

            array = np.asarray(alpha)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"{name} must be a tensor, an array or a list of {pairs} numbers, got "
                f"{type(alpha).__name__} ({error})"
            ) from None
        if array.dtype.kind not in "fiu" or array.dtype == bool:
            raise TypeError(
                f"{name} must hold {pairs} real numbers (a float tensor or array), got "
                f"{type(alpha).__name__} of dtype {array.dtype}"
            )
        tensor = torch.from_numpy(array.astype(np.float64))
    if not tensor.is_floating_point() and (tensor.is_complex() or tensor.dtype == torch.bool):
        raise TypeError(f"{name} must hold real numbers, got a tensor of dtype {tensor.dtype}")
    if tensor.device.type == "meta":
        raise ValueError(f"{name} is on the meta device: it has no values to read")
    if tuple(tensor.shape) != (pairs,):
        raise ValueError(
            f"{name} must have shape ({pairs},), one value per rotated pair (qk_rope_head_dim / "
            f"2), got shape {tuple(tensor.shape)}"
        )
    tensor = tensor.to("cpu", torch.float64)
    if not bool(torch.isfinite(tensor).all()):
        bad = int((~torch.isfinite(tensor)).nonzero()[0, 0])
        raise ValueError(
            f"{name} must be finite, got {float(tensor[bad])} at index {bad} (of {pairs})"
        )
    limit = math.log(torch.finfo(torch.float32).max)  # the model computes exp(alpha) in float32
    if float(tensor.max()) >= limit:
        raise ValueError(
            f"{name} must be < {limit:.4g}: the model computes exp(alpha) in float32, where "
            f"larger values overflow to inf; got {float(tensor.max())}"
        )
    return tensor
