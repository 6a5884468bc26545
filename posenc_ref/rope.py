r"""Rotary position embeddings (RoPE): the module :class:`RotaryEmbedding`, and its functions.

:class:`RotaryEmbedding` rotates queries and keys from a cached cos/sin table: built from its
arguments, from a :class:`~posenc_ref.models.RopeSpec` (:meth:`RotaryEmbedding.from_spec`), or
from a released model's config (:meth:`RotaryEmbedding.from_hf_config`, which reads it with
:func:`~posenc_ref.models.rope_spec`, imported only then: this module imports no config code).
The functions it is built from (:func:`rope_cos_sin`, :func:`apply_rope`,
:func:`apply_rope_loop`, :func:`to_half_layout`, :func:`to_interleaved_layout`,
:func:`permute_qk_weight`) are defined in :mod:`posenc_ref.rope_functions`, with the maths of
RoPE, and importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import torch
from torch import nn

from ._checks import (
    check_base,
    check_bool,
    check_dim,
    check_int,
    check_layout,
    check_rotary_dim,
)
from ._tensor_checks import (
    check_float_dtype,
    check_positions,
    check_qk,
    check_scaling,
    check_table_dtype,
    tracing,
)
from .device import check_device
from .mrope import MROPE_ASSIGNMENTS, mrope_cos_sin, mrope_pair_rows
from .query_scale import QueryScale
from .rope_functions import (
    apply_rope,
    apply_rope_loop,
    permute_qk_weight,
    rope_cos_sin,
    to_half_layout,
    to_interleaved_layout,
)
from .rope_scaling import ScaledFrequencies, Scaling

if TYPE_CHECKING:
    from .models import RopeSpec

__all__ = [
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_loop",
    "to_half_layout",
    "to_interleaved_layout",
    "permute_qk_weight",
    "RotaryEmbedding",
]


# Rows a RotaryEmbedding builds up front (2**20 rows of 64 pairs: 512 MiB in float32).
_MAX_EAGER_ROWS = 1 << 20


class RotaryEmbedding(nn.Module):
    r"""Rotate queries and keys with RoPE, from a cached cos/sin table.

    Explained on the site: [the module](rope.md#rope-module).

    ``forward(q, k, positions)`` equals
    ``apply_rope(q, *rope_cos_sin(positions, inv_freq, ...), layout=..., rotary_dim=...)`` (and
    the same for ``k``), with ``inv_freq`` and ``attention_factor`` from ``scaling``: the table
    is only an optimisation, and tests prove the two equal.

    The table holds cos and sin for positions ``0 .. max_len - 1`` (one value per pair) in
    float32, or float64 for float64 inputs, in *non-persistent* buffers: they follow
    ``.to(device)`` but are not saved in ``state_dict()``, being a function of the constructor
    arguments. A position past the table rebuilds it at least twice as long, or is computed
    directly when it lies far past (never an error, never a table sized by a far position). A
    ``.to(dtype)`` cast of the buffers is undone at the next call, from float64 angles, and the
    frequencies are a float64 CPU tensor (not a buffer), so a bfloat16 model never uses bfloat16
    angles. Inside ``torch.compile`` and ``torch.export`` graphs the rows are computed from the
    positions instead (no cache, no value read).

    ``scaling`` is ``None`` (plain RoPE), a :class:`~posenc_ref.rope_scaling.ScaledFrequencies`
    (``base`` is then unused), or a :class:`~posenc_ref.rope_scaling.Scaling`: a
    :mod:`~posenc_ref.rope_scaling` method and its keyword arguments, also as a dict, e.g.
    ``{"method": "yarn", "factor": 4.0, "original_max_len": 4096}`` (the width and base come from
    the module); it is kept as ``self.scaling`` (``None`` for the other two forms). Methods whose
    frequencies depend on the current length (``"dynamic_ntk"``, ``"longrope"``) use the cached
    table while the call's largest position is below
    ``original_max_len`` and compute each longer call's rows directly: stateless, unlike HF's
    module. Keys already in a KV cache keep the rotation they were written with; the
    [context-extension page](rope_scaling.md#scaling-dynamic-ntk) explains what that does to
    their scores.

    A released model's RoPE is built from its config by :meth:`from_hf_config`, or from the
    spec the config reader returns by :meth:`from_spec`.

    Parameters
    ----------
    head_dim
        Width of each query/key head (positive, even).
    base
        The constant :math:`n`; finite and > 1.
    layout
        ``"interleaved"`` (default) or ``"half"``.
    rotary_dim
        Coordinates rotated per head (partial rotary): ``None`` for all of ``head_dim``, else an
        even integer ``<= head_dim``; the frequencies use it as their width.
    scaling
        See above.
    max_len
        Initial table length (``>= 1``; at most ``2**20`` rows are built up front); grows on
        demand, by at most doubling or twice the call's number of positions. Positions past
        that are computed directly, with the same values: a call costs what its number of
        positions costs, whatever their values (one position ``2**40`` is one row).
    device
        Where to build the table.
    mrope_section
        Multimodal RoPE (Qwen2-VL and later): pairs per position row (time, height, width;
        height, width for ``"alternating_2d"``), summing to ``rotary_dim // 2``; ``None`` for
        one position row. An M-RoPE module takes positions of shape ``(rows, ..., seq_len)``
        (see :func:`posenc_ref.mrope.mrope_positions`); 1-D positions, or none, mean text (the
        same value in every row, which is plain RoPE). Explained on the site:
        [M-RoPE](rope.md#rope-mrope).
    mrope_interleaved
        Shorthand for ``mrope_assignment="interleaved"`` (Qwen3-VL).
    mrope_assignment
        Which pairs each row gets: a key of :data:`posenc_ref.mrope.MROPE_ASSIGNMENTS`
        (``"consecutive"``, the default; ``"interleaved"``; ``"alternating"``, ERNIE 4.5 VL;
        ``"alternating_2d"``, NeoMME's two rows); see
        :func:`posenc_ref.mrope.mrope_pair_rows`.
    output_layout
        The order in which the rotated pairs are written back, when it differs from the order in
        which they are read: DeepSeek-V3 reads interleaved pairs and writes all first
        coordinates, then all second ones (``layout="interleaved", output_layout="half"``). The
        output is then a fixed permutation of the rotary part (the same for queries and keys),
        so attention scores do not change. ``None``: the same as ``layout``.
    query_scale
        A :class:`~posenc_ref.query_scale.QueryScale` :math:`\sigma`: the rotated queries are
        multiplied by :math:`\sigma(t)` at their positions :math:`t` (Ministral 3's and Mistral
        4's ``llama_4_scaling_beta``); keys are not. ``None``: no scaling. Explained on the site:
        [position-dependent query scaling](models.md#models-query-scale).
    clockwise
        Rotate by :math:`-t\,\omega_i` instead of :math:`t\,\omega_i` (NanoChat's code): the
        transpose of each rotation, so scores depend on :math:`m - p` instead of :math:`p - m`.

    Examples
    --------
    >>> rope = RotaryEmbedding(8)
    >>> q, k = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 5, 8)
    >>> q_rot, k_rot = rope(q, k)
    >>> q_rot.shape
    torch.Size([2, 4, 5, 8])
    """

    def __init__(
        self,
        head_dim: int,
        *,
        base: float = 10000.0,
        layout: str = "interleaved",
        rotary_dim: int | None = None,
        scaling: ScaledFrequencies | Scaling | Mapping | None = None,
        max_len: int = 4096,
        device: torch.device | str | None = None,
        mrope_section: Sequence[int] | None = None,
        mrope_interleaved: bool = False,
        mrope_assignment: str | None = None,
        output_layout: str | None = None,
        query_scale: QueryScale | None = None,
        clockwise: bool = False,
    ) -> None:
        super().__init__()
        self.head_dim = check_dim("head_dim", head_dim)
        self.rotary_dim = check_rotary_dim("rotary_dim", rotary_dim, head_dim=self.head_dim)
        self.base = check_base("base", base)
        self.layout = check_layout("layout", layout)
        self.output_layout = (
            self.layout if output_layout is None else check_layout("output_layout", output_layout)
        )
        self.mrope_section = None
        self.mrope_interleaved = False
        self.mrope_assignment = None
        self._mrope_rows = None
        if mrope_section is not None:
            rows = mrope_pair_rows(
                mrope_section, interleaved=mrope_interleaved, assignment=mrope_assignment
            )  # (pairs,) the position row of each pair; checks the flag and the name too
            assignment = mrope_assignment or ("interleaved" if mrope_interleaved else "consecutive")
            if rows.numel() != self.rotary_dim // 2:
                raise ValueError(
                    f"mrope_section={list(mrope_section)} gives {rows.numel()} pairs but the "
                    f"rotary part has rotary_dim // 2 = {self.rotary_dim // 2}"
                )
            self.mrope_section = tuple(int(n) for n in mrope_section)
            self.mrope_assignment = assignment
            self.mrope_interleaved = assignment == "interleaved"
            self._mrope_rows = rows
        elif mrope_interleaved or mrope_assignment is not None:
            raise ValueError("mrope_interleaved / mrope_assignment need mrope_section")
        if query_scale is not None and not isinstance(query_scale, QueryScale):
            raise TypeError(
                "query_scale must be a posenc_ref.query_scale.QueryScale or None, got "
                f"{type(query_scale).__name__}"
            )
        if query_scale is not None and self.mrope_section is not None:
            raise ValueError("query_scale with M-RoPE is not supported (no model uses both)")
        self.query_scale = query_scale
        self.clockwise = check_bool("clockwise", clockwise)
        # The model config this module was built from (from_spec, from_hf_config), else None.
        self.spec: RopeSpec | None = None
        method, freqs, static = check_scaling(scaling, self.rotary_dim, self.base)
        self._use(method, static)
        # float64 on the CPU, a plain attribute rather than a buffer so .to(dtype) can't round it
        self.inv_freq, self.attention_factor = freqs
        # A requested length past _MAX_EAGER_ROWS is built lazily, as calls reach it: 2**40 rows
        # up front would ask for terabytes, and the table is only a cache.
        max_len = min(check_int("max_len", max_len, minimum=1), _MAX_EAGER_ROWS)
        self.register_buffer("cos_cached", torch.empty(0), persistent=False)
        self.register_buffer("sin_cached", torch.empty(0), persistent=False)
        self._build(max_len, check_device(device), torch.float32)

    def _use(self, scaling: Scaling | None, static: bool) -> None:
        # The method behind the frequencies (None: plain RoPE, or frequencies given as such).
        self.scaling = scaling
        self.method = scaling.method if scaling else ("static" if static else None)
        self.scaling_params = dict(scaling.params) if scaling else {}
        # Past this length a length-dependent method's frequencies are computed per call.
        self._per_call_after = scaling.varies_past if scaling else None

    @property
    def max_len(self) -> int:
        """Current table length (positions ``0 .. max_len - 1`` are cached)."""
        return self.cos_cached.shape[0]

    def reset_parameters(self) -> None:
        """Rebuild the cached table where it lives (float32, current length).

        The table is a cache, not a parameter, but deferred initialisation treats it like one:
        after ``to_empty(device=...)`` (a module built on ``meta`` and then given real memory)
        the buffers hold uninitialised memory until this is called, as for any module.
        """
        self._build(self.max_len, self.cos_cached.device, torch.float32)

    def frequencies(self, seq_len: int = 0) -> ScaledFrequencies:
        """Frequencies and attention factor for a call whose largest position is ``seq_len - 1``.

        The same for every length, except under length-dependent scaling (``"dynamic_ntk"``)
        past ``original_max_len``.

        Returns
        -------
        ScaledFrequencies
            ``inv_freq`` ``(rotary_dim // 2,)`` float64, and the attention factor.
        """
        seq_len = check_int("seq_len", seq_len)
        if self._per_call(seq_len):
            if self.spec is not None:  # the model's, with learned factors where it has them
                return self.spec.frequencies(seq_len)
            return self.scaling.frequencies(self.rotary_dim, self.base, seq_len)
        return ScaledFrequencies(self.inv_freq, self.attention_factor)

    def _may_grow_to(self, needed: int, count: int) -> bool:
        # Growing is worth it when the call could have walked there: at most doubling the table
        # (a KV cache that advances step by step pays O(1) per position, amortised) or at most
        # twice the call's own number of positions (a prefill from near 0). A far position
        # (2**40, say) is computed directly: a table that long would need terabytes.
        return needed <= 2 * max(self.max_len, count)

    def _per_call(self, seq_len: int) -> bool:
        # Length-dependent scaling past the original context: frequencies of this call only.
        return self._per_call_after is not None and seq_len > self._per_call_after

    def _build(self, length: int, device: torch.device, dtype: torch.dtype) -> None:
        positions = torch.arange(length, device=device)
        cos, sin = rope_cos_sin(
            positions, self.inv_freq, attention_factor=self.attention_factor, dtype=dtype
        )
        self.cos_cached, self.sin_cached = cos, sin  # (length, rotary_dim / 2) each

    def cos_sin(
        self, positions: torch.Tensor, *, dtype: torch.dtype = torch.float32
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Return cos and sin for ``positions``, from the table (grown if needed).

        Parameters
        ----------
        positions
            ``(..., seq_len)`` integer tensor, ``>= 0``.
        dtype
            ``torch.float32`` or ``torch.float64``.

        Returns
        -------
        tuple of torch.Tensor
            ``(cos, sin)``, each ``(..., seq_len, rotary_dim // 2)``, on the table's device.
        """
        positions = check_positions("positions", positions, integer_only=True)
        dtype = check_table_dtype("dtype", check_float_dtype("dtype", dtype))
        return self._rows(positions, None, dtype)

    def _rows(
        self, positions: torch.Tensor | None, span: tuple[int, int] | None, dtype: torch.dtype
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # positions: None for the span (start, stop), served by slicing the table (a view, no
        # gather: the common case); (..., seq_len); or, for M-RoPE, (3, ..., seq_len).
        device = self.cos_cached.device
        several_rows = self.mrope_section is not None and positions is not None
        several_rows = several_rows and positions.dim() > 1
        if positions is not None:
            positions = positions.to(device)
        readable = device.type != "meta" and not tracing()
        if positions is None:
            needed = span[1]
        elif readable:
            needed = int(positions.max().item()) + 1 if positions.numel() else 0
        elif self._per_call_after is not None and device.type != "meta":
            raise RuntimeError(
                f"scaling method {self.method!r} depends on the largest position's value, which "
                "a compiled graph cannot read: pass offset= instead of positions, or run this "
                "module eagerly"
            )
        else:
            needed = 0  # on meta only the shape matters
        count = span[1] - span[0] if positions is None else positions.numel()
        if not readable or self._per_call(needed) or not self._may_grow_to(needed, count):
            # From the pure functions: inside graphs (no cache growth, no value read), for
            # length-dependent scaling past the original context (not cacheable), and for
            # positions far past the table (a cost that follows their number, not their value).
            if positions is None:
                positions = torch.arange(*span, device=device)
            freqs = self.frequencies(needed)
            if several_rows:
                return mrope_cos_sin(
                    positions, freqs.inv_freq, self.mrope_section,
                    assignment=self.mrope_assignment,
                    attention_factor=freqs.attention_factor, dtype=dtype,
                )  # fmt: skip
            return rope_cos_sin(
                positions, freqs.inv_freq, attention_factor=freqs.attention_factor, dtype=dtype
            )
        if needed > self.max_len:
            self._build(max(needed, 2 * self.max_len), device, dtype)  # doubling: amortised growth
        elif self.cos_cached.dtype != dtype:
            self._build(self.max_len, device, dtype)  # e.g. after .to(torch.bfloat16)
        if positions is None:
            return self.cos_cached[span[0] : span[1]], self.sin_cached[span[0] : span[1]]
        if not several_rows:
            return self.cos_cached[positions], self.sin_cached[positions]
        # M-RoPE: pair i reads the table at its own row's position (one gather per table).
        index = positions.movedim(0, -1)[..., self._mrope_rows.to(device)]  # (..., seq, pairs)
        flat = index.reshape(-1, index.shape[-1])
        cos = self.cos_cached.gather(0, flat).reshape(index.shape)
        return cos, self.sin_cached.gather(0, flat).reshape(index.shape)

    def forward(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        positions: torch.Tensor | None = None,
        *,
        offset: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys.

        Parameters
        ----------
        q, k
            ``(..., seq_len, head_dim)`` each, same ``seq_len`` (their leading dimensions may
            differ, e.g. fewer key heads); on the module's device.
        positions
            ``None``: positions ``offset .. offset + seq_len - 1``. Otherwise an integer tensor
            ``(seq_len,)`` or ``(..., seq_len)`` broadcastable against both ``q.shape[:-1]`` and
            ``k.shape[:-1]`` (e.g. ``(batch, 1, seq_len)`` for packed sequences with
            ``(batch, heads, seq_len, head_dim)`` inputs). For an M-RoPE module (``mrope_section``
            given): ``(seq_len,)`` for text, or ``(rows, ..., seq_len)`` with one row per
            position row of its assignment (three: time, height, width; ``"alternating_2d"``:
            height, width), the ``...`` broadcastable as above (e.g. ``(3, batch, 1, seq_len)``).
        offset
            First position when ``positions`` is ``None`` (the length of a KV cache), ``>= 0``.

        Returns
        -------
        tuple of torch.Tensor
            ``(q_rot, k_rot)``, shapes and dtypes of ``q`` and ``k``.
        """
        seq_len = check_qk(q, k, self.head_dim)
        offset = check_int("offset", offset)
        span = None
        if positions is None:
            span = (offset, offset + seq_len)
        elif offset:
            raise ValueError("give either positions or offset, not both (add the offset yourself)")
        else:
            positions = check_positions("positions", positions, integer_only=True)
            if positions.shape[-1] != seq_len:
                raise ValueError(
                    f"positions' last dimension must be seq_len={seq_len}, "
                    f"got {tuple(positions.shape)}"
                )
        dtype = torch.float64 if torch.float64 in (q.dtype, k.dtype) else torch.float32
        if self.mrope_section is not None and positions is not None and positions.dim() > 1:
            rows = MROPE_ASSIGNMENTS[self.mrope_assignment].rows
            if positions.shape[0] != len(rows):
                n = len(rows)
                raise ValueError(
                    f"an M-RoPE module takes positions ({n}, ..., seq_len) (rows "
                    f"{', '.join(rows)}) or (seq_len,) for text, got {tuple(positions.shape)}; "
                    f"for batched text positions p of shape (batch, seq_len) pass "
                    f"p.expand({n}, -1, -1)"
                )
        cos, sin = self._rows(positions, span, dtype)
        rotated = []
        for x in (q, k):
            y = apply_rope(
                x,
                cos.to(x.device),
                -sin.to(x.device) if self.clockwise else sin.to(x.device),
                layout=self.layout,
                rotary_dim=self.rotary_dim,
            )
            if self.output_layout != self.layout:
                # Written back in the other order (DeepSeek-V3): a fixed permutation of the
                # rotary part, the same for q and k.
                r = self.rotary_dim
                reorder = to_half_layout if self.output_layout == "half" else to_interleaved_layout
                y = torch.cat([reorder(y[..., :r]), y[..., r:]], dim=-1)
            rotated.append(y)
        if self.query_scale is not None:
            # sigma(t) on the queries only, at the positions of this call: (..., seq_len, 1)
            where = torch.arange(*span) if positions is None else positions
            sigma = self.query_scale(where.to("cpu"))[..., None]
            q_rot = rotated[0]
            rotated[0] = (q_rot.to(torch.float64) * sigma.to(q_rot.device)).to(q_rot.dtype)
        return rotated[0], rotated[1]

    @classmethod
    def from_spec(
        cls,
        spec: RopeSpec,
        *,
        max_len: int = 4096,
        device: torch.device | str | None = None,
    ) -> RotaryEmbedding:
        r"""Build the module of a :class:`~posenc_ref.models.RopeSpec`: a model's RoPE, as read.

        The module keeps the spec's frequencies and attention factor (the reader computed them
        inside the original context) and its :class:`~posenc_ref.rope_scaling.Scaling`, from
        which a length-dependent method's frequencies are computed for calls past that context.
        Widths, layouts, M-RoPE sections, the query scaling and the direction are the spec's.
        The spec is kept as ``self.spec``.

        Parameters
        ----------
        spec
            From :func:`posenc_ref.models.rope_spec` (or one of
            :func:`posenc_ref.models.layer_specs`).
        max_len
            Initial table length (``>= 1``); grows on demand.
        device
            Where to build the table.

        Returns
        -------
        RotaryEmbedding
        """
        module = cls(
            spec.head_dim,
            base=spec.base,
            layout=spec.layout,
            rotary_dim=spec.rotary_dim,
            scaling=ScaledFrequencies(spec.inv_freq, spec.attention_factor),
            max_len=max_len,
            device=device,
            mrope_section=spec.mrope_section,
            mrope_assignment=spec.mrope_assignment,
            output_layout=spec.output_layout,
            query_scale=spec.query_scale,
            clockwise=spec.clockwise,
        )
        if spec.scaling is not None:  # the method by name, for the kit and for longer calls
            module._use(spec.scaling, static=False)
        module.spec = spec
        return module

    @classmethod
    def from_hf_config(
        cls,
        config: Mapping | object,
        *,
        layer_type: str | None = None,
        layout: str | None = None,
        lerope_alpha: object = None,
        max_len: int = 4096,
        device: torch.device | str | None = None,
    ) -> RotaryEmbedding:
        r"""Build the RoPE of a released model from its config.

        Explained on the site: [Model zoo](models.md).

        ``config`` is the contents of the model's ``config.json`` (a dict), or a transformers
        config object; it is read by :func:`posenc_ref.models.rope_spec`, whose rules (both config
        forms, the family's pair layout and defaults, errors for unknown or inconsistent keys)
        apply, and the module is built by :meth:`from_spec`. ``forward(q, k, positions)`` then
        rotates the model's queries and keys as its code does, with ``q`` and ``k`` of width
        ``head_dim`` (for DeepSeek-V3, the ``qk_rope_head_dim`` part of each head). The spec is
        kept as ``self.spec``.

        Parameters
        ----------
        config
            The model's configuration.
        layer_type
            For configs with one RoPE per layer type (Gemma 3): which one.
        layout
            Pair layout, only for a family posenc_ref does not know.
        lerope_alpha
            Mistral Large 4 only: the values of its checkpoint tensor
            ``model.language_model.rotary_emb.alpha`` (``lerope.alpha`` in the released
            checkpoint), which scale the frequencies by ``exp(alpha)``; see
            :func:`~posenc_ref.models.rope_spec`.
        max_len
            Initial table length (``>= 1``); grows on demand.
        device
            Where to build the table.

        Returns
        -------
        RotaryEmbedding

        Examples
        --------
        >>> rope = RotaryEmbedding.from_hf_config({
        ...     "model_type": "glm4", "head_dim": 128, "partial_rotary_factor": 0.5,
        ...     "rope_theta": 10000.0, "max_position_embeddings": 32768})
        >>> rope.rotary_dim, rope.layout
        (64, 'interleaved')
        """
        # The one import from the maths up (tests/test_layers.py allows it, and only it): the
        # README's one line from a config to a module. The reader, only when a config is read.
        from .models.read_rope import rope_spec

        spec = rope_spec(config, layer_type=layer_type, layout=layout, lerope_alpha=lerope_alpha)
        return cls.from_spec(spec, max_len=max_len, device=device)

    def extra_repr(self) -> str:  # noqa: D102 (nn.Module's hook for repr)
        partial = "" if self.rotary_dim == self.head_dim else f", rotary_dim={self.rotary_dim}"
        extra = ""
        if self.output_layout != self.layout:
            extra += f", output_layout={self.output_layout!r}"
        if self.mrope_section is not None:
            extra += f", mrope_section={self.mrope_section} ({self.mrope_assignment})"
        if self.query_scale is not None:
            extra += f", query_scale={self.query_scale.describe()!r}"
        # The model's context, where the module knows it; the table's length is only a cache
        # (it grows on demand), so it is named as one and never as max_len.
        spec, context = self.spec, ""
        if spec is not None and (spec.original_max_len or spec.max_len):
            context = f", original_max_len={spec.original_max_len}, max_positions={spec.max_len}"
        elif "original_max_len" in self.scaling_params:
            context = f", original_max_len={self.scaling_params['original_max_len']}"
        return (
            f"head_dim={self.head_dim}{partial}, base={self.base}, layout={self.layout!r}, "
            f"scaling={self.method}{context}{extra}, cached_rows={self.max_len}"
        )
