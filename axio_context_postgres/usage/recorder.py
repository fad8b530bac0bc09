"""PostgresUsageRecorder: usage rows in the PostgreSQL database, beside the sessions they belong to.

``record`` writes the row, its rollups and the session's token totals, and appends the message it
belongs to when one is given, all in one transaction (see :mod:`.writing`): the message and its
usage are stored together or not at all, and any number of processes may record at once (they
queue on row locks, in one order). Reads (``totals``, ``aggregate``, ``records``) are each one
read-only snapshot, served by the rollups and indexes (:mod:`.reading`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from axio_context.codec import check_message
from axio_context.messages import Message, preview_for
from axio_context.sql.plan import numbered
from axio_context.tokens import DefaultEstimator, TokenCounter
from axio_context.usage_limits.counts import RequestUsage, RunUsage
from axio_context.usage_limits.errors import UsageError
from axio_context.usage_limits.memory import check_ids
from axio_context.usage_limits.records import (
    DAY_MS,
    GroupBy,
    UsageRecord,
    UsageRecorder,
    UsageTotals,
    check_group,
    ms_of,
    run_usage_of,
    sort_totals,
    time_of,
)
from axio_context.usage_limits.stored import HELD_ROLLUPS, check_rollups, held_rollup_args

from .. import writes
from ..connection import Pool, translated
from ..store import PostgresContextStore
from . import reading, writing

__all__ = ["PostgresUsageRecorder"]

#: How errors name where they happened.
WHERE: Final = "PostgreSQL usage recorder"


class PostgresUsageRecorder(UsageRecorder):
    """Usage recorded in the PostgreSQL database of ``pool`` (owned by the caller).

    ``project`` files new sessions (those whose first write is a usage record) as
    :class:`PostgresContextStore` does: the resolved current directory by default. A row's
    project is its session's. ``token_counter`` estimates recorded messages' tokens.
    """

    def __init__(
        self, pool: Pool, project: str | None = None, *, token_counter: TokenCounter | None = None
    ) -> None:
        self._pool = pool
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    @classmethod
    def of(
        cls, store: PostgresContextStore, *, token_counter: TokenCounter | None = None
    ) -> PostgresUsageRecorder:
        """A recorder on the store's pool and project (pass the store's ``token_counter`` too if
        it has its own: recorded messages' estimates then match its appends)."""
        return cls(store.pool, store.project, token_counter=token_counter)

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[Any]:
        """One pooled connection in one transaction."""
        async with translated(WHERE), self._pool.acquire() as conn, conn.transaction():
            yield conn

    @asynccontextmanager
    async def _read(self, since: int | None) -> AsyncIterator[Any]:
        """A pooled connection to read on: in one read-only snapshot when ``since`` falls inside a
        day (two queries, rollups and that day's rows, must see the same state); else the read
        is one statement, a snapshot of its own, and skips the BEGIN/COMMIT round trips."""
        async with translated(WHERE), self._pool.acquire() as conn:
            if since is not None and since % DAY_MS:
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield conn
            else:
                yield conn

    async def record(
        self,
        usage: RequestUsage | RunUsage,
        *,
        session_id: str,
        agent: str = "",
        run: str = "",
        model: str = "",
        tool_calls: int = 0,
        message: Message | None = None,
        at: datetime | None = None,
    ) -> UsageRecord:
        check_ids(session_id, agent, run, model)
        figures = run_usage_of(usage, tool_calls)
        when = writes.now_ms() if at is None else ms_of(at)
        batch = None
        if message is not None:
            check_message(message)  # what the read path could not give back is refused first
            batch = (writes.encode(message, self._counter.count(message), when), preview_for([message]))
        try:
            async with self._tx() as conn:
                row_id, project, position = await writing.record(
                    conn, session_id, self._project, agent, run, model, when, figures, batch
                )
        except writing.RollupOverflow as exc:  # rolled back: say which total, as every recorder does
            async with translated(WHERE):
                check_rollups(
                    await self._pool.fetch(numbered(HELD_ROLLUPS), *held_rollup_args(exc.keys)), figures
                )
            raise
        return UsageRecord(
            id=row_id,
            session_id=session_id,
            agent=agent,
            run=run,
            model=model,
            project=project,
            at=time_of(when),
            position=position,
            usage=figures,
        )

    async def totals(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        run: str | None = None,
        model: str | None = None,
        project: str | None = None,
        since: datetime | None = None,
    ) -> RunUsage:
        given = {"session": session_id, "agent": agent, "run": run, "model": model, "project": project}
        filters = {k: v for k, v in given.items() if v is not None}
        for name, value in filters.items():
            if not isinstance(value, str):
                raise UsageError(f"{name} must be a string, not {value!r}")
        after = None if since is None else ms_of(since)
        async with self._read(None if len(filters) > 1 else after) as conn:  # several: one query
            return await reading.totals(conn, filters, after)

    async def aggregate(self, by: GroupBy, *, since: datetime | None = None) -> list[UsageTotals]:
        check_group(by)
        after = None if since is None else ms_of(since)
        async with self._read(after) as conn:
            groups = await reading.aggregate(conn, by, after)
        return sort_totals(
            by,
            [UsageTotals(key=k, usage=u, first_at=time_of(f), last_at=time_of(la)) for k, u, f, la in groups],
        )

    async def records(
        self, *, session_id: str | None = None, run: str | None = None, limit: int = 100
    ) -> list[UsageRecord]:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise UsageError(f"limit must be a whole number >= 0, not {limit!r}")
        for name, value in (("session_id", session_id), ("run", run)):
            if value is not None and not isinstance(value, str):
                raise UsageError(f"{name} must be a string, not {value!r}")
        async with self._read(None) as conn:
            return await reading.records(conn, session_id, run, limit)
