"""A whole database: the multi-session calls the command line (and any tool) makes.

:class:`Database` wraps an open connection; each method is one library call, most of them one
hop to the connection's worker thread (the SQL lives in :mod:`.admin` and :mod:`.ops`).
:func:`open_database` opens one by path, refusing to create a file when asked only to read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Literal
from uuid import uuid4

import aiosqlite

from axio_context.errors import DatabaseNotFoundError
from axio_context.messages import SessionInfo
from axio_context.transcript import FormatName, TranscriptWriter, writer_for

from . import admin
from .admin import (
    AxioImportReport,
    ExportSummary,
    ImportReport,
    Progress,
    SessionView,
    Sink,
    Stats,
    VacuumReport,
)
from .connection import connect, run
from .ops import SessionPage

__all__ = [
    "AxioImportReport",
    "Database",
    "ExportSummary",
    "ImportReport",
    "SessionView",
    "Stats",
    "VacuumReport",
    "open_database",
]


def _ms(when: datetime | None) -> int | None:
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.astimezone()  # a naive time is the local time
    return int(when.timestamp() * 1000)


class Database:
    """Every session of one database file: list, show, export, import, migrate, maintain."""

    def __init__(self, conn: aiosqlite.Connection, path: str | Path) -> None:
        self._conn = conn
        self._path = Path(path)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    @property
    def connection(self) -> aiosqlite.Connection:
        """The connection used (owned by whoever opened it)."""
        return self._conn

    # -- finding sessions ------------------------------------------------------------------------

    async def list_sessions(
        self,
        project: str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        since: datetime | None = None,
    ) -> SessionPage:
        """Sessions newest first (all projects unless ``project``), one keyset page at a time."""
        return await run(self._conn, admin.list_sessions, project, limit, cursor, _ms(since))

    async def resolve(self, prefix: str) -> str:
        """The session id equal to ``prefix``, or the only one starting with it (like git)."""
        return await run(self._conn, admin.resolve, prefix)

    async def latest(self) -> str:
        """The newest session's id (SessionNotFoundError when there is none)."""
        return await run(self._conn, admin.latest)

    async def complete(self, prefix: str, limit: int = 50) -> list[str]:
        """Session ids starting with ``prefix``, for shell completion."""
        return await run(self._conn, admin.ids_with_prefix, prefix, limit)

    async def info(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        from . import ops

        return await run(self._conn, ops.session_info, session_id)

    # -- reading ---------------------------------------------------------------------------------

    async def show(self, session_id: str, *, full: bool = False) -> SessionView:
        """A session's fields and its model view, or with ``full`` its whole transcript."""
        return await run(self._conn, admin.show, session_id, full)

    async def export(
        self,
        sink: Sink,
        *,
        format: FormatName | TranscriptWriter = "json",
        session_ids: Sequence[str] | None = None,
        progress: Progress | None = None,
    ) -> ExportSummary:
        """Write sessions (every one when ``session_ids`` is None) to ``sink`` in one snapshot.

        ``sink(chunk)`` and ``progress(done, total)`` are called on the database's worker thread;
        memory stays flat because sessions and messages are read in batches.
        """
        writer = writer_for(format) if isinstance(format, str) else format
        ids = None if session_ids is None else list(session_ids)
        return await run(self._conn, admin.export, writer, ids, sink, progress)

    async def stats(self) -> Stats:
        """Totals, per project, and size on disk."""
        return await run(self._conn, admin.stats, self._path)

    # -- writing ---------------------------------------------------------------------------------

    async def import_file(
        self,
        path: str | Path,
        *,
        format: Literal["json", "jsonl"] | None = None,
        replace: bool = False,
        new_ids: bool = False,
    ) -> ImportReport:
        """Import a ``json``/``jsonl`` export (format sniffed unless given); see ``admin.import_file``."""
        if replace and new_ids:
            raise ValueError("choose replace or new_ids, not both")
        return await run(self._conn, admin.import_file, Path(path), format, replace, new_ids)

    async def import_axio(self, path: str | Path, *, replace: bool = False) -> AxioImportReport:
        """Migrate an axio-context-sqlite database; idempotent (see :func:`.admin.import_axio`)."""
        return await run(self._conn, admin.import_axio, Path(path), replace)

    async def fork(self, session_id: str, new_id: str | None = None) -> str:
        """Fork a session (copy-on-write, O(1)); returns the new session's id."""
        new = new_id or uuid4().hex
        await run(self._conn, admin.fork, session_id, new)
        return new

    async def delete(self, session_ids: Sequence[str]) -> list[str]:
        """Delete sessions (forks keep their views, unused blobs go); returns those that existed."""
        return await run(self._conn, admin.delete_sessions, list(session_ids))

    async def rename(self, session_id: str, new_id: str) -> None:
        """Give a session a new id; its forks' ``parent_id`` follows."""
        await run(self._conn, admin.rename, session_id, new_id)

    async def set_title(self, session_id: str, title: str | None) -> None:
        """Set, or with None clear, a session's title."""
        await run(self._conn, admin.set_title, session_id, title)

    async def prune(
        self,
        *,
        before: datetime | None = None,
        keep: int | None = None,
        project: str | None = None,
        dry_run: bool = False,
    ) -> list[SessionInfo]:
        """Delete whole sessions last updated before ``before`` and/or beyond the ``keep`` most
        recently updated (within ``project`` if given); returns them (only lists with ``dry_run``)."""
        return await run(self._conn, admin.prune, _ms(before), keep, project, dry_run)

    async def vacuum(self) -> VacuumReport:
        """Reclaim free space and truncate the WAL (see :func:`.admin.vacuum` for which way)."""
        return await run(self._conn, admin.vacuum, self._path)

    async def backup(self, dest: str | Path, *, overwrite: bool = False) -> None:
        """Write a consistent copy to ``dest`` with SQLite's backup API, while the database is in use."""
        await run(self._conn, admin.backup, self._path, Path(dest), overwrite)


@asynccontextmanager
async def open_database(
    path: str | Path, *, create: bool = True, busy_timeout: float = 5.0
) -> AsyncIterator[Database]:
    """Open a database file for the duration of an ``async with`` block.

    With ``create=False`` a missing file is a :class:`DatabaseNotFoundError` and nothing is
    created (commands that only read use this).
    """
    target = await asyncio.to_thread(lambda: Path(path).expanduser())
    if not create and not await asyncio.to_thread(target.is_file):
        raise DatabaseNotFoundError(f"no database at {target}")
    async with connect(target, busy_timeout=busy_timeout) as conn:
        yield Database(conn, target)
