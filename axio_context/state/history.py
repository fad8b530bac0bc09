"""Subagent messages between pai's dict shape and :class:`~axio_context.messages.Message`.

A pydantic-ai message dict (``{"kind": "request" | "response", "parts": [...]}``) is stored as a
Message whose text blocks hold what people read and search (prompts, replies, tool returns) and
whose :class:`~axio_context.blocks.ProviderBlock` holds the dict exactly as it came, so the state
gives back the same dicts. A message written to a subagent session by other means (no such
block) comes back as a minimal request or response dict of its text.
"""

from __future__ import annotations

from typing import Any, Final

from ..blocks import ContentBlock, ProviderBlock, TextBlock
from ..messages import Message

__all__ = ["PROVIDER", "message_dict_of", "message_of"]

#: The ProviderBlock provider and kind that carry a pydantic-ai message dict.
PROVIDER: Final = "pydantic-ai"
KIND: Final = "model_message"

_TEXT_PARTS: Final = frozenset(
    {"user-prompt", "system-prompt", "text", "tool-return", "retry-prompt", "thinking"}
)


def _part_text(part: Any) -> str | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("part_kind")
    if kind == "tool-call":
        args = part.get("args")
        return (
            f"{part.get('tool_name', '?')}({args if isinstance(args, str) else '' if args is None else args})"
        )
    if kind not in _TEXT_PARTS:
        return None
    content = part.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a user prompt of several items: its strings
        texts = [c for c in content if isinstance(c, str)]
        return "\n".join(texts) if texts else None
    return None


def message_of(data: dict[str, Any]) -> Message:
    """The Message a pai message dict is stored as (its text, and the dict itself)."""
    if not isinstance(data, dict):
        raise TypeError(f"a subagent message must be a dict, got {type(data).__name__}")
    parts = data.get("parts")
    texts = [t for t in map(_part_text, parts if isinstance(parts, list) else []) if t]
    content: list[ContentBlock] = [TextBlock(text="\n".join(texts))] if texts else []
    content.append(ProviderBlock(provider=PROVIDER, kind=KIND, data=data))
    return Message(role="assistant" if data.get("kind") == "response" else "user", content=content)


def message_dict_of(message: Message) -> dict[str, Any]:
    """The pai message dict a stored Message stands for (inverse of :func:`message_of`)."""
    for block in message.content:
        if isinstance(block, ProviderBlock) and block.provider == PROVIDER and block.kind == KIND:
            return block.data
    text = message.text
    if message.role == "assistant":
        return {"kind": "response", "parts": [{"part_kind": "text", "content": text}]}
    part_kind = "system-prompt" if message.role == "system" else "user-prompt"
    return {"kind": "request", "parts": [{"part_kind": part_kind, "content": text}]}
