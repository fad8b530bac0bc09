"""The admin half of :class:`~axio_context_sqlite.database.Database`: finding, reading,
exporting, importing and deleting sessions, and looking after the file.

Each method is one library call, most of them one hop to the connection's worker thread, where
the synchronous functions of the other admin modules run. :class:`DatabaseJobs` is a base of
``Database`` (the search half stays there), not a class to make on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal
from uuid import uuid4

import aiosqlite

from axio_context.catalog.calls import PruneRule
from axio_context.errors import (
    ReadOnlyDatabaseError,
)
from axio_context.messages import SessionInfo
from axio_context.transcript.times import epoch_ms as ms
from axio_context.views import SessionSort

from ..store import catalog, checking, listing, naming, recompressing, runs, upkeep
from ..store.calls import run
from ..store.catalog import SessionView
from ..store.checking import CheckReport, DamagedRow, QuarantinedRow
from ..store.recompressing import RecompressReport
from ..store.upkeep import Stats, VacuumReport
from ..store.wal import truncate_wal
from . import axio_migration, files, importing
from .axio_migration import AxioImportReport
from .exporting import Progress
from .importing import ImportReport

__all__ = ["DatabaseJobs", "ms"]


class DatabaseJobs:
    """Whole-database jobs over one connection (see :class:`.database.Database`)."""

    _conn: aiosqlite.Connection
    _path: Path

    # -- finding sessions ------------------------------------------------------------------------

    async def resolve(self, prefix: str) -> str:
        """The session id equal to ``prefix``, or the only one starting with it (like git)."""
        return await run(self._conn, catalog.resolve, prefix)

    async def latest(self, sort: SessionSort = "created") -> str:
        """The newest session's id by ``sort`` (SessionNotFoundError when there is none)."""
        return await run(self._conn, catalog.latest, sort)

    async def complete(self, prefix: str, limit: int = 50) -> list[str]:
        """Session ids starting with ``prefix``, for shell completion."""
        return await run(self._conn, catalog.ids_with_prefix, prefix, limit)

    async def short_ids(self, ids: Iterable[str | None]) -> dict[str, str]:
        """How each id is shown to people: in full, but a long random one cut to the shortest
        prefix (12 characters or more) that finds only it (see :func:`.naming.short_ids`)."""
        return await run(self._conn, naming.short_ids, list(ids))

    async def stored_project(self, project: str | None) -> str | None:
        """The project as stored that ``project`` names: itself, or for a path (``.``, ``~/src``,
        ``/abs/``) the first of its absolute and resolved forms any session is filed under."""
        return await run(self._conn, naming.stored_project, project)

    async def info(self, session_id: str) -> SessionInfo:
        """One session's listing entry."""
        return await run(self._conn, listing.session_info, session_id)

    # -- reading ---------------------------------------------------------------------------------

    async def show(self, session_id: str, *, full: bool = False, run_id: str | None = None) -> SessionView:
        """A session's fields and its model view, or with ``full`` its whole transcript
        (``run_id``: only that run's messages)."""
        return await run(self._conn, catalog.show, session_id, full, run_id)

    async def agents_of(self, session_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """``session id -> (agent_id, thread_id)`` for the agent sessions among ``session_ids``."""
        return await run(self._conn, runs.agents_of, list(session_ids))

    async def agent_session(self, agent_id: str, thread_id: str) -> str:
        """The id of ``agent_id``'s session in thread ``thread_id`` (SessionNotFoundError if none)."""
        return await run(self._conn, catalog.agent_session, agent_id, thread_id)

    async def stats(self) -> Stats:
        """Totals, per project, and size on disk."""
        return await run(self._conn, upkeep.stats, self._path)

    # -- writing ---------------------------------------------------------------------------------

    async def import_file(
        self,
        path: str | Path,
        *,
        format: Literal["json", "jsonl"] | None = None,
        replace: bool = False,
        new_ids: bool = False,
    ) -> ImportReport:
        """Import a ``json``/``jsonl`` export, format sniffed unless given (see .importing.import_file)."""
        if replace and new_ids:
            raise ValueError("choose replace or new_ids, not both")
        return await run(self._conn, importing.import_file, Path(path), format, replace, new_ids)

    async def import_axio(self, path: str | Path, *, replace: bool = False) -> AxioImportReport:
        """Migrate an axio-context-sqlite database; idempotent (see :func:`.axio_migration.import_axio`)."""
        return await run(self._conn, axio_migration.import_axio, Path(path), replace)

    async def fork(self, session_id: str, new_id: str | None = None) -> str:
        """Fork a session (copy-on-write, O(1)); returns the new session's id."""
        new = new_id or uuid4().hex
        await run(self._conn, catalog.fork, session_id, new)
        return new

    async def delete(self, session_ids: Sequence[str]) -> list[str]:
        """Delete sessions (forks keep their views, unused blobs go); returns those that existed."""
        return await run(self._conn, catalog.delete_sessions, list(session_ids))

    async def rename(self, session_id: str, new_id: str) -> None:
        """Give a session a new id; its forks' ``parent_id`` follows."""
        await run(self._conn, catalog.rename, session_id, new_id)

    async def set_title(self, session_id: str, title: str | None) -> None:
        """Set, or with None clear, a session's title."""
        await run(self._conn, catalog.set_title, session_id, title)

    async def _prune(self, rule: PruneRule) -> list[SessionInfo]:
        return await run(self._conn, upkeep.prune, *rule[:4], only=rule.only)

    async def recompress(self, progress: Progress | None = None) -> RecompressReport:
        """Rewrite the payloads earlier builds compressed with a dictionary (or zlib) as plain
        zstd and delete the dictionaries (see :func:`.recompressing.recompress`); ``vacuum``
        then gives the space back."""
        return await run(self._conn, recompressing.recompress, progress)

    async def vacuum(self, *, full: bool = False) -> VacuumReport:
        """Reclaim free space and truncate the WAL (see :func:`.upkeep.vacuum` for which way;
        ``full`` always rebuilds the file)."""
        return await run(self._conn, upkeep.vacuum, self._path, full)

    async def checkpoint(self) -> bool:
        """Copy the WAL into the database file and truncate it, so the file alone holds
        everything (to copy it, or measure it). False when another connection's open read kept
        part of the WAL in use past the busy timeout."""
        if getattr(self._conn, "readonly", False):
            raise ReadOnlyDatabaseError(f"{self._path} is open read-only, and a checkpoint writes to it")
        return await run(self._conn, truncate_wal)

    async def check(self, *, quarantine: bool = False) -> CheckReport:
        """Scan the whole database for damage: rows that do not decode, SQLite's quick_check,
        positions without rows, the keyword index (see :mod:`.checking`). Changes nothing,
        unless ``quarantine``: then the damaged rows found are moved to the quarantine (a
        placeholder keeps each position) and listed in the report's ``moved``."""
        report = await run(self._conn, checking.check)
        if not quarantine or not report.damaged:
            return report
        return checking.after_moving(report, await run(self._conn, checking.quarantine, report.damaged))

    async def quarantine(self, rows: Sequence[DamagedRow] | None = None) -> list[DamagedRow]:
        """Move damaged rows (``rows`` from :meth:`check`, else every one a new scan finds) to the
        quarantine, leaving a placeholder at each position; returns those moved."""
        found = list(rows) if rows is not None else (await self.check()).damaged
        if not found:
            return []
        return await run(self._conn, checking.quarantine, found)

    async def quarantined(self) -> list[QuarantinedRow]:
        """The rows moved to the quarantine, with the bytes they were stored as."""
        return await run(self._conn, checking.quarantined)

    async def backup(self, dest: str | Path, *, overwrite: bool = False) -> None:
        """Write a consistent copy to ``dest`` with SQLite's backup API, while the database is in use."""
        await run(self._conn, files.backup, self._path, Path(dest), overwrite)
