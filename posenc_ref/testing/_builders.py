r"""``assert_mrope_positions_equal``: a multimodal position builder against each family's rules.

Explained on the site: [position builders](check.md#check-builders).

The kit hands M-RoPE functions their position rows; the code that builds those rows from a
token sequence (transformers' and mlx-vlm's ``get_rope_index``, vLLM's
``get_mrope_input_positions``, SGLang's and llama.cpp's own) is where multimodal engines ship
bugs. The check runs the user's builder on generated sequences (text only, an image only,
several images and videos of different grids, each at every merge size asked for), compares
every position with :func:`posenc_ref.mrope_positions.mrope_position_ids` exactly (positions
are integers), and on a difference runs the rows of :data:`BUILDER_BUG_MODELS` (each a model of
a mistaken builder, with an example) on the same sequences and names those that reproduce the
builder's output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from .._checks import check_int, check_positive_float
from ..mrope_positions import (
    IMAGE,
    POSITION_RULES,
    TEXT,
    VIDEO,
    MultimodalSequence,
    grid_positions_3d,
    mrope_position_ids,
    token_runs,
)
from ._arrays import FnRaised, call_user, to_torch
from ._setting import BugModel, Example

__all__ = ["assert_mrope_positions_equal", "BUILDER_BUG_MODELS", "builder_sequences"]

Builder = Callable[[MultimodalSequence], object]

# The sequences, as segments: ("text", tokens), ("image", (t, h, w)) or ("video", (t, h, w),
# seconds per temporal patch). Grids are in patches, multiples of 4 (merge sizes 1, 2 and 4),
# none square, so that height and width cannot stand for each other. Two images are always
# apart (processors wrap each in vision start and end tokens, which are text): a run is one grid.
SEQUENCES = {
    "text only": [("text", 7)],
    "an image only": [("image", (1, 8, 4))],
    "text, an image, text": [("text", 3), ("image", (1, 4, 8)), ("text", 4)],
    "three images": [("text", 2), ("image", (1, 8, 4)), ("text", 1), ("image", (1, 4, 12)),
                     ("text", 1), ("image", (1, 12, 8)), ("text", 3)],
    "a video": [("text", 2), ("video", (3, 4, 8), 1.0), ("text", 3)],
    "images and videos": [("video", (2, 8, 4), 1.5), ("text", 2), ("image", (1, 4, 8)),
                          ("text", 1), ("video", (4, 4, 4), 0.25), ("text", 3),
                          ("image", (1, 8, 12)), ("text", 2)],
}  # fmt: skip
TIMESTAMP_TOKENS = 3  # the text before each frame of a Qwen3-VL or GLM-4V video (its timestamp)


def builder_sequences(
    family: str, merge_size: int, tokens_per_second: float = 2.0
) -> dict[str, MultimodalSequence]:
    """The check's sequences for ``family`` at one merge size, by name.

    A Qwen3-VL or GLM-4V video is laid out as those processors lay it out: each frame after
    its own timestamp (text), one grid row for the whole video.
    """
    frame_runs = POSITION_RULES[family].frame_runs
    out = {}
    for name, segments in SEQUENCES.items():
        types, images, videos, seconds = [], [], [], []
        for segment in segments:
            kind = segment[0]
            if kind == "text":
                types += [TEXT] * segment[1]
                continue
            t, h, w = segment[1]
            per_frame = (h // merge_size) * (w // merge_size)
            if kind == "image":
                images.append([t, h, w])
                types += [IMAGE] * t * per_frame
                continue
            videos.append([t, h, w])
            seconds.append(segment[2])
            for _ in range(t) if frame_runs else ():
                types += [TEXT] * TIMESTAMP_TOKENS + [VIDEO] * per_frame
            if not frame_runs:
                types += [VIDEO] * t * per_frame
        out[name] = MultimodalSequence(
            torch.tensor(types, dtype=torch.long),
            torch.tensor(images, dtype=torch.long).reshape(-1, 3),
            torch.tensor(videos, dtype=torch.long).reshape(-1, 3),
            torch.tensor(seconds, dtype=torch.float64),
            merge_size,
            tokens_per_second,
        )
    return out


# --------------------------------------------------------------------------- mistaken builders


@dataclass(frozen=True)
class Mistake:
    """How a mistaken builder departs from its family's rule (all off: the rule itself).

    ``advance``: how far text moves on after a grid (``"extent"``: max(h, w) / m, the rule;
    ``"tokens"``: the grid's token count; ``"patches"``: max(h, w), the merge forgotten);
    ``transposed``: the grid read as (t, w, h); ``rows_swapped``: the height and width rows
    exchanged; ``time``: the time step (``None``: the rule's; ``"one"``: 1; ``"scaled"``:
    Qwen2.5-VL's; ``"frame_index"``: a frame-run video's frames counted on from its first);
    ``spaced``: token indices in patches (y * m, x * m) instead of tokens.
    """

    advance: str = "extent"
    transposed: bool = False
    rows_swapped: bool = False
    time: str | None = None
    spaced: bool = False


def mistaken_positions(sequence: MultimodalSequence, family: str, mistake: Mistake) -> torch.Tensor:
    """What a builder making ``mistake`` returns for ``sequence``: ``(3, seq_len)`` int64."""
    rule = POSITION_RULES[family]
    merge = sequence.spatial_merge_size
    grids = {IMAGE: [(tuple(g), 1.0, 0) for g in sequence.image_grids.tolist()], VIDEO: []}
    for v, (t, h, w) in enumerate(sequence.video_grids.tolist()):
        scaled = sequence.tokens_per_second * float(sequence.second_per_grid[v])
        step = scaled if (rule.scaled_time and mistake.time is None) else 1.0
        step = scaled if mistake.time == "scaled" else step
        if rule.frame_runs:
            grids[VIDEO] += [((1, h, w), 1.0, f) for f in range(t)]
        else:
            grids[VIDEO].append(((t, h, w), step, 0))
    used, pieces, current = {IMAGE: 0, VIDEO: 0}, [], 0
    for kind, _, length in token_runs(sequence.token_types):
        if kind == TEXT:
            pieces.append(torch.arange(current, current + length).expand(3, -1))
            current += length
            continue
        (t, h, w), step, frame = grids[kind][used[kind]]
        used[kind] += 1
        read = (t, w, h) if mistake.transposed else (t, h, w)
        piece = grid_positions_3d(read, 0, merge, step)
        if mistake.spaced:
            piece = piece * torch.tensor([[1], [merge], [merge]])
        if mistake.time == "frame_index":
            piece[0] += frame
        piece = piece + current
        if mistake.rows_swapped:
            piece = piece[[0, 2, 1]]
        pieces.append(piece[:, :length])
        extent = {"extent": max(h, w) // merge, "tokens": length, "patches": max(h, w)}
        current += extent[mistake.advance]
    return torch.cat(pieces, dim=1) if pieces else torch.zeros(3, 0, dtype=torch.long)


@dataclass
class BuilderHypothesis:
    key: str
    title: str
    detail: str
    mistake: Mistake


def no_resume(family: str) -> Iterator[BuilderHypothesis]:
    yield BuilderHypothesis(
        "no_resume",
        "text that does not resume after the image",
        "your builder moves the text on by the grid's token count (t x h/m x w/m) after an "
        "image or video; the rule moves it on by max(h, w) / m, past the grid's largest height "
        "and width index",
        Mistake(advance="tokens"),
    )


def transposed(family: str) -> Iterator[BuilderHypothesis]:
    yield BuilderHypothesis(
        "transposed",
        "the grid transposed",
        "your builder reads each grid (t, h, w) as (t, w, h): the tokens of an h x w image get "
        "the rows and columns of a w x h one (image_grid_thw's last two columns exchanged)",
        Mistake(transposed=True),
    )
    yield BuilderHypothesis(
        "rows_swapped",
        "the grid transposed",
        "your builder puts each token's column in the height row and its row in the width row",
        Mistake(rows_swapped=True),
    )


def time_scale(family: str) -> Iterator[BuilderHypothesis]:
    rule = POSITION_RULES[family]
    if rule.scaled_time:
        detail = (
            "your builder numbers a video's temporal patches 0, 1, 2, ...; Qwen2.5-VL spaces "
            "them by tokens_per_second x second_per_grid_t (so that the time row counts "
            "seconds), as Qwen2-VL does not: the temporal index not scaled"
        )
        mistake = Mistake(time="one")
    elif rule.frame_runs:
        detail = (
            "your builder counts a video's frames on from its first (frame f at its text "
            f"position + f), as for one grid of t frames; {rule.models} place each frame by "
            "the timestamp before it, at the text position alone: the temporal index scaled "
            "where the timestamps already carry the time"
        )
        mistake = Mistake(time="frame_index")
    else:
        detail = (
            "your builder spaces a video's temporal patches by tokens_per_second x "
            "second_per_grid_t (Qwen2.5-VL's rule); Qwen2-VL numbers them 0, 1, 2, ...: the "
            "temporal index scaled where the family does not scale it"
        )
        mistake = Mistake(time="scaled")
    yield BuilderHypothesis("time", "the temporal index on the wrong scale", detail, mistake)


def merge_ignored(family: str) -> Iterator[BuilderHypothesis]:
    yield BuilderHypothesis(
        "merge_advance",
        "the merge size ignored",
        "your builder moves the text on by max(h, w) after a grid, in patches: the vision "
        "tower merges m x m patches into one token, and the rule moves on by max(h, w) / m",
        Mistake(advance="patches"),
    )
    yield BuilderHypothesis(
        "merge_spaced",
        "the merge size ignored",
        "your builder numbers a grid's rows and columns in patches (0, m, 2m, ...), not in "
        "merged tokens (0, 1, 2, ...)",
        Mistake(spaced=True),
    )


def _example(family: str, mistake: Mistake, title: str) -> Callable[[], Example]:
    def make() -> Example:
        def builder(sequence):
            return mistaken_positions(sequence, family, mistake)

        return Example(builder, family, title)

    return make


BUILDER_BUG_MODELS: dict[str, BugModel] = {
    "no_resume": BugModel("text that does not resume after the image", no_resume,
                          _example("qwen2_vl", Mistake(advance="tokens"),
                                   "text that does not resume after the image"), "builders"),
    "transposed": BugModel("the grid transposed", transposed,
                           _example("qwen2_5_vl", Mistake(transposed=True),
                                    "the grid transposed"), "builders"),
    "time": BugModel("the temporal index on the wrong scale", time_scale,
                     _example("qwen2_5_vl", Mistake(time="one"),
                              "the temporal index on the wrong scale"), "builders"),
    "merge": BugModel("the merge size ignored", merge_ignored,
                      _example("qwen3_vl", Mistake(advance="patches"), "the merge size ignored"),
                      "builders"),
}  # fmt: skip
"""The mistakes of position builders, in report order; an example's ``reference`` is the
family, and its ``fn`` a builder (the check is :func:`assert_mrope_positions_equal`)."""


# --------------------------------------------------------------------------- the check


def _positions(builder: Builder, sequence: MultimodalSequence, name: str) -> torch.Tensor:
    where = f"on the sequence {name!r} (merge size {sequence.spatial_merge_size})"
    try:
        out = call_user(builder, sequence)
    except FnRaised as raised:
        error = raised.error
        message = str(error).strip() or "(no message)"
        raise AssertionError(
            f"the builder raised {type(error).__name__} {where}: {message}"
        ) from error
    out = to_torch(out, "positions")
    n = sequence.token_types.numel()
    if tuple(out.shape) != (3, n) or out.is_floating_point():
        raise AssertionError(
            f"the builder returned positions of shape {tuple(out.shape)} ({out.dtype}) {where}; "
            f"they must be (3, {n}) integers: time, height, width rows"
        )
    return out.to("cpu", torch.int64)


def _token_words(sequence: MultimodalSequence, index: int) -> str:
    """Token ``index`` in words: text, or which image or video (and frame) it belongs to."""
    count = {IMAGE: 0, VIDEO: 0}
    for kind, first, length in token_runs(sequence.token_types):
        if kind != TEXT:
            count[kind] += 1
        if first <= index < first + length:
            if kind == TEXT:
                return "a text token"
            return f"a token of {'image' if kind == IMAGE else 'video'} run {count[kind]}"
    return "a token"


def assert_mrope_positions_equal(
    builder: Builder,
    *,
    family: str,
    merge_sizes: tuple[int, ...] = (1, 2),
    tokens_per_second: float = 2.0,
) -> None:
    r"""Check a multimodal M-RoPE position builder against its family's rules, and diagnose it.

    Explained on the site: [position builders](check.md#check-builders).

    ``builder(sequence) -> positions``: ``sequence`` a
    :class:`~posenc_ref.mrope_positions.MultimodalSequence` (token types, image and video
    grids in patches, seconds per temporal patch, the merge size and ``tokens_per_second``),
    ``positions`` ``(3, seq_len)`` integers, rows time, height, width. The sequences: text only,
    an image only, text around an image, three images of different grids, a video, and images
    and videos mixed, each at every merge size of ``merge_sizes``; a Qwen3-VL or GLM-4V video
    with a timestamp before each frame. Every position must equal
    :func:`~posenc_ref.mrope_positions.mrope_position_ids`'s.

    Parameters
    ----------
    builder
        The builder under test (wrap transformers' ``get_rope_index`` or vLLM's
        ``get_mrope_input_positions`` in a function of the sequence).
    family
        ``"qwen2_vl"``, ``"qwen2_5_vl"``, ``"qwen3_vl"`` or ``"glm4v"``.
    merge_sizes
        Merge sizes to check (``spatial_merge_size``), each 1, 2 or 4.
    tokens_per_second
        Qwen2.5-VL's ``tokens_per_second`` (its vision config's; 2 in released configs).

    Raises
    ------
    AssertionError
        When a position differs: the first difference, how many, and the mistakes (each a
        model of a mistaken builder, run on the same sequences) that give the builder's output.
    """
    if not callable(builder):
        raise TypeError(f"builder must be callable as builder(sequence), got {builder!r:.60}")
    if family not in POSITION_RULES:
        raise ValueError(f"family must be one of {tuple(POSITION_RULES)}, got {family!r}")
    if isinstance(merge_sizes, int) or not merge_sizes:
        raise TypeError(f"merge_sizes must be a non-empty tuple of 1, 2 or 4, got {merge_sizes!r}")
    for m in merge_sizes:
        if check_int("merge_sizes", m, minimum=1) not in (1, 2, 4):
            raise ValueError(f"merge_sizes must hold 1, 2 or 4 (they divide the grids), got {m}")
    tokens_per_second = check_positive_float("tokens_per_second", tokens_per_second)
    cases = []  # (name, sequence, expected, got)
    for m in merge_sizes:
        for name, sequence in builder_sequences(family, m, tokens_per_second).items():
            expected = mrope_position_ids(sequence, family)
            cases.append((name, sequence, expected, _positions(builder, sequence, name)))
    wrong = [case for case in cases if not torch.equal(case[2], case[3])]
    if not wrong:
        return None
    raise AssertionError(_report(family, cases, wrong))


def _report(family: str, cases: list, wrong: list) -> str:
    name, sequence, expected, got = wrong[0]
    index = int(torch.nonzero((expected != got).any(dim=0))[0])
    rows = lambda t: tuple(int(v) for v in t[:, index])  # noqa: E731
    lines = [
        f"The builder disagrees with {POSITION_RULES[family].models}'s position rule "
        f"(family={family!r}) on {len(wrong)} of {len(cases)} sequences.",
        f"First difference: token {index}, {_token_words(sequence, index)}, of the sequence "
        f"{name!r} (merge size {sequence.spatial_merge_size}): got (time, height, width) = "
        f"{rows(got)}, expected {rows(expected)}.",
        "Sequences that differ: "
        + ", ".join(f"{n!r} (merge {s.spatial_merge_size})" for n, s, _, _ in wrong)
        + ".",
    ]
    found = []
    for row in BUILDER_BUG_MODELS.values():
        for h in row.candidates(family):
            if all(
                torch.equal(mistaken_positions(s, family, h.mistake), g) for _, s, _, g in cases
            ):
                found.append(h)
                break
    if found:
        lines.append(
            f"Diagnosis (tested: the {len(BUILDER_BUG_MODELS)} mistakes of position builders "
            "were run on the same sequences; "
            + ("this one gives" if len(found) == 1 else "these give")
            + " your builder's output exactly):"
        )
        lines += [f"    - {h.title}: {h.detail}." for h in found]
    else:
        lines.append(
            "Diagnosis: none of the mistakes of position builders tested gives your builder's "
            "output; the first difference above is where to look."
        )
    return "\n".join(lines)
