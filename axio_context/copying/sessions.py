"""Copying the sessions from one database to another: SQLite to PostgreSQL, back, or alike.

A copy is the lossless export of the sessions the destination lacks, imported there one
session per transaction. So it is idempotent (a second run copies nothing) and resumable (an
interrupted run keeps the sessions it finished; the next run copies the rest), and an export of
either side afterwards is byte-identical. Both sides are open databases of any backend
(:class:`axio_context.backends.OpenDatabase`: ``list_sessions``, ``export`` and ``import_file``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["CopyReport", "copy_sessions"]


class CopyReport(msgspec.Struct, frozen=True):
    """What a copy did: sessions copied now, sessions the destination had already, messages."""

    copied: int
    already: int
    messages: int


async def _sizes(db: Any) -> dict[str, int]:
    """Every session's id and message count, in listing order, from one listing."""
    page = await db.list_sessions(limit=None)
    return {s.session_id: s.message_count for s in page.sessions}


async def _carry_ttls(src: Any, dst: Any, session_ids: list[str]) -> None:
    """Give the copied sessions that expire the TTL and expiry time they have in ``src`` (an
    export carries none): a live session arrives with its expiry time, an expired one not at all."""
    source, dest = src.memory_stores().expiry().sessions, dst.memory_stores().expiry().sessions
    if source is not None and dest is not None and session_ids:
        await dest.restore(await source.ttls(session_ids))


async def copy_sessions(
    src: Any, dst: Any, progress: Callable[[int, int], object] | None = None, *, dry_run: bool = False
) -> CopyReport:
    """Copy the sessions of ``src`` that ``dst`` lacks (by id), oldest first; ``progress(done,
    total)`` counts messages exported. ``dry_run``: count what would be copied, write nothing."""
    have = await _sizes(dst)
    source = await _sizes(src)
    wanted = [i for i in source if i not in have]
    already = len(source) - len(wanted)
    if dry_run:
        return CopyReport(copied=len(wanted), already=already, messages=sum(source[i] for i in wanted))
    if not wanted:
        return CopyReport(copied=0, already=already, messages=0)
    fd, name = tempfile.mkstemp(prefix="axio-copy-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as f:
            summary = await src.export(f.write, format="jsonl", session_ids=wanted, progress=progress)
        report = await dst.import_file(name, format="jsonl")
    finally:
        os.unlink(name)
    await _carry_ttls(src, dst, [s.id for s in report.sessions])
    return CopyReport(copied=len(report.sessions), already=already, messages=summary.messages)
