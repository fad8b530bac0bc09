"""Token estimation: a pluggable counter and a fast default that is honest about being a guess.

Exact counts need the model's tokenizer; an agent loop gets real input-token counts from the
provider (``add_context_tokens``). The estimate is for decisions made before a call: how much of a
view fits a budget. Stores cache each message's estimate when it is appended, so a budget check
never re-reads the transcript.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from typing import Final, Protocol, runtime_checkable

from .blocks import (
    AudioBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from .messages import Message, int_digits, provider_text

__all__ = [
    "DefaultEstimator",
    "TokenCounter",
    "estimate_media_seconds",
    "estimate_message_tokens",
    "estimate_tokens",
]

#: Per-message framing most chat formats add (role markers, separators).
MESSAGE_OVERHEAD = 4
#: A typical provider's charge for one image (Anthropic bills ~1,600 for a 1092x1092 image).
IMAGE_TOKENS = 1_600
#: Roughly four characters per token for English prose and code in BPE tokenizers.
CHARS_PER_TOKEN = 4
#: Providers bill sound by its length: Gemini 32 tokens a second, OpenAI's audio models about
#: 10. The higher rate, so a budget built on the estimate is not overrun.
AUDIO_TOKENS_PER_SECOND = 32
#: Gemini bills video at 263 tokens a second (a frame a second, plus the sound track).
VIDEO_TOKENS_PER_SECOND = 263
#: Bytes a second of sound by media type, where the bytes do not say (a WAV header does):
#: headerless PCM as a 16 kHz 16-bit mono voice capture, compressed formats at common bitrates.
AUDIO_BYTES_PER_SECOND: Final[dict[str, int]] = {
    "audio/wav": 32_000,
    "audio/x-wav": 32_000,
    "audio/wave": 32_000,
    "audio/pcm": 32_000,
    "audio/l16": 32_000,
    "audio/flac": 20_000,
    "audio/x-flac": 20_000,
    "audio/mpeg": 16_000,
    "audio/mp3": 16_000,
    "audio/aac": 16_000,
    "audio/mp4": 16_000,
    "audio/m4a": 16_000,
    "audio/x-m4a": 16_000,
    "audio/ogg": 8_000,
    "audio/opus": 8_000,
    "audio/webm": 8_000,
}
#: Any other audio: 128 kbit/s.
DEFAULT_AUDIO_BYTES_PER_SECOND = 16_000
#: Video, whatever its container: 2 Mbit/s, typical of screen and phone recordings.
VIDEO_BYTES_PER_SECOND = 250_000


@runtime_checkable
class TokenCounter(Protocol):
    """Counts (or estimates) the tokens one message costs in a model's context."""

    def count(self, message: Message) -> int:
        """Tokens this message costs, including its framing."""
        ...


