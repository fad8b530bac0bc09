"""What an export or an import did, the same on every backend: sessions and messages written,
and the stored rows an export left out because they do not decode."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["DamagedRow", "ExportSummary", "ImportReport", "ImportedSession"]


class DamagedRow(msgspec.Struct, frozen=True):
    """A stored row that does not decode: where it is (the session that stored it, and the
    position there; for a chunk its first of ``count``) and why."""

    session_id: str
    position: int
    reason: str
    count: int = 1
    kind: Literal["message", "chunk"] = "message"


class ExportSummary(msgspec.Struct, frozen=True):
    """How much an export wrote: ``messages`` counts each stored message once (a fork's messages
    shared with its parent exported too are not counted again, even where markdown repeats
    them); ``skipped``: the messages left out because they do not decode (each has a
    placeholder in the export instead); ``blocks``: the memory blocks written."""

    sessions: int
    messages: int
    skipped: list[DamagedRow] = msgspec.field(default_factory=list)
    blocks: int = 0


class ImportedSession(msgspec.Struct, frozen=True):
    """One session an import wrote: its id in the file, its id now, and its messages."""

    source_id: str
    id: str
    messages: int
    replaced: bool = False


class ImportReport(msgspec.Struct, frozen=True):
    """What an import wrote, in file order: sessions, and the memory blocks (by owner/label)
    a version 2 export carried."""

    format: str
    sessions: list[ImportedSession]
    blocks: list[str] = msgspec.field(default_factory=list)
