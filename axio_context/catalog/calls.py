"""The catalog's calls (listing sessions, the lineage tree), written once over a backend's
:class:`~axio_context.sql.Runner`: as functions (each backend's module hands them its runner) and
as methods of a database and of a session store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple, TypedDict, Unpack

from ..messages import SessionInfo
from ..sql import Runner
from ..transcript import FormatName, TranscriptWriter, exporting, writer_for
from ..transcript.exporting import ExportSource, Progress, Sink
from ..transcript.reports import ExportSummary
from ..transcript.times import epoch_ms
from ..views import SessionNode, SessionPage, SessionSort, SessionTreePage
from . import browse_sql, tree_sql
from .listing_sql import ALL, list_page

__all__ = [
    "BrowseCalls",
    "CatalogCalls",
    "PruneRule",
    "RunsPlans",
    "StoreCalls",
    "TreeOptions",
    "descendants",
    "session_tree",
]


class TreeOptions(TypedDict, total=False):
    """What narrows :func:`session_tree`: at most ``limit`` roots, created since ``since``,
    newest first by ``sort`` (``"created"``, the default, or ``"updated"``)."""

    limit: int | None
    since: datetime | None
    sort: SessionSort


async def session_tree(
    runner: Runner, project: str | None = None, **options: Unpack[TreeOptions]
) -> list[SessionNode]:
    """Root sessions newest first (one project's when given), each with the subagent sessions
    and forks below it at any depth, read in one snapshot."""
    limit = options.get("limit")
    if limit is not None and limit < 1:
        raise ValueError("limit must be at least 1")
    since = epoch_ms(options.get("since"))
    return await runner.read(tree_sql.session_tree, project, limit, since, options.get("sort", "created"))


async def descendants(runner: Runner, session_ids: Iterable[str]) -> list[str]:
    """The ids of every session below ``session_ids`` (subagent sessions and forks, at any
    depth), oldest first: what ``export --children`` adds."""
    return await runner.read(tree_sql.descendants, list(session_ids))


class PruneRule(NamedTuple):
    """What a prune deletes: sessions last updated before ``before_ms`` and/or beyond the
    ``keep`` newest (of ``project``, or all), of ``only`` these ids when given."""

    before_ms: int | None
    keep: int | None
    project: str | None
    dry_run: bool
    only: list[str] | None


class RunsPlans:
    """Something whose catalog plans run on one backend's runner (which it says)."""

    def _catalog_runner(self) -> Runner:
        raise NotImplementedError(f"{type(self).__name__} names no runner")


class CatalogCalls(RunsPlans):
    """A database's catalog calls; the backend's database says which runner reads and what its
    export reads with."""

    def _export_source(self) -> ExportSource:
        raise NotImplementedError(f"{type(self).__name__} cannot export")

    async def export(
        self,
        sink: Sink,
        *,
        format: FormatName | TranscriptWriter = "json",
        session_ids: Sequence[str] | None = None,
        progress: Progress | None = None,
        skip_damaged: bool = False,
        blocks: bool | None = None,
    ) -> ExportSummary:
        """Write sessions (every one when ``session_ids`` is None) to ``sink`` in one snapshot,
        byte for byte alike from every backend (see :mod:`axio_context.transcript.exporting`).

        Memory stays flat: sessions and messages are read in batches (``sink(chunk)`` and
        ``progress(done, total)`` are called where the backend reads: on SQLite, the database's
        worker thread). A message that does not decode raises CorruptDataError, or with
        ``skip_damaged`` is left out (a placeholder stands in its place) and listed in the
        summary's ``skipped``. ``blocks``: also every memory block with its whole history
        (default: when exporting every session, not for chosen ones).
        """
        writer = writer_for(format) if isinstance(format, str) else format
        ids = None if session_ids is None else list(session_ids)
        with_blocks = ids is None if blocks is None else blocks
        return await self._catalog_runner().read(
            exporting.export, self._export_source(), writer, ids, sink, progress, skip_damaged, with_blocks
        )

    async def list_sessions(
        self,
        project: str | None = None,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        since: datetime | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        sort: SessionSort = "created",
    ) -> SessionPage:
        """Sessions newest first by ``sort`` (creation, or last activity), all projects unless
        ``project``, one keyset page at a time; ``agent_id`` keeps one agent's sessions,
        ``run_id`` those holding that run's messages."""
        return await self._catalog_runner().read(
            list_page,
            ALL if project is None else project,
            limit=limit,
            cursor=cursor,
            since_ms=epoch_ms(since),
            agent_id=agent_id,
            run_id=run_id,
            sort=sort,
        )

    async def _prune(self, rule: PruneRule) -> list[SessionInfo]:
        raise NotImplementedError(f"{type(self).__name__} cannot prune")

    async def prune(
        self,
        *,
        before: datetime | None = None,
        keep: int | None = None,
        project: str | None = None,
        dry_run: bool = False,
        only: Sequence[str] | None = None,
    ) -> list[SessionInfo]:
        """Delete whole sessions last updated before ``before`` and/or beyond the ``keep`` most
        recently updated (within ``project`` if given), with what nothing reads any more (the
        backend's own: a fork's unshared rows, cleared runs' rows); returns the sessions (only
        lists them with ``dry_run``).

        ``only``: of these ids alone, e.g. what a dry run listed and a person confirmed; the
        criteria are checked again as they are deleted, so one appended to meanwhile is kept.
        """
        listed = None if only is None else list(only)
        return await self._prune(PruneRule(epoch_ms(before), keep, project, dry_run, listed))

    async def lineage_tree(
        self, project: str | None = None, **options: Unpack[TreeOptions]
    ) -> list[SessionNode]:
        """Root sessions newest first (by ``sort``) with their subagent sessions and forks below them."""
        return await session_tree(self._catalog_runner(), project, **options)

    async def descendants(self, session_ids: Iterable[str]) -> list[str]:
        """Sessions below ``session_ids`` (subagent sessions and forks), for ``export --children``."""
        return await descendants(self._catalog_runner(), session_ids)


class BrowseCalls(RunsPlans):
    """What a live browser pages through (sessions as a tree), the same on every backend."""

    async def session_tree(
        self,
        project: str | None = None,
        *,
        text: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        agent_id: str | None = None,
        sort: SessionSort = "created",
    ) -> SessionTreePage:
        """A page of sessions newest first (by ``sort``) with their forks under them, or with
        ``text`` the sessions whose id, title, preview or project holds it, with ``agent_id``
        those holding that agent's conversations (flat); see
        :func:`axio_context.catalog.browse_sql.session_tree`."""
        return await self._catalog_runner().read(
            browse_sql.session_tree, project, text or None, limit, cursor, agent_id, sort
        )


class StoreCalls(RunsPlans):
    """What a session store on an SQL backend has the same on each: its session id and project
    (checked once, here) and its project's listing; the backend's store says which runner reads."""

    _session_id: str
    _project: str

    def _identify(self, session_id: str, project: str | None) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise ValueError("session_id must be a non-empty string")
        self._session_id = session_id
        self._project = project if project is not None else str(Path.cwd().resolve())

    @property
    def session_id(self) -> str:
        """The session this store reads and writes."""
        return self._session_id

    @property
    def project(self) -> str:
        """The project new sessions of this store are filed under."""
        return self._project

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session of this store's project, newest first (read from the sessions table)."""
        return (await self.list_sessions_page(limit=None)).sessions

    async def list_sessions_page(self, limit: int | None = 50, cursor: str | None = None) -> SessionPage:
        """One page of :meth:`list_sessions`; pass ``page.next_cursor`` for the next one."""
        return await self._catalog_runner().read(list_page, self._project, limit=limit, cursor=cursor)
