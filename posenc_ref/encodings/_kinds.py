r"""The kinds of positional encoding, as data: what :func:`positional_encoding` returns.

Each kind holds the numbers its family's code uses and builds posenc_ref's own implementation
where there is one (the sinusoidal table, the ALiBi slopes and bias, the T5 buckets). The
numbers are plain Python values (:mod:`posenc_ref.values`); torch is imported only by the
methods that return a tensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from .._checks import check_bool, check_int
from ..values import alibi_slope_values, inv_freq_values, t5_bucket

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Encoding:
    """Fields every kind has: the family, the code that decides it, and notes for the reader."""

    kind: ClassVar[str]
    model_type: str | None
    source: str
    notes: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True)
class LearnedAbsolute(Encoding):
    r"""A trained table of position vectors, added to the token embeddings.

    Attributes
    ----------
    num_positions : int
        Positions the table serves: token positions ``0 .. num_positions - 1``.
    offset : int
        Token position :math:`t` reads row :math:`t + \text{offset}`: 0 (BERT, GPT-2); 2 (OPT,
        BART: two rows reserved by fairseq); ``padding_idx + 1`` (RoBERTa, whose positions count
        from the padding index on, as fairseq's do).
    rows : int
        Rows in the table: ``num_positions + offset``.
    dim : int
        Width of a row.
    padding_idx : int or None
        Where the offset is ``padding_idx + 1``: the padding index (``pad_token_id``).
    """

    kind: ClassVar[str] = "learned"
    num_positions: int
    offset: int
    dim: int
    padding_idx: int | None = None

    @property
    def rows(self) -> int:
        """Rows of the table (``num_positions + offset``)."""
        return self.num_positions + self.offset

    def rows_for(self, positions: torch.Tensor) -> torch.Tensor:
        """The table rows the family's code reads for token ``positions`` (0-based).

        Parameters
        ----------
        positions
            Integer tensor, any shape, values in ``[0, num_positions)``.

        Returns
        -------
        torch.Tensor
            Same shape, int64: ``positions + offset``.
        """
        return rows_read(positions, self.num_positions, self.offset)


@dataclass(frozen=True)
class Sinusoidal(Encoding):
    r"""A fixed table of sines and cosines, added to the (scaled) token embeddings.

    Three variants circulate; each is posenc_ref's table
    (:func:`~posenc_ref.absolute.sinusoidal`) up to a stated permutation or base:

    - ``"interleaved"`` (the paper; XLM, DistilBERT): :math:`\sin(t\omega_i)` in column
      :math:`2i`, :math:`\cos(t\omega_i)` in column :math:`2i+1`, :math:`\omega_i = n^{-2i/d}`.
      Our table as it is.
    - ``"halves"`` (Marian, Pegasus): the same angles, every sine first (columns
      :math:`0..d/2-1`), then every cosine. Our table with its columns reordered even ones
      first, then odd ones.
    - ``"fairseq"`` (FSMT, M2M-100, NLLB-MoE, XGLM; tensor2tensor): sines then cosines, and
      :math:`\omega_i = n^{-i/(d/2-1)}`, so the slowest pair has exactly :math:`1/n` (the paper's
      reaches :math:`n^{-(d-2)/d}`). That is the paper's formula with base
      :math:`n' = n^{d/(d-2)}`, then the halves order.

    Attributes
    ----------
    variant : str
        ``"interleaved"``, ``"halves"`` or ``"fairseq"``.
    dim : int
        Width of the table.
    base : float
        :math:`n` as the family writes it (10000 for all of them).
    offset : int
        Token position :math:`t` reads row :math:`t + \text{offset}` (angle :math:`(t +
        \text{offset})\,\omega_i`): 0 for Marian and XLM; ``padding_idx + 1`` for fairseq's
        (the first token of FSMT sits at angle :math:`2\omega_i` when ``pad_token_id`` is 1).
    num_positions : int
        ``max_position_embeddings``: positions the model was built for.
    padding_idx : int or None
        Where the offset is ``padding_idx + 1``: the padding index, whose row is zero.
    """

    kind: ClassVar[str] = "sinusoidal"
    variant: str
    dim: int
    base: float
    offset: int
    num_positions: int
    padding_idx: int | None = None

    @property
    def table_base(self) -> float:
        r"""The base :math:`n'` for which the family's frequencies are :math:`n'^{-2i/d}`."""
        if self.variant == "fairseq":
            return self.base ** (self.dim / (self.dim - 2))
        return self.base

    def inv_freq(self) -> torch.Tensor:
        """Per-pair frequencies, ``(dim // 2,)`` float64, fastest (1.0) first."""
        from ..absolute import inv_freq

        return inv_freq(self.dim, self.table_base)

    def inv_freq_values(self) -> list[float]:
        """:meth:`inv_freq` as ``dim // 2`` Python floats, computed without torch."""
        return inv_freq_values(self.dim, self.table_base)

    def columns(self) -> torch.Tensor:
        """Where the family puts column ``j`` of posenc_ref's interleaved table: ``(dim,)``.

        The family's table is ``ours[:, columns()]``.
        """
        import torch

        if self.variant == "interleaved":
            return torch.arange(self.dim)
        return torch.cat([torch.arange(0, self.dim, 2), torch.arange(1, self.dim, 2)])

    def table(self, num_positions: int, *, dtype: torch.dtype | None = None) -> torch.Tensor:
        """The rows the family's code adds to tokens ``0 .. num_positions - 1``.

        Built by :func:`~posenc_ref.absolute.sinusoidal` (float64 angles) with the family's base,
        offset and column order.

        Parameters
        ----------
        num_positions
            Number of tokens, ``>= 0``.
        dtype
            Floating dtype of the result (``None``: ``torch.float32``).

        Returns
        -------
        torch.Tensor
            ``(num_positions, dim)``.
        """
        import torch

        from ..absolute import sinusoidal

        dtype = torch.float32 if dtype is None else dtype
        ours = sinusoidal(num_positions, self.dim, self.table_base, offset=self.offset, dtype=dtype)
        return ours[:, self.columns()]


@dataclass(frozen=True)
class Alibi(Encoding):
    r"""ALiBi: each head adds :math:`-\mu_h (m - p)` to the logit of query :math:`m`, key :math:`p`.

    Attributes
    ----------
    num_heads : int
        :math:`H`; the slopes are :func:`~posenc_ref.relative.alibi_slopes` of it.
    logit_scale : float
        What the family multiplies the bias by before adding it to the scaled logits
        :math:`q\cdot k/\sqrt{d_{\text{head}}}`: 1 for BLOOM and MPT;
        :math:`1/\sqrt{d_{\text{head}}}` for Falcon, which adds the bias before that scale.
    """

    kind: ClassVar[str] = "alibi"
    num_heads: int
    logit_scale: float = 1.0

    def slopes(self) -> torch.Tensor:
        r"""The slopes as they act on the scaled logits, ``(num_heads,)`` float64."""
        import torch

        return torch.tensor(self.slope_values(), dtype=torch.float64, device="cpu")

    def slope_values(self) -> list[float]:
        """:meth:`slopes` as ``num_heads`` Python floats, computed without torch."""
        return [slope * self.logit_scale for slope in alibi_slope_values(self.num_heads)]

    def bias(self, query_len: int, key_len: int, *, causal: bool = True) -> torch.Tensor:
        """The bias on the scaled logits, ``(num_heads, query_len, key_len)`` float64.

        :func:`~posenc_ref.relative.alibi_bias` times ``logit_scale``. The families add
        ``slope * key_position`` (BLOOM, Falcon) or ``slope * (key - last key)`` (MPT) instead:
        the same bias plus a constant per query row, which softmax removes.
        """
        import torch

        from ..relative import alibi_bias

        causal = check_bool("causal", causal)
        bias = alibi_bias(self.num_heads, query_len, key_len, causal=causal, dtype=torch.float64)
        return bias * self.logit_scale


@dataclass(frozen=True)
class T5Buckets(Encoding):
    r"""T5's relative buckets: a learned scalar per (bucket, head), added to the logits.

    Attributes
    ----------
    num_buckets, max_distance : int
        ``relative_attention_num_buckets`` and ``relative_attention_max_distance``.
    num_heads : int
        Heads (one learned scalar per bucket and head).
    per_layer : bool
        ``False``: the ``(num_buckets, num_heads)`` table lives in the first layer of each
        stack and is shared by the others (T5); ``True``: every layer has its own (UMT5).
    """

    kind: ClassVar[str] = "t5"
    num_buckets: int
    max_distance: int
    num_heads: int
    per_layer: bool = False

    def buckets(self, relative_position: torch.Tensor, *, bidirectional: bool) -> torch.Tensor:
        """The bucket of each ``key - query`` distance, by T5's formula.

        :func:`~posenc_ref.relative.t5_relative_bucket` with this config's numbers;
        ``bidirectional=True`` for the encoder, ``False`` for the decoder's self-attention.
        """
        from ..relative import t5_relative_bucket

        return t5_relative_bucket(
            relative_position,
            bidirectional=bidirectional,
            num_buckets=self.num_buckets,
            max_distance=self.max_distance,
        )

    def saturation(self, *, bidirectional: bool) -> int:
        """The smallest distance that falls in the last bucket (every larger one does too).

        Below ``max_distance``: the logarithmic formula reaches the last bucket first (91 for
        the encoder's default 32 buckets and 128).
        """

        def bucket(distance: int) -> int:  # :meth:`buckets` of one distance, without torch
            return t5_bucket(
                -distance,
                bidirectional=bidirectional,
                num_buckets=self.num_buckets,
                max_distance=self.max_distance,
            )

        last = bucket(self.max_distance)  # buckets never fall as the distance grows: bisect
        low, high = 0, self.max_distance
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if bucket(middle) == last else (middle + 1, high)
        return low


@dataclass(frozen=True)
class RelativeKey(Encoding):
    r"""BERT's ``relative_key(_query)`` embeddings (Huang et al. 2020): gone in transformers 5.

    transformers 4.x learned a vector :math:`r_{m-p}` per distance (a table of
    ``2 * max_position_embeddings - 1`` rows of head width) and added :math:`q_m\cdot r_{m-p}`
    (``relative_key``), or also :math:`k_p\cdot r_{m-p}` (``relative_key_query``), to the logits,
    with no absolute embedding. transformers 5 removed both (PR #41170): its BERT-like code
    ignores the key and adds absolute position embeddings, which such a checkpoint never
    trained. posenc_ref has no implementation of it.
    """

    kind: ClassVar[str] = "relative_key"
    variant: str
    max_position_embeddings: int


@dataclass(frozen=True)
class NoPE(Encoding):
    """No positional encoding: order reaches attention only through the causal mask or recurrence.

    Attributes
    ----------
    attention_layers, layers : int or None
        How many of the layers attend (none of them with any position signal), when the config
        says.
    """

    kind: ClassVar[str] = "nope"
    attention_layers: int | None = None
    layers: int | None = None


@dataclass(frozen=True)
class LayerType:
    """One layer type of a config: its name, its layers, and whether they rotate."""

    name: str
    layers: tuple[int, ...]
    rotates: bool


@dataclass(frozen=True)
class Rope(Encoding):
    """Rotary embeddings: one :class:`~posenc_ref.models.RopeSpec` per layer type.

    Attributes
    ----------
    specs : dict
        Layer type to its spec; the single key ``None`` where every layer shares one RoPE.
    layer_types : tuple of LayerType
        Every layer type of the config (its ``layer_types``, or the ones its config class builds),
        with its layers and whether they rotate; empty where the config has none.
    """

    kind: ClassVar[str] = "rope"
    specs: Mapping[str | None, Any]
    layer_types: tuple[LayerType, ...] = field(default=(), kw_only=True)


def rows_read(positions: torch.Tensor, num_positions: int, offset: int) -> torch.Tensor:
    import torch

    if not isinstance(positions, torch.Tensor) or positions.is_floating_point():
        raise TypeError(f"positions must be an integer tensor, got {positions!r}")
    if positions.numel() and not (
        0 <= int(positions.min()) and int(positions.max()) < num_positions
    ):
        raise ValueError(
            f"positions must be in [0, {num_positions}) (the table has no row for others), got "
            f"{int(positions.min())}..{int(positions.max())}"
        )
    check_int("offset", offset)
    return positions.to(torch.int64) + offset
