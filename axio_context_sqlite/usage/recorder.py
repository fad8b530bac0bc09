"""SQLiteUsageRecorder: usage rows in the database, beside the sessions they belong to.

``record`` writes the row, its rollups and the session's token totals, and appends the message
it belongs to when one is given, all in one transaction (see :mod:`.rows`): the message and its
usage are stored together or not at all. Messages recorded this way get no embeddings at
append time (``reindex`` adds them); use :meth:`SQLiteContextStore.append` and ``record``
without a message if an embedder must run first.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import aiosqlite

from axio_context.messages import Message
from axio_context.tokens import DefaultEstimator, TokenCounter
from axio_context.usage_limits.counts import RequestUsage, RunUsage
from axio_context.usage_limits.memory import check_ids
from axio_context.usage_limits.records import (
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

from ..store import appending
from ..store.calls import run as run_on
from ..store.context_store import SQLiteContextStore
from ..store.keys import now_ms
from ..store.message_rows import encode_message
from . import queries, rows

__all__ = ["SQLiteUsageRecorder"]


class SQLiteUsageRecorder(UsageRecorder):
    """Usage recorded in the SQLite database of ``conn`` (owned by the caller).

    ``project`` files new sessions (those whose first write is a usage record) as
    :class:`SQLiteContextStore` does: the resolved current directory by default. A row's project
    is its session's. ``token_counter`` estimates recorded messages' tokens.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        project: str | None = None,
        *,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._conn = conn
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    @classmethod
    def of(
        cls, store: SQLiteContextStore, *, token_counter: TokenCounter | None = None
    ) -> SQLiteUsageRecorder:
        """A recorder on the store's connection and project (pass the store's ``token_counter``
        too if it has its own: recorded messages' estimates then match its appends)."""
        return cls(store.connection, store.project, token_counter=token_counter)

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
        when = now_ms() if at is None else ms_of(at)
        batch = None
        if message is not None:
            batch = (
                [encode_message(message)],
                [self._counter.count(message)],
                appending.preview_for([message]),
            )
        row_id, project, position = await run_on(
            self._conn, rows.record, session_id, self._project, agent, run, model, when, figures, batch
        )
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
        after = None if since is None else ms_of(since)
        return await run_on(self._conn, queries.totals, filters, after)

    async def aggregate(self, by: GroupBy, *, since: datetime | None = None) -> list[UsageTotals]:
        check_group(by)
        after = None if since is None else ms_of(since)
        groups = await run_on(self._conn, queries.aggregate, by, after)
        return sort_totals(
            by,
            [UsageTotals(key=k, usage=u, first_at=time_of(f), last_at=time_of(la)) for k, u, f, la in groups],
        )

    async def records(
        self, *, session_id: str | None = None, run: str | None = None, limit: int = 100
    ) -> list[UsageRecord]:
        return await run_on(self._conn, queries.records, session_id, run, limit)
