r"""What sparse attention adds to a model's RoPE: compressed keys, and the indexer's own RoPE.

**Compressed keys** (DeepSeek-V4). Besides the keys of its own tokens (a sliding window), a CSA
or HCA layer attends to compressed keys: one summary per block of :math:`r` tokens (``rate``: 4
for CSA, whose summaries also read the block before; 128 for HCA). The summary of block
:math:`b` (tokens :math:`br .. br + r - 1`) is rotated, with the layer's table, at its block's
first token position

.. math:: p_b = s + b\,r,

:math:`s` the first position of the first block (0, or the number of tokens a cache already
compressed). A query at :math:`m` sees block :math:`b` once the block is complete,
:math:`b < \lfloor (m + 1) / r \rfloor`, and their score depends on :math:`m - p_b` only
(:func:`compressed_key_positions`, :func:`visible_blocks`, :func:`rotate_compressed_keys`). The
values are the keys (K = V): the attention output's rotated part is turned back by the query's
angle (:func:`rotate_back`), so that each value enters without its key's position.

**Lightning indexers** (DeepSeek Sparse Attention: DeepSeek-V3.2, GLM-5, DeepSeek-V4's CSA
layers). A small attention that scores keys to select the top-k; its query and key heads
(``index_head_dim`` wide) carry a rotated part as wide as the attention's, with the same
frequencies, but their own placement and pair layout. The spec of a layer with an indexer holds
the indexer's as a second :class:`~posenc_ref.models.RopeSpec` (``spec.indexer``), which
``RotaryEmbedding.from_spec`` builds as any other.

Explained on the site: [Model zoo](models.md#models-sparse).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._checks import check_int
from ._config import MAX_WIDTH, length, power_of_two, shown
from .family import Family
from .sparse_traits import Compressor, Indexer, ValuesAreKeys

# The module these functions turn (posenc_ref.rope.RotaryEmbedding) is named by its full path and
# never imported, not even for its type: the reader imports the maths only where it computes.
if TYPE_CHECKING:  # the tensors are built only when asked for: torch is imported there
    import torch

    from .spec import RopeSpec

__all__ = [
    "CompressedKeys",
    "compressed_key_positions",
    "visible_blocks",
    "rotate_compressed_keys",
    "rotate_back",
]


def compressed_key_positions(num_tokens: int, rate: int, *, start: int = 0) -> torch.Tensor:
    r"""The positions at which compressed keys are rotated: :math:`p_b = s + b\,r`.

    One compressed key per complete block of ``rate`` tokens (a shorter rest waits for more
    tokens); block :math:`b` is rotated at its first token's position (DeepSeek-V4's
    compressors: ``arange(n_windows) * compress_rate + first_window_position``).

    Parameters
    ----------
    num_tokens
        Tokens compressed in this call, ``>= 0``.
    rate
        Tokens per block (``compress_rate``), ``>= 1``.
    start
        Position of the first block's first token, ``>= 0`` (a cache's count of tokens already
        compressed, a multiple of ``rate``).

    Returns
    -------
    torch.Tensor
        ``(num_tokens // rate,)`` int64.

    Examples
    --------
    >>> compressed_key_positions(10, 4).tolist()
    [0, 4]
    """
    import torch

    num_tokens = check_int("num_tokens", num_tokens)
    rate = check_int("rate", rate, minimum=1)
    start = check_int("start", start)
    return torch.arange(num_tokens // rate, dtype=torch.int64) * rate + start


def visible_blocks(query_positions: torch.Tensor, rate: int) -> torch.Tensor:
    r"""How many compressed keys a query sees: :math:`\lfloor (m + 1) / r \rfloor`.

    A query at :math:`m` sees the blocks that end at or before it (block :math:`b` ends at
    :math:`(b + 1) r - 1`), so the distance :math:`m - p_b` to a visible key is at least
    :math:`r - 1` (DeepSeek-V4's ``causal_threshold = (position_ids + 1) // compress_rate``).

    Parameters
    ----------
    query_positions
        Integer positions, any shape, ``>= 0``.
    rate
        Tokens per block, ``>= 1``.

    Returns
    -------
    torch.Tensor
        The count per query, the shape of ``query_positions``.
    """
    import torch

    rate = check_int("rate", rate, minimum=1)
    positions = torch.as_tensor(query_positions)
    if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
        raise TypeError(f"query_positions must be integers, got {positions.dtype}")
    if positions.numel() and int(positions.min()) < 0:
        raise ValueError("query_positions must be >= 0")
    return torch.div(positions + 1, rate, rounding_mode="floor")


def rotate_compressed_keys(
    module: posenc_ref.rope.RotaryEmbedding,  # noqa: F821
    keys: torch.Tensor,
    *,
    start: int = 0,
) -> torch.Tensor:
    """Rotate a layer's compressed keys ``(..., blocks, head_dim)`` at their blocks' positions.

    ``module``: the layer's ``RotaryEmbedding`` (from ``from_hf_config(config,
    layer_type=...)``, whose ``spec.compressed_keys`` gives the rate); ``start`` as for
    :func:`compressed_key_positions`. Returns the rotated keys, shape and dtype of ``keys``.
    """
    import torch

    rule = getattr(module.spec, "compressed_keys", None) if hasattr(module, "spec") else None
    if rule is None:
        raise ValueError("the module's spec has no compressed keys (spec.compressed_keys is None)")
    if not isinstance(keys, torch.Tensor) or keys.dim() < 2:
        raise TypeError("keys must be a tensor (..., blocks, head_dim)")
    positions = rule.positions(keys.shape[-2] * rule.rate, start=start)
    return module(keys, keys, positions.to(keys.device))[1]


def rotate_back(
    module: posenc_ref.rope.RotaryEmbedding,  # noqa: F821
    x: torch.Tensor,
    positions: torch.Tensor,
) -> torch.Tensor:
    r"""Turn the rotation back: each pair by :math:`-m\,\omega_i` at its row's position :math:`m`.

    DeepSeek-V4's values are its rotated keys, so the attention output's rotated part carries
    the keys' angles; the model turns it back at the query position
    (``apply_rotary_pos_emb(out, cos, -sin)``). With an attention factor :math:`a` on cos and
    sin (1 in DeepSeek-V4) the result is scaled by :math:`a` as the model's is. ``x``:
    ``(..., seq_len, head_dim)``; ``positions`` as for the module's ``forward``.
    """
    if module.layout != module.output_layout:
        raise ValueError(
            "rotate_back needs a module that writes pairs back in the order it reads them "
            f"(layout {module.layout!r}, output_layout {module.output_layout!r})"
        )
    turned = copy.copy(module)  # shares the tables; only the direction differs
    turned.clockwise = not module.clockwise
    return turned(x, x, positions)[0]


@dataclass(frozen=True)
class CompressedKeys:
    r"""A layer's compressed keys: one per block of ``rate`` tokens, rotated at :math:`s + b\,r`.

    Attributes
    ----------
    rate : int
        Tokens per block (``compress_rates`` of the layer type).
    window : int
        Tokens each summary reads: ``rate``, or ``2 * rate`` where it also reads the block
        before (CSA's overlapping windows); the position is its own block's first token either
        way.
    """

    rate: int
    window: int

    def positions(self, num_tokens: int, *, start: int = 0) -> torch.Tensor:
        """:func:`compressed_key_positions` at this rate."""
        return compressed_key_positions(num_tokens, self.rate, start=start)

    def rule(self) -> str:
        """The positions' rule, in words (``inspect`` prints it)."""
        reads = "" if self.window == self.rate else f" (each summary reads {self.window} tokens)"
        return (
            f"one key per block of {self.rate} tokens{reads}, rotated with the layer's RoPE at "
            f"its block's first token position s + {self.rate} b (s: the first block's first "
            f"position, 0 without a cache); a query at m sees blocks b < (m + 1) // {self.rate}"
        )


# --------------------------------------------------------------------------- the reader's step


def with_sparse_parts(spec: RopeSpec, config: Mapping[str, Any], family: Family) -> RopeSpec:
    """The reader's step: the layer type's compressed keys, K = V, and the indexer's spec."""
    changes: dict[str, Any] = {}
    compressor = family.trait(Compressor)
    if compressor is not None and spec.layer_type in compressor.rates:
        rate = rate_of(compressor, config, spec.layer_type)
        window = 2 * rate if spec.layer_type in compressor.overlapping else rate
        changes["compressed_keys"] = CompressedKeys(rate, window)
    if family.trait(ValuesAreKeys) is not None:
        changes["values_rotated"] = True
    indexer = family.trait(Indexer)
    if indexer is not None and (
        indexer.layer_types is None or spec.layer_type in indexer.layer_types
    ):
        changes["indexer"] = indexer_spec(spec, config, indexer)
        shared = config.get("indexer_types")
        if isinstance(shared, (list, tuple)) and "shared" in shared:
            changes["notes"] = (
                f"layers whose indexer_types entry is 'shared' ({shared.count('shared')} of "
                f"{len(shared)}) run no lightning indexer: they reuse the keys the latest 'full' "
                "layer's chose",
            )
        if indexer.flag is not None and config.get(indexer.flag) is not None:
            value = config[indexer.flag]
            agrees = value is (indexer.layout == "interleaved")
            changes["notes"] = (
                f"not read by this family's code: {indexer.flag} = {shown(value)}; its value "
                + ("agrees" if agrees else "does not agree")
                + f": the indexer pairs coordinates {indexer.layout!r}",
            )
    return replace(spec, **changes) if changes else spec


def rate_of(compressor: Compressor, config: Mapping[str, Any], layer_type: str) -> int:
    """The layer type's rate: ``compress_rates``, a legacy key, else the class's default."""
    rates = config.get(compressor.key)
    if rates is not None and not isinstance(rates, Mapping):
        raise TypeError(
            f"{compressor.key} must be a dict of layer type -> rate, got {shown(rates)}"
        )
    rate = (rates or {}).get(layer_type, compressor.rates[layer_type])
    where = f"{compressor.key}[{layer_type!r}]"
    for key, of_type in compressor.legacy.items():
        if of_type == layer_type and config.get(key) is not None:
            rate, where = config[key], key  # the class folds the legacy key in last
    return length(where, rate)


def indexer_spec(spec: RopeSpec, config: Mapping[str, Any], indexer: Indexer) -> RopeSpec:
    """The indexer's RoPE: the layer's frequencies on its own head, placement and layout."""
    key, default = indexer.width
    head = length(key, config[key]) if config.get(key) is not None else default
    if head > MAX_WIDTH:  # no model's head; its table would not fit
        raise ValueError(
            f"{key} must be at most {power_of_two(MAX_WIDTH)} (the lightning indexer's head "
            f"width), got {head}"
        )
    rope = spec.rotary_dim
    if head < rope:
        raise ValueError(
            f"{key}={head} is narrower than the rotated part ({rope} coordinates) the indexer "
            "rotates: the family's code cannot split it"
        )
    if indexer.place == "first":  # rotated part first: a partial rotary head
        widths = {"head_dim": head, "rotary_dim": rope, "nope_dim": 0}
    else:  # rotated part last: written as MLA's
        widths = {"head_dim": rope, "rotary_dim": rope, "nope_dim": head - rope}
    return replace(
        spec, **widths, layout=indexer.layout,
        output_layout=indexer.output_layout or indexer.layout, softmax_scale_factor=1.0,
        query_scale=None, compressed_keys=None, values_rotated=False, indexer=None, notes=(),
    )  # fmt: skip
