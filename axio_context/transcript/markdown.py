"""Markdown for people: a session's heading and facts, and every block rendered so that stored
text never escapes its line, span or fence."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, NamedTuple

from ..blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from ..codec import (
    encode_json,
    format_json,
)
from ..memory_blocks.transfer_sql import BlockRow
from .records import SessionHeader
from .times import format_time

__all__ = [
    "contained",
    "left_open",
    "message_range",
    "render_blocks",
    "render_header",
    "render_memory_blocks",
    "short_time",
]

# --- Markdown rendering --------------------------------------------------------------------------


def short_time(text: str) -> str:
    return text.replace("T", " ").replace(".000", "").removesuffix("+00:00") + (
        " UTC" if text.endswith("+00:00") else ""
    )


def render_header(header: SessionHeader, hidden: int = 0) -> str:
    """A session's Markdown heading and facts (title, project, times, lineage, tokens).

    Stored text stays on its line and in its span: a title's line breaks become spaces, and ids,
    the project and metadata are code spans that no backtick or line break inside can end.
    """
    lines = [f"# {_heading(header.title)}" if header.title else f"# Session {_one_line(header.id)}", ""]
    if header.title:
        lines.append(f"- id: {_code(header.id)}")
    if header.project:
        lines.append(f"- project: {_code(header.project)}")
    lines.append(f"- created: {short_time(header.created_at)}, updated: {short_time(header.updated_at)}")
    if header.parent_id is not None:
        at = "" if header.fork_position is None else f" at message {header.fork_position}"
        lines.append(f"- forked from {_code(header.parent_id)}{at}")
    cleared = f" ({hidden:,} hidden by a cleared run)" if hidden else ""
    lines.append(
        f"- messages: {header.message_count - hidden:,}{cleared}; tokens in/out: "
        f"{header.input_tokens:,} / {header.output_tokens:,}"
    )
    if header.checkpoints:
        latest = header.checkpoints[-1]
        lines.append(
            f"- compacted {len(header.checkpoints)} time(s); the model sees a summary "
            f"in place of {message_range(latest.position)}"
        )
    if header.metadata:
        lines.append(f"- metadata: {_code(encode_json(header.metadata).decode())}")
    lines.append("")
    return "\n".join(lines)


def render_memory_blocks(rows: Iterable[BlockRow]) -> str:
    """The memory blocks section of a Markdown export: per block its owner, label, version and
    current value (its history stays in the lossless formats)."""
    out = ["# Memory blocks\n"]
    for r in rows:
        owner = f"agent {_code(r.agent_id)}" if r.agent_id else "shared"
        out.append(f"\n## {_code(r.label)} ({owner})\n\n")
        facts = f"version {r.version} of {len(r.versions)}, {len(r.value):,} / {r.char_limit:,} characters"
        out.append(f"- {facts}, updated {short_time(format_time(r.updated_at))}\n")
        if any(v.version == r.version and v.action == "delete" for v in r.versions):
            out.append("- deleted (an undo brings it back)\n")
        if r.read_only:
            out.append("- read-only\n")
        if r.description:
            out.append(f"- description: {_code(r.description)}\n")
        if r.agents:
            out.append(f"- attached to: {', '.join(_code(a) for a in r.agents)}\n")
        out.append(f"\n{_fence(r.value)}\n")
    return "".join(out)


_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def _one_line(text: str) -> str:
    """``text`` with its line breaks as ``\\n``/``\\r`` escapes: Markdown reads blocks (a
    heading, a list item) line by line before it reads spans, so a break would start a new one."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _heading(title: str) -> str:
    """A title as the text of a one-line ATX heading: line breaks as spaces, and a trailing run
    of ``#`` escaped so it is not taken for the heading's optional closing sequence."""
    one = _LINE_BREAK.sub(" ", title)
    return re.sub(r"(?<=\s)(#+)(\s*)$", r"\\\1\2", one)


def _code(text: str) -> str:
    """``text`` as a CommonMark code span: delimited by one backtick more than its longest run
    (so none inside closes it), padded with a space where it begins or ends with a backtick or
    with spaces (which the span would strip), on one line."""
    text = _one_line(text)
    if not text:
        return "` `"
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    stripped = text[0] == " " and text[-1] == " " and text.strip(" ") != ""
    pad = " " if text[0] == "`" or text[-1] == "`" or stripped else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def message_range(end: int) -> str:
    """``"message 0"`` or ``"messages 0-N"``: the first ``end`` positions, for people."""
    return "message 0" if end == 1 else f"messages 0-{end - 1}" if end > 1 else "no messages"


def _fold(text: str, fold: int | None) -> str:
    if fold is None or len(text) <= fold:
        return text
    return text[:fold] + f"\n… ({len(text) - fold:,} more characters)"


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}"


def _media(block: ImageBlock | AudioBlock | VideoBlock) -> str:
    kind = {ImageBlock: "image", AudioBlock: "audio", VideoBlock: "video"}[type(block)]
    return f"[{kind}: {_one_line(block.media_type)}, {len(block.data):,} bytes]"


