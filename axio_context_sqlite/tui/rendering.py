"""How a message's blocks read on the terminal: plain strings, no widgets, so they can be tested
and reused (the transcript screen and ``show --follow`` share :func:`media_line`).

Stored text reaches a widget only as :func:`shown` makes it: a Rich ``Text`` (never a markup
string: ``[/]`` or ``[link=...]`` in a title stays literal) of
:func:`~axio_context.terminal.visible` text (no control or bidi character reaches the terminal).
Search highlights are styles on spans of it (:func:`highlighted`).

A tool call or result is *folded*: one title line (name, id, the start of its arguments or
result) that the transcript screen puts on a collapsed section, with the whole body inside.
Images, audio and video are one line with their type and size, never their bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import msgspec
from rich.text import Text

from axio_context.blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    VideoBlock,
)
from axio_context.terminal import visible
from axio_context.transcript import CheckpointRecord

__all__ = [
    "HIGHLIGHT",
    "Part",
    "checkpoint_line",
    "count",
    "fold_title",
    "highlighted",
    "media_line",
    "one_line",
    "parts",
    "shown",
    "size",
]

#: How much of a folded call's arguments or result its title line shows.
TITLE_CHARS: Final = 60

#: The style of a search hit's matched words.
HIGHLIGHT: Final = "bold yellow"

_pretty = msgspec.json.Encoder(order="sorted")


def count(n: int, noun: str) -> str:
    """``n`` of ``noun``, singular for one: "1 message", "2 messages"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def size(n: int) -> str:
    """A byte count for people: ``812 B``, ``12.3 KB``, ``4.0 MB``."""
    if n < 1000:
        return f"{n} B"
    value, unit = n / 1000, "KB"
    for bigger in ("MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.1f} {unit}"


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with ``…``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def shown(text: str, style: str = "") -> Text:
    """Stored (or typed) text as a widget takes it: ``Text``, never markup, with every control
    and bidi character shown as its escape."""
    return Text(visible(text), style=style)


def highlighted(snippet: str, spans: Iterable[tuple[int, int]], limit: int = 100) -> Text:
    """A search snippet on one line, cut to ``limit`` characters, its matched ranges styled
    :data:`HIGHLIGHT` (spans of the text, so brackets in it are text, and no word is lost)."""
    out = Text()
    last = 0
    for start, end in sorted(spans):
        if start < last:
            continue
        out.append(visible(snippet[last:start]))
        out.append(visible(snippet[start:end]), style=HIGHLIGHT)
        last = end
    out.append(visible(snippet[last:]))
    flat = Text(" ").join(out.split("\n"))  # one line, the spans kept
    flat.plain = flat.plain.replace("\t", " ")
    if len(flat) > limit:
        flat.truncate(limit - 1)
        flat.append("…")
    return flat


def media_line(block: ImageBlock | AudioBlock | VideoBlock) -> str:
    """An image (or audio, video) as one line: its kind, media type and size."""
    kind = {ImageBlock: "image", AudioBlock: "audio", VideoBlock: "video"}[type(block)]
    return f"[{kind} {one_line(block.media_type, 80)}, {size(len(block.data))}]"


class Part(msgspec.Struct, frozen=True):
    """One piece of a message as shown: ``text`` alone, or folded with a ``title`` and a body."""

    kind: str
    text: str
    title: str | None = None

    @property
    def folded(self) -> bool:
        """Whether it shows as a collapsed section (a tool call or result)."""
        return self.title is not None


def _result_text(block: ToolResultBlock) -> str:
    if isinstance(block.content, str):
        return block.content
    return "\n".join(item.text if isinstance(item, TextBlock) else media_line(item) for item in block.content)


def fold_title(block: ToolUseBlock | ToolResultBlock) -> str:
    """The one line a folded tool call or result shows while closed."""
    if isinstance(block, ToolUseBlock):
        args = _pretty.encode(block.input).decode()
        return f"▸ tool call {block.name} ({block.id}) {one_line(args)}"
    label = "tool error" if block.is_error else "tool result"
    return f"▸ {label} for {block.tool_use_id}: {one_line(_result_text(block))}"


def parts(content: Iterable[ContentBlock]) -> list[Part]:
    """A message's blocks as the parts the transcript shows, in order."""
    out: list[Part] = []
    for block in content:
        if isinstance(block, TextBlock):
            if block.text:
                out.append(Part("text", block.text))
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            out.append(Part("media", media_line(block)))
        elif isinstance(block, ToolUseBlock):
            body = msgspec.json.format(_pretty.encode(block.input), indent=2).decode()
            out.append(Part("tool_use", body, fold_title(block)))
        elif isinstance(block, ToolResultBlock):
            out.append(Part("tool_result", _result_text(block), fold_title(block)))
        elif isinstance(block, ReasoningBlock):
            text = "(redacted)" if block.redacted or not block.text else block.text
            out.append(Part("reasoning", text, f"▸ reasoning {one_line(text)}"))
        elif isinstance(block, ProviderBlock):
            out.append(Part("provider", f"[{one_line(block.provider, 40)} {one_line(block.kind, 40)}]"))
        else:
            out.append(Part("unknown", f"[block of unknown type {getattr(block, 'type', '?')!r}]"))
    return out or [Part("empty", "(no content)")]


def checkpoint_line(cp: CheckpointRecord) -> str:
    """The marker a compaction checkpoint leaves in the transcript."""
    covered = "no message" if cp.position == 0 else f"messages 0-{cp.position - 1}"
    return (
        f"── compaction checkpoint {cp.id}: {covered} summarised"
        f" ({cp.tokens_before:,} → {cp.tokens_after:,} tokens, {cp.created_at}) ──"
    )
