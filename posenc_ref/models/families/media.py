r"""Audio, speech, video and time-series models: their rows, and where a wrapper keeps its rotary.

These models rotate a 1-D sequence (audio frames, codec frames, video frames, patches of a time
series) as text models rotate tokens, with transformers' conventions; their rows are keyed by
the ``model_type`` of the sub-config that holds the rotary (PE Audio's ``audio_config`` is a
``pe_audio_encoder``). Each row was read from the family's code in transformers 5.23 and is
proven by running its own rotary module and apply function (tests/test_media_families.py).

:data:`PARTS` says where a wrapper keeps the sub-config that holds the rotary: the readers
(:func:`~posenc_ref.models.rope_spec`, :func:`~posenc_ref.encodings.positional_encoding`,
``inspect``) descend into it and say so in a note.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..family import Family

__all__ = ["MEDIA", "PARTS", "Part"]


def rotating(
    name: str,
    what: str,
    *,
    folder: str | None = None,
    positions: str = "positions arange(sequence)",
    **row,
) -> Family:
    """A row whose code rotates ``what`` (a 1-D sequence) with the conventions."""
    pairs = "interleaved pairs" if row.get("layout") == "interleaved" else "rotate_half"
    return Family(
        **row,
        folder=folder,
        source=f"modeling_{folder or name}.py: {pairs} on the first int(head_dim * "
        f"partial_rotary_factor) coordinates of {what}, {positions}",
    )


_CACHED = "positions arange(sequence) + the cache's length"


_BY_HEAD = (
    "a rotation by head index, not by position: its decoder makes position_ids = "
    "arange(num_attention_heads) and broadcasts the table over the sequence "
    "(apply_rotary_pos_emb(..., unsqueeze_dim=2)), so every token of head h turns by the same "
    "angles h * w_i; q and k of one head turn alike and their dot products, hence the "
    "attention, carry no positions (the convolutions around it carry order)"
)


def by_head(name: str) -> Family:
    return Family(
        encoding="nope",
        instead=_BY_HEAD,
        source=f"modeling_{name}.py: the decoder's rotary table indexed by head, not by token",
    )


_PE = dict(layout="interleaved", theta=20_000.0)
_NEMOTRON_ROPE = {"rope_type": "default", "rope_theta": 10_000.0, "partial_rotary_factor": 0.5}

MEDIA: dict[str, Family] = {
    "mimi": rotating("mimi", "the encoder's and decoder's transformer frames", positions=_CACHED),
    "pocket_tts_audio_tokenizer": rotating(
        "pocket_tts_audio_tokenizer", "the codec transformer's frames", positions=_CACHED
    ),
    "pe_audio_encoder": rotating(
        "pe_audio_encoder",
        "the audio frames (stack_freqs: a 2 x 2 rotation per pair 2i, 2i+1)",
        folder="pe_audio",
        **_PE,
    ),  # fmt: skip
    "pe_video_encoder": rotating(
        "pe_video_encoder",
        "the video frames (stack_freqs: a 2 x 2 rotation per pair 2i, 2i+1)",
        folder="pe_video",
        **_PE,
    ),  # fmt: skip
    "pe_audio_video_encoder": rotating(
        "pe_audio_video_encoder",
        "the joined audio and video frames (stack_freqs)",
        folder="pe_audio_video",
        **_PE,
    ),  # fmt: skip
    "timesfm2_5": rotating(
        "timesfm2_5",
        "the series' patches",
        positions="positions arange(patches) minus the number of masked (padding) patches, "
        "negative for those",
    ),  # fmt: skip
    "lasr_encoder": rotating("lasr_encoder", "the subsampled audio frames", folder="lasr"),
    "nemotron3_5_transcribe_asr_audio": rotating(
        "nemotron3_5_transcribe_asr_audio",
        "the audio frames (the first half of each head: "
        "partial_rotary_factor 0.5 in its RoPE dict)",
        folder="nemotron3_5_transcribe",
        rope=_NEMOTRON_ROPE,
    ),  # fmt: skip
    "nemotron3_5_transcribe_word_timestamp": rotating(
        "nemotron3_5_transcribe_word_timestamp",
        "the word-timestamp head's frames (the first half of each head)",
        folder="nemotron3_5_transcribe",
        rope=_NEMOTRON_ROPE,
    ),  # fmt: skip
    "nemotron3_diarization_audio": rotating(
        "nemotron3_diarization_audio", "the audio frames", folder="nemotron3_diarization"
    ),
    "xcodec2": by_head("xcodec2"),
    "neucodec": by_head("neucodec"),
}
"""``model_type`` (of the sub-config holding the rotary) -> its row."""


@dataclass(frozen=True)
class Part:
    """Where a wrapper keeps the sub-config that holds its rotary.

    Attributes
    ----------
    path : str
        The dotted key of the sub-config (``"audio_config"``, ``"thinker_config"``).
    model_type : str
        The ``model_type`` its config class builds there (a released file may leave it out).
    others : str
        The wrapper's other positional parts, in words (read by passing them alone).
    """

    path: str
    model_type: str
    others: str = ""


PARTS: dict[str, Part] = {
    "pe_audio": Part("audio_config", "pe_audio_encoder",
                     "text_config (ModernBERT, the text encoder) has a RoPE of its own"),
    "pe_video": Part("video_config", "pe_video_encoder",
                     "text_config (ModernBERT, the text encoder) has a RoPE of its own"),
    "pe_audio_video": Part("audio_video_config", "pe_audio_video_encoder",
                           "text_config (ModernBERT) has a RoPE of its own"),
    "lasr_ctc": Part("encoder_config", "lasr_encoder"),
    "nemo_speechlm": Part(
        "audio_config", "nemotron3_5_transcribe_audio",
        "text_config (nemotron_h) uses no positional encoding; word_timestamp_config's "
        "transformer rotates its frames as the encoder does",
    ),
    "nemotron3_5_transcribe_audio": Part(
        "asr_config", "nemotron3_5_transcribe_asr_audio",
        "diarization_config's audio_config rotates with the whole head",
    ),
    "nemotron3_diarization": Part("audio_config", "nemotron3_diarization_audio"),
    # the language model is the thinker's; the DiT's RoPE (token2wav_config.dit_config) needs
    # a feature posenc_ref lacks (it rotates the first head only)
    "qwen2_5_omni": Part(
        "thinker_config", "qwen2_5_omni_thinker",
        "talker_config has an M-RoPE of its own; token2wav_config's dit_config "
        "(qwen2_5_omni_dit) rotates the first head only",
    ),
    "qwen2_5_omni_token2wav": Part("dit_config", "qwen2_5_omni_dit"),
}  # fmt: skip
"""A wrapper's ``model_type`` -> the :class:`Part` that holds its rotary."""