_FENCE_OPEN: Final = re.compile(r"(`{3,})[^`]*|(~{3,}).*")
_LIST_MARKER: Final = re.compile(r"([-+*]|\d{1,9}[.)])( *)(.*)")
_THEMATIC_BREAK: Final = re.compile(r"([-*_])(?: *\1){2,} *")
_BLOCK_START: Final = re.compile(r"#{1,6}(?: |$)|>|<|`{3}|~{3}")
_RAW_TAGS: Final = ("script", "pre", "style", "textarea")
#: CommonMark HTML blocks of types 1-5 (start, end texts): they end only at an end text, however
#: many blank lines come first (types 6 and 7 end at a blank line, which separates blocks here).
_HTML_OPEN: Final = (
    (re.compile(r"<(script|pre|style|textarea)(?:[ \t>]|$)", re.I), tuple(f"</{t}>" for t in _RAW_TAGS)),
    (re.compile(r"<!--"), ("-->",)),
    (re.compile(r"<\?"), ("?>",)),
    (re.compile(r"<!\[CDATA\["), ("]]>",)),
    (re.compile(r"<![A-Za-z]"), (">",)),
)


class _OpenBlock(NamedTuple):
    depth: int  # list items it is inside
    indent: int  # its opening line's indentation
    fence: str  # the opening fence, or "" for an HTML block
    ends: tuple[str, ...]  # an HTML block's end texts (lowercase)
    closing: str  # the text that closes it


def left_open(text: str) -> str:
    """The line that closes a fenced code block or an HTML block (types 1-5) ``text`` leaves
    open, "" when it leaves none.

    Message text is Markdown and is written as it is, but a reply cut off inside a fence (a
    model's ``max_tokens``) would otherwise swallow every later heading into its code block. The
    scan follows CommonMark's block rules as far as they matter here: line breaks, indentation
    and tab stops, list items (a block inside one ends where the item does), lazy paragraph
    lines. The closing line gets the opener's indentation, which closes it inside a list item
    and at the top level alike.
    """
    items: list[int] = []  # content columns of the open list items, innermost last
    block: _OpenBlock | None = None
    blank = True
    for raw in _LINE_BREAK.split(text):
        line = raw.expandtabs(4)
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if block is not None:
            if not body:
                continue
            if block.depth and indent < items[block.depth - 1]:
                block = None  # its list item ended, and the block with it
            else:
                if block.fence:
                    base = items[block.depth - 1] if block.depth else 0
                    tail = body.rstrip(" \t")
                    if (
                        indent - base <= 3
                        and len(tail) >= len(block.fence)
                        and tail == block.fence[0] * len(tail)
                    ):
                        block = None
                elif any(end in line.lower() for end in block.ends):
                    block = None
                continue
        if not body:
            blank = True
            continue
        starts_block = _BLOCK_START.match(body) is not None or _LIST_MARKER.fullmatch(body) is not None
        while items and indent < items[-1] and (blank or starts_block):
            items.pop()  # not a lazy paragraph line: the item ended
        blank = False
        if indent - (items[-1] if items else 0) > 3 or _THEMATIC_BREAK.fullmatch(body):
            continue  # indented code or a continuation, or a rule
        marker = _LIST_MARKER.fullmatch(body)
        if marker is not None and (marker.group(2) or not marker.group(3)):
            spaces = len(marker.group(2))
            items.append(
                indent + len(marker.group(1)) + (spaces if 1 <= spaces <= 4 and marker.group(3) else 1)
            )
            body, indent = marker.group(3), items[-1]  # the item's first line may open a block
        opened = _FENCE_OPEN.fullmatch(body)
        if opened is not None:
            fence = opened.group(1) or opened.group(2)
            block = _OpenBlock(len(items), indent, fence, (), fence)
            continue
        for start, ends in _HTML_OPEN:
            found = start.match(body)
            if found is not None:
                if not any(end in body[found.end() :].lower() for end in ends):
                    closing = f"</{found.group(1).lower()}>" if found.re.groups else ends[0]
                    block = _OpenBlock(len(items), indent, "", ends, closing)
                break
    return "" if block is None else " " * block.indent + block.closing


def contained(text: str) -> str:
    """Message text as Markdown, with a fence or HTML block it leaves open closed after it."""
    closing = left_open(text)
    return f"{text.rstrip(chr(10))}\n{closing}" if closing else text


def render_blocks(content: Iterable[ContentBlock], fold: int | None = None) -> str:
    """Content blocks as Markdown: text as is (a fence it leaves open closed after it), media as
    one line with type and size, tool calls and results in fences no backtick run inside can
    close (cut to ``fold`` characters when given), names and ids as code spans."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append(contained(block.text))
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            parts.append(_media(block))
        elif isinstance(block, ToolUseBlock):
            body = format_json(block.input).decode()
            parts.append(f"**tool call** {_code(block.name)} (id {_code(block.id)})")
            parts.append(_fence(_fold(body, fold), "json"))
        elif isinstance(block, ToolResultBlock):
            label = "**tool error**" if block.is_error else "**tool result**"
            parts.append(f"{label} for {_code(block.tool_use_id)}")
            if isinstance(block.content, str):
                parts.append(_fence(_fold(block.content, fold)))
            else:
                for item in block.content:
                    if isinstance(item, TextBlock):
                        parts.append(_fence(_fold(item.text, fold)))
                    else:
                        parts.append(_media(item))
        elif isinstance(block, ReasoningBlock):
            if block.redacted or not block.text:
                parts.append("> *reasoning (redacted)*")
            else:
                quoted = "\n".join("> " + line for line in _fold(block.text, fold).splitlines())
                parts.append("> *reasoning*\n>\n" + quoted)
        elif isinstance(block, ProviderBlock):
            parts.append(f"[{_one_line(block.provider)} {_one_line(block.kind)}]")
        elif isinstance(block, UnknownBlock):
            parts.append(f"[block of unknown type {block.type!r}]")
    if not parts:
        return "*(no content)*\n"
    return "\n\n".join(parts) + "\n"
