"""Messages rendered as plain text for a summarizer (a model or the extractive one)."""

from __future__ import annotations

from collections.abc import Sequence

from ...blocks import (
    AudioBlock,
    ImageBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from ...messages import Message, input_text
from .protocol import split_previous_summary

__all__ = [
    "clip_middle",
    "frame_transcript",
    "render_messages",
    "render_transcript",
    "result_text",
]

# --- rendering for models ---------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [{len(text) - limit} chars truncated]"


def result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str):
        return block.content
    parts: list[str] = []
    for item in block.content:
        if isinstance(item, TextBlock):
            parts.append(item.text)
        else:
            parts.append(f"[{item.media_type}, {len(item.data)} bytes]")
    return "\n".join(parts)


def render_messages(messages: Sequence[Message], *, max_result_chars: int = 2_000) -> list[str]:
    """One plain-text rendering per message (empty for a message with nothing to show), tool
    names carried from calls to their results; long tool results and arguments are clipped."""
    parts: list[str] = []
    names: dict[str, str] = {}
    for msg in messages:
        who = msg.role.capitalize()
        lines: list[str] = []
        for block in msg.content:
            if isinstance(block, TextBlock):
                if block.text:
                    lines.append(f"{who}: {block.text}")
            elif isinstance(block, ToolUseBlock):
                names[block.id] = block.name
                args = input_text(block.input)
                lines.append(f"{who} called tool {block.name}({_clip(args, 500)})")
            elif isinstance(block, ToolResultBlock):
                status = "error" if block.is_error else "result"
                name = names.get(block.tool_use_id, block.tool_use_id)
                lines.append(f"Tool {status} ({name}): {_clip(result_text(block), max_result_chars)}")
            elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
                lines.append(f"{who}: [{block.media_type} attachment]")
            elif isinstance(block, ReasoningBlock):
                continue  # private reasoning: replayed to its provider, not summarized
        parts.append("\n".join(lines))
    return parts


def frame_transcript(previous: str | None, parts: Sequence[str]) -> str:
    """The transcript text: the earlier summary (if any), then the rendered messages."""
    lines = ["Earlier summary:", previous, "", "Conversation since then:"] if previous is not None else []
    lines += [p for p in parts if p]
    return "\n".join(lines)


def render_transcript(messages: Sequence[Message], *, max_result_chars: int = 2_000) -> str:
    """A plain-text transcript for a model to summarize; long tool results are clipped."""
    previous, rest = split_previous_summary(messages)
    return frame_transcript(previous, render_messages(rest, max_result_chars=max_result_chars))


def clip_middle(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters: its start and its end around a
    ``[... N characters cut ...]`` marker (both ends matter: a reply's plan and its conclusion)."""
    if len(text) <= limit:
        return text
    limit = max(limit, 0)
    cut = len(text) - limit
    while True:
        marker = f"\n[... {cut} characters cut ...]\n"
        keep = limit - len(marker)
        if keep <= 0:
            return text[:limit]
        if len(text) - keep == cut:
            head = (keep + 1) // 2
            return f"{text[:head]}{marker}{text[len(text) - (keep - head) :]}"
        cut = len(text) - keep
