"""What the contract suites share: the factory protocol and sample messages with every block type."""

from __future__ import annotations

from typing import Protocol

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
from ..context import ContextStore
from ..messages import Message

__all__ = ["StoreFactory", "every_block_message", "sample_blocks", "text"]


class StoreFactory(Protocol):
    """How the contract suite makes stores of one backend."""

    async def new(self) -> ContextStore:
        """A store for a brand-new, empty session."""
        ...

    async def from_history(self, history: list[Message]) -> ContextStore:
        """A new store holding ``history`` (the backend's ``from_history``)."""
        ...

    async def from_context(self, context: ContextStore) -> ContextStore:
        """A new store holding a copy of ``context`` (the backend's ``from_context``)."""
        ...


def text(role: str, body: str) -> Message:
    """A one-text-block message; shorthand for tests."""
    return Message(role=role, content=[TextBlock(text=body)])  # type: ignore[arg-type]


def sample_blocks() -> list[ContentBlock]:
    """One of every block type, with the awkward values: bytes, unicode, empties, nesting."""
    png = bytes(range(256)) * 4
    return [
        TextBlock(text="plain ascii"),
        TextBlock(text=""),
        TextBlock(text="ünïcödé ✓ 日本語 🎉 \x00 nul and \n newline"),
        TextBlock(text="signed", signature="sig+/=", provider="anthropic"),
        ImageBlock(media_type="image/png", data=png),
        ImageBlock(media_type="image/jpeg", data=b""),
        AudioBlock(media_type="audio/wav", data=b"RIFF\x00\x01"),
        VideoBlock(media_type="video/mp4", data=b"\x00\x00\x00\x18ftyp"),
        ToolUseBlock(id="call_1", name="read_file", input={"path": "/tmp/ä.txt", "n": [1, 2.5, None, True]}),
        ToolUseBlock(id="call_2", name="noop", input={}),
        ToolResultBlock(tool_use_id="call_1", content="file body\n" * 3),
        ToolResultBlock(tool_use_id="call_2", content="", is_error=True),
        ToolResultBlock(
            tool_use_id="call_3",
            content=[TextBlock(text="nested"), ImageBlock(media_type="image/gif", data=b"GIF89a")],
        ),
        ToolResultBlock(tool_use_id="call_4", content=[]),
        ReasoningBlock(text="thinking…", signature="EqQBCkYIARgCKkDsig==", redacted=False, id="rs_1"),
        ReasoningBlock(text="", signature="opaque", redacted=True, provider="anthropic"),
        ProviderBlock(provider="openai", kind="web_search_call", data={"id": "ws_1", "q": "x"}, id="ws_1"),
        UnknownBlock({"type": "hologram", "frames": [1, 2, 3], "meta": {"fps": 24.0, "ok": True}}),
    ]


def every_block_message() -> list[Message]:
    """A short conversation that uses every block type in every role it may appear in."""
    blocks = sample_blocks()
    return [
        Message(role="system", content=[TextBlock(text="You are terse.")]),
        Message(role="user", content=blocks[:8]),
        Message(role="assistant", content=[blocks[14], blocks[8], blocks[9], blocks[16]]),
        Message(role="user", content=blocks[10:14]),
        Message(role="assistant", content=[blocks[15], blocks[17], TextBlock(text="done")]),
        Message(role="user", content=[]),
    ]
