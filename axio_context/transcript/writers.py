"""Writers: records to bytes, chunk by chunk, so an exporter can stream (json, jsonl, Markdown)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, ClassVar

import msgspec

from .._json import has_nonfinite
from ..blocks import (
    ContentBlock,
)
from ..codec import (
    contents_have_nonfinite,
    encode_json,
)
from ..memory_blocks.transfer_sql import BlockRow
from ..messages import Role
from .block_records import BlockLine
from .markdown import render_blocks, render_header, render_memory_blocks, short_time
from .records import BLOCKS_VERSION, FORMAT_NAME, FORMATS, SESSIONS_VERSION, MessageRecord, SessionHeader

__all__ = ["JsonWriter", "JsonlWriter", "MarkdownWriter", "TranscriptWriter", "writer_for"]

# --- writers -------------------------------------------------------------------------------------


def _nonfinite(records: Sequence[MessageRecord]) -> bool:
    """Whether any record's content or metadata holds NaN or an infinity (exact JSON then)."""
    return contents_have_nonfinite(r.content for r in records) or any(
        r.metadata is not None and has_nonfinite(r.metadata) for r in records
    )


class TranscriptWriter:
    """Turns sessions into bytes, chunk by chunk; an exporter calls these methods in order.

    ``begin``, then per session ``session`` / ``messages`` (any number of batches) /
    ``end_session``, then (an export with memory blocks) ``blocks``, then ``end``. A
    ``self_contained`` format gets every session's whole transcript (``inherited`` is 0); the
    lossless ones get only a fork's own messages. An exporter that will write blocks sets
    ``version`` to :data:`BLOCKS_VERSION` before ``begin``.
    """

    name: ClassVar[str]
    self_contained: ClassVar[bool] = False
    #: The format version the file says (version 1 readers read an export of sessions alone).
    version: int = SESSIONS_VERSION

    def begin(self) -> bytes:
        """Bytes before the first session."""
        return b""

    def session(self, header: SessionHeader) -> bytes:
        """Bytes that open a session."""
        raise NotImplementedError

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        """A batch of the session's messages; ``first`` is the position of ``records[0]``."""
        raise NotImplementedError

    def end_session(self, header: SessionHeader) -> bytes:
        """Bytes that close a session."""
        return b""

    def blocks(self, rows: Sequence[BlockRow]) -> bytes:
        """Memory blocks, after the last session."""
        return b""

    def end(self) -> bytes:
        """Bytes after the last session."""
        return b""


class JsonWriter(TranscriptWriter):
    """The ``json`` document, written incrementally (one session per line in the array)."""

    name = "json"

    def __init__(self) -> None:
        self._sessions = 0
        self._in_session = 0
        self._blocks = False

    def begin(self) -> bytes:
        head = encode_json({"format": FORMAT_NAME, "version": self.version, "embeddings": False})
        return head[:-1] + b',"sessions":['

    def session(self, header: SessionHeader) -> bytes:
        sep = b",\n" if self._sessions else b"\n"
        self._sessions += 1
        self._in_session = 0
        return sep + encode_json(header, exact=True)[:-1] + b',"messages":['

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        if not records:
            return b""
        exact = _nonfinite(records)
        body = b",".join(encode_json(r, exact=exact) for r in records)
        sep = b"," if self._in_session else b""
        self._in_session += len(records)
        return sep + body

    def end_session(self, header: SessionHeader) -> bytes:
        return b"]}"

    def blocks(self, rows: Sequence[BlockRow]) -> bytes:
        self._blocks = True
        body = b",\n".join(encode_json(r) for r in rows)
        return (b"\n]" if self._sessions else b"]") + b',"blocks":[' + (b"\n" + body + b"\n" if rows else b"")

    def end(self) -> bytes:
        if self._blocks:
            return b"]}\n"
        return b"\n]}\n" if self._sessions else b"]}\n"


class _MessageLine(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="message", omit_defaults=True
):
    session: str
    position: int
    role: Role
    content: list[ContentBlock]
    created_at: str
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


class JsonlWriter(TranscriptWriter):
    """The ``jsonl`` stream: a session line, then one line per message."""

    name = "jsonl"

    def session(self, header: SessionHeader) -> bytes:
        # ``embeddings`` last: the line's first keys say what it is (see :func:`sniff_format`)
        prefix = encode_json({"kind": "session", "format": FORMAT_NAME, "version": self.version})[:-1]
        return prefix + b"," + encode_json(header, exact=True)[1:-1] + b',"embeddings":false}\n'

    def blocks(self, rows: Sequence[BlockRow]) -> bytes:
        lines = (encode_json(BlockLine(format=FORMAT_NAME, version=BLOCKS_VERSION, block=r)) for r in rows)
        return b"".join(line + b"\n" for line in lines)

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        exact = _nonfinite(records)
        lines = [
            encode_json(
                _MessageLine(
                    session=header.id,
                    position=first + i,
                    role=r.role,
                    content=r.content,
                    created_at=r.created_at,
                    id=r.id,
                    timestamp=r.timestamp,
                    metadata=r.metadata,
                ),
                exact=exact,
            )
            for i, r in enumerate(records)
        ]
        return b"".join(line + b"\n" for line in lines)


class MarkdownWriter(TranscriptWriter):
    """Markdown for people: a heading and facts per session, then every message in full."""

    name = "markdown"
    self_contained = True

    def __init__(self, fold: int | None = None) -> None:
        self._fold = fold
        self._sessions = 0

    def session(self, header: SessionHeader) -> bytes:
        sep = "\n---\n\n" if self._sessions else ""
        self._sessions += 1
        return (sep + render_header(header) + "\n").encode("utf-8", "backslashreplace")

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        out = []
        for i, r in enumerate(records):
            out.append(f"## {first + i} · {r.role} · {short_time(r.created_at)}\n\n")
            out.append(render_blocks(r.content, self._fold))
            out.append("\n")
        # Text with lone surrogates (undecodable bytes) shows them as \udcXX escapes.
        return "".join(out).encode("utf-8", "backslashreplace")

    def blocks(self, rows: Sequence[BlockRow]) -> bytes:
        sep = "\n---\n\n" if self._sessions else ""
        return (sep + render_memory_blocks(rows)).encode("utf-8", "backslashreplace")


def writer_for(name: str) -> TranscriptWriter:
    """A fresh writer for a format name (``json``, ``jsonl`` or ``markdown``)."""
    if name == "json":
        return JsonWriter()
    if name == "jsonl":
        return JsonlWriter()
    if name == "markdown":
        return MarkdownWriter()
    raise ValueError(f"unknown transcript format {name!r}: expected one of {', '.join(FORMATS)}")
