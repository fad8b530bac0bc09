"""How an agent's blocks appear in its system message: :func:`render_blocks`, a stable format
(documented in docs/memory-blocks.md; tests pin it), and :func:`with_blocks`, the window's head
with them put in.

The format, one element per block, in the order the store lists them (own blocks, then shared
ones, each by label)::

    <memory_blocks>
    The blocks below are your core memory. Edit them with the memory tools.

    <block label="human" version="3" chars="42" limit="5000" read_only="false">
    <description>What I know about the user.</description>
    <value>
    Name: Ada
    </value>
    </block>
    </memory_blocks>

The label and description are escaped as XML attribute and text; the value goes in as it is
stored (it is the model's own memory), on the lines between ``<value>`` and ``</value>`` (a value
ending in a line break shows it only once; ``chars`` gives its exact length).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final

import msgspec

from ..blocks import TextBlock
from ..messages import Message
from .model import StoredBlock

__all__ = ["HEADER", "render_blocks", "with_blocks"]

#: The line that opens the rendered blocks, after the ``<memory_blocks>`` tag.
HEADER: Final = "The blocks below are your core memory. Edit them with the memory tools."


def render_blocks(blocks: Sequence[StoredBlock]) -> str:
    """The blocks in the documented format; ``""`` when there are none."""
    if not blocks:
        return ""
    parts = ["<memory_blocks>", HEADER, ""]
    for b in blocks:
        parts.append(
            f'<block label="{escape(b.label)}" version="{b.version}" chars="{len(b.value)}"'
            f' limit="{b.limit}" read_only="{"true" if b.read_only else "false"}">'
        )
        if b.description:
            parts.append(f"<description>{escape(b.description, quote=False)}</description>")
        # The value's last line break is its own when it has one (``chars`` tells them apart).
        parts += ["<value>", b.value.removesuffix("\n"), "</value>", "</block>"]
    parts.append("</memory_blocks>")
    return "\n".join(parts)


def with_blocks(messages: list[Message], blocks: Sequence[StoredBlock]) -> list[Message]:
    """``messages`` with the rendered blocks at the end of the leading system message (one is
    put first when there is none); the same list when there are no blocks."""
    text = render_blocks(blocks)
    if not text:
        return messages
    if messages and messages[0].role == "system":
        head = messages[0]
        return [msgspec.structs.replace(head, content=[*head.content, TextBlock(text=text)]), *messages[1:]]
    return [Message(role="system", content=[TextBlock(text=text)]), *messages]