def _chars(n: int) -> int:
    return (n + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def _wav_seconds(data: bytes) -> float | None:
    """The length of a RIFF/WAVE file from its header (byte rate and data size), if it has one."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    byte_rate = 0
    offset = 12
    while offset + 8 <= len(data):
        chunk, size = data[offset : offset + 4], int(struct.unpack_from("<I", data, offset + 4)[0])
        body = offset + 8
        if chunk == b"fmt " and size >= 12 and body + 12 <= len(data):
            byte_rate = int(struct.unpack_from("<I", data, body + 8)[0])
        elif chunk == b"data":
            if not byte_rate:
                return None
            return min(size, len(data) - body) / byte_rate  # a streamed WAV may claim more
        offset = body + size + (size & 1)
    return None


def estimate_media_seconds(block: AudioBlock | VideoBlock) -> float:
    """How long a clip plays, from a WAV header where there is one, else from its size at a
    typical bitrate for its media type (:data:`AUDIO_BYTES_PER_SECOND`, :data:`VIDEO_BYTES_PER_SECOND`)."""
    if isinstance(block, VideoBlock):
        return len(block.data) / VIDEO_BYTES_PER_SECOND
    seconds = _wav_seconds(block.data)
    if seconds is not None:
        return seconds
    kind = block.media_type.split(";", 1)[0].strip().lower()
    return len(block.data) / AUDIO_BYTES_PER_SECOND.get(kind, DEFAULT_AUDIO_BYTES_PER_SECOND)


def _media_tokens(block: AudioBlock | VideoBlock) -> int:
    # Billed by length, as providers do, never by bytes; at least one second's worth.
    rate = VIDEO_TOKENS_PER_SECOND if isinstance(block, VideoBlock) else AUDIO_TOKENS_PER_SECOND
    return max(rate, math.ceil(estimate_media_seconds(block) * rate))


def _repr_chars(value: object) -> int:
    """``len(repr(value))``, or a count of it walked piece by piece where ``repr`` refuses: an
    integer past ``str()``'s 4,300-digit limit (its digits counted from its bit length), nesting
    deeper than the recursion limit. Never raises, so every storable message has an estimate."""
    try:
        return len(repr(value))
    except Exception:  # ValueError (digit limit), RecursionError
        pass
    total = 0
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list | tuple):
            if id(item) in seen:  # a cycle (memory stores keep what they are given): repr's "[...]"
                total += 5
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                total += 2 + 4 * len(item)  # braces, ": " and ", "
                for key, val in item.items():
                    stack += (key, val)
            else:
                total += 2 + 2 * len(item)  # brackets and ", "
                stack += item
            continue
        try:
            total += len(repr(item))
        except Exception:
            if isinstance(item, int):
                total += int_digits(item)
    return total


def estimate_message_tokens(message: Message) -> int:
    """A fast estimate: characters / 4, a flat cost per image, audio and video by their length
    (:func:`estimate_media_seconds`) at providers' per-second rates, a little framing per block."""
    total = MESSAGE_OVERHEAD
    for block in message.content:
        if isinstance(block, TextBlock):
            total += _chars(len(block.text))
        elif isinstance(block, ToolUseBlock):
            total += 8 + _chars(len(block.name) + _repr_chars(block.input))
        elif isinstance(block, ToolResultBlock):
            total += 4
            if isinstance(block.content, str):
                total += _chars(len(block.content))
            else:
                for item in block.content:
                    if isinstance(item, TextBlock):
                        total += _chars(len(item.text))
                    elif isinstance(item, ImageBlock):
                        total += IMAGE_TOKENS
                    else:
                        total += _media_tokens(item)
        elif isinstance(block, ReasoningBlock):
            total += _chars(len(block.text))
        elif isinstance(block, ImageBlock):
            total += IMAGE_TOKENS
        elif isinstance(block, AudioBlock | VideoBlock):
            total += _media_tokens(block)
        elif isinstance(block, ProviderBlock):
            # Its text, not its JSON: a base64 image or an encrypted reasoning item is not text.
            chars, images = _provider_cost(block.data)
            total += 4 + _chars(chars) + IMAGE_TOKENS * images
        elif isinstance(block, UnknownBlock):
            total += _chars(_repr_chars(block.data))
    return total


def _provider_cost(data: object) -> tuple[int, int]:
    """``(characters of text, inline images)`` of a provider item: its text as search sees it
    (:func:`~axio_context.messages.provider_text`), its numbers as digits, each ``data:image/``
    URL as one image; ids, base64 and ciphertext cost nothing (the provider bills them, if at
    all, by what they hold, which an estimate cannot see)."""
    chars = len(provider_text(data))
    images, stack, seen = 0, [data], 0
    while stack and seen < 100_000:
        value = stack.pop()
        seen += 1
        if isinstance(value, str):
            images += value.startswith("data:image/")
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            chars += int_digits(value)
        elif isinstance(value, float):
            chars += len(repr(value))
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return chars, images


def estimate_tokens(messages: Iterable[Message], counter: TokenCounter | None = None) -> int:
    """Sum of the per-message estimates (or of ``counter``'s counts)."""
    if counter is None:
        return sum(estimate_message_tokens(m) for m in messages)
    return sum(counter.count(m) for m in messages)


class DefaultEstimator:
    """The default :class:`TokenCounter`: :func:`estimate_message_tokens`."""

    name = "chars/4"

    def count(self, message: Message) -> int:
        return estimate_message_tokens(message)
