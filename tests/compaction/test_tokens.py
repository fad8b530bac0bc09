"""Token estimates of audio and video follow what providers bill (length of the clip), not bytes."""

from __future__ import annotations

import io
import wave

import pytest

from axio_context import AudioBlock, ImageBlock, Message, TextBlock, ToolResultBlock, VideoBlock
from axio_context.compaction import ExtractiveSummarizer, Summarization, TokenBudget
from axio_context.tokens import (
    AUDIO_TOKENS_PER_SECOND,
    IMAGE_TOKENS,
    VIDEO_TOKENS_PER_SECOND,
    estimate_media_seconds,
    estimate_message_tokens,
)


def wav(seconds: float, rate: int = 16_000, channels: int = 1) -> bytes:
    """A real WAV file of silence, written by the stdlib's wave module."""
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(int(seconds * rate) * channels * 2))
    return out.getvalue()


def tokens_of(block: AudioBlock | VideoBlock | ImageBlock) -> int:
    return estimate_message_tokens(Message(role="user", content=[block])) - 4  # less the framing


def test_audio_is_estimated_by_its_length() -> None:
    voice = wav(10)  # 10 s of 16 kHz mono: ~320 KB
    assert estimate_media_seconds(AudioBlock(media_type="audio/wav", data=voice)) == pytest.approx(10)
    assert tokens_of(AudioBlock(media_type="audio/wav", data=voice)) == 10 * AUDIO_TOKENS_PER_SECOND
    # the same 10 s at 48 kHz stereo is six times the bytes and the same tokens
    hifi = wav(10, rate=48_000, channels=2)
    assert tokens_of(AudioBlock(media_type="audio/x-wav", data=hifi)) == 10 * AUDIO_TOKENS_PER_SECOND
    # an image of the same size costs its flat rate; ten seconds of speech costs less
    assert tokens_of(ImageBlock(media_type="image/png", data=voice)) == IMAGE_TOKENS
    assert tokens_of(AudioBlock(media_type="audio/wav", data=voice)) < IMAGE_TOKENS


def test_compressed_and_headerless_audio_assume_a_typical_bitrate() -> None:
    mp3 = AudioBlock(media_type="audio/mpeg", data=bytes(160_000))  # 10 s at 128 kbit/s
    assert tokens_of(mp3) == 10 * AUDIO_TOKENS_PER_SECOND
    opus = AudioBlock(media_type="audio/webm; codecs=opus", data=bytes(80_000))  # 10 s at 64 kbit/s
    assert tokens_of(opus) == 10 * AUDIO_TOKENS_PER_SECOND
    raw = AudioBlock(media_type="audio/wav", data=b"RIFF" + bytes(320_000))  # no valid header
    assert tokens_of(raw) == pytest.approx(10 * AUDIO_TOKENS_PER_SECOND, abs=1)
    # a tiny clip still costs a second's worth
    assert tokens_of(AudioBlock(media_type="audio/ogg", data=b"OggS")) == AUDIO_TOKENS_PER_SECOND


def test_video_is_estimated_by_its_length() -> None:
    clip = VideoBlock(media_type="video/mp4", data=bytes(2_500_000))  # 10 s at 2 Mbit/s
    assert tokens_of(clip) == 10 * VIDEO_TOKENS_PER_SECOND
    assert tokens_of(clip) < len(clip.data) // 100


def test_media_in_tool_results_is_estimated_the_same_way() -> None:
    audio = AudioBlock(media_type="audio/wav", data=wav(10))
    result = Message(role="user", content=[ToolResultBlock(tool_use_id="t", content=[audio])])
    assert estimate_message_tokens(result) == 4 + 4 + 10 * AUDIO_TOKENS_PER_SECOND


async def test_voice_turns_fit_a_model_window_without_being_summarized() -> None:
    conversation: list[Message] = []
    for i in range(3):
        conversation += [
            Message(role="user", content=[AudioBlock(media_type="audio/wav", data=wav(10))]),
            Message(role="assistant", content=[TextBlock(text=f"answer {i}")]),
        ]
    view = await TokenBudget.from_model("gpt-4o", [Summarization(ExtractiveSummarizer())])(conversation)
    assert view == conversation
