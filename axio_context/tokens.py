"""Token estimation: a pluggable counter and a fast default that is honest about being a guess.

Exact counts need the model's tokenizer; an agent loop gets real input-token counts from the
provider (``add_context_tokens``). The estimate is for decisions made before a call: how much of a
view fits a budget. Stores cache each message's estimate when it is appended, so a budget check
never re-reads the transcript.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

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
from .messages import Message

__all__ = ["DefaultEstimator", "TokenCounter", "estimate_message_tokens", "estimate_tokens"]

#: Per-message framing most chat formats add (role markers, separators).
MESSAGE_OVERHEAD = 4
#: A typical provider's charge for one image (Anthropic bills ~1,600 for a 1092x1092 image).
IMAGE_TOKENS = 1_600
#: Roughly four characters per token for English prose and code in BPE tokenizers.
CHARS_PER_TOKEN = 4


@runtime_checkable
class TokenCounter(Protocol):
    """Counts (or estimates) the tokens one message costs in a model's context."""

    def count(self, message: Message) -> int:
        """Tokens this message costs, including its framing."""
        ...


def _chars(n: int) -> int:
    return (n + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def estimate_message_tokens(message: Message) -> int:
    """A fast estimate: characters / 4, a flat cost per image, a little framing per block."""
    total = MESSAGE_OVERHEAD
    for block in message.content:
        if isinstance(block, TextBlock):
            total += _chars(len(block.text))
        elif isinstance(block, ToolUseBlock):
            total += 8 + _chars(len(block.name) + len(repr(block.input)))
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
                        total += _chars(len(item.data))
        elif isinstance(block, ReasoningBlock):
            total += _chars(len(block.text))
        elif isinstance(block, ImageBlock):
            total += IMAGE_TOKENS
        elif isinstance(block, AudioBlock | VideoBlock):
            total += _chars(len(block.data))
        elif isinstance(block, ProviderBlock | UnknownBlock):
            total += _chars(len(repr(block.data)))
    return total


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
