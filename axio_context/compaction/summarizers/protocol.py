"""The summarizer protocol, its checks, and the summary pair every compaction writes."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Final, Protocol, runtime_checkable

from ...blocks import (
    TextBlock,
)
from ...messages import Message
from ..models import DEFAULT_CONTEXT_WINDOW

__all__ = [
    "DEFAULT_COMPACTION_PROMPT",
    "SUMMARY_ACK",
    "Summarizer",
    "context_window_of",
    "is_summary_pair",
    "split_previous_summary",
    "summarizer_name",
    "summary_messages",
]


#: axio's compaction prompt, plus one sentence on updating an earlier summary.
DEFAULT_COMPACTION_PROMPT: Final = (
    "You are a conversation summarizer. You will see a conversation between"
    " a user and an AI assistant, including tool calls and their results."
    " Produce a concise summary preserving: user goals, decisions made,"
    " key facts, tool outcomes, and state changes. Write as narrative prose,"
    " not as a transcript."
    " If the conversation opens with an earlier summary, write one updated summary"
    " that keeps what still matters from it; do not repeat it verbatim."
)

#: The assistant's reply after a summary, as axio writes it; it marks a summary pair.
SUMMARY_ACK: Final = "Understood, context restored."


@runtime_checkable
class Summarizer(Protocol):
    """Anything that can be awaited as ``summarizer(messages, system_prompt)`` for a summary text.

    Optional attributes: ``context_window`` (or ``model.context_window``, as on axio
    transports) sizes ``AutoCompactStore``'s threshold; ``model`` or ``name`` is recorded in
    checkpoints as who wrote the summary.
    """

    def __call__(self, messages: list[Message], system_prompt: str, /) -> Awaitable[str]: ...


def summarizer_name(summarizer: object) -> str:
    """Who writes the summaries: the model name where the summarizer has one, else its name."""
    model = getattr(summarizer, "model", None)
    if isinstance(model, str) and model:
        return model
    for attr in ("id", "name"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    name = getattr(summarizer, "name", None)
    if isinstance(name, str) and name:
        return name
    qualname = getattr(summarizer, "__qualname__", None)
    return qualname if isinstance(qualname, str) else type(summarizer).__qualname__


def context_window_of(summarizer: object, default: int = DEFAULT_CONTEXT_WINDOW) -> int:
    """``summarizer.context_window`` or ``summarizer.model.context_window``, else ``default``."""
    for owner in (summarizer, getattr(summarizer, "model", None)):
        window = getattr(owner, "context_window", None)
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            return window
    return default


# --- the summary pair -------------------------------------------------------------------------


def summary_messages(summary: str) -> list[Message]:
    """The two messages a compaction puts in place of old history (axio's shape)."""
    return [
        Message(role="user", content=[TextBlock(text=summary)]),
        Message(role="assistant", content=[TextBlock(text=SUMMARY_ACK)]),
    ]


def is_summary_pair(messages: Sequence[Message], index: int = 0) -> bool:
    """True when ``messages[index:index + 2]`` is a summary and its acknowledgement."""
    if index < 0 or index + 1 >= len(messages):
        return False
    first, second = messages[index], messages[index + 1]
    return (
        first.role == "user"
        and len(first.content) == 1
        and isinstance(first.content[0], TextBlock)
        and second.role == "assistant"
        and len(second.content) == 1
        and isinstance(second.content[0], TextBlock)
        and second.content[0].text == SUMMARY_ACK
    )


def split_previous_summary(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """``(earlier summary text or None, the messages after it)``."""
    if is_summary_pair(messages):
        return messages[0].text, list(messages[2:])
    return None, list(messages)
