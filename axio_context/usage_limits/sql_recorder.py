"""SQLUsageRecorder: usage rows in a SQL database beside the sessions they belong to, written
once over a backend's runner and :class:`~.sql.UsageStatements`.

``record`` writes the row, its rollups and the session's token totals, and appends the message
it belongs to when one is given, all in one transaction: the message and its usage are stored
together or not at all. Reads are each one snapshot, served by the rollups and indexes.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import ParamSpec, TypeVar

from ..messages import Message
from ..sql import PlanFn, Runner
from ..tokens import DefaultEstimator, TokenCounter
from . import sql as plans
from .counts import RequestUsage, RunUsage
from .errors import UsageError
from .memory import check_ids
from .records import (
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
from .sql import RollupOverflow, UsageStatements

__all__ = ["SQLUsageRecorder"]

T = TypeVar("T")
P = ParamSpec("P")


class SQLUsageRecorder(UsageRecorder):
    """Usage recorded in the database ``runner`` works on (owned by the caller).

    ``project`` files new sessions (those whose first write is a usage record) as the backend's
    context store does: the resolved current directory by default. A row's project is its
    session's. ``token_counter`` estimates recorded messages' tokens.
    """

    def __init__(
        self,
        runner: Runner,
        statements: UsageStatements,
        project: str | None = None,
        *,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._runner = runner
        self._sql = statements
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    async def _read(self, fn: PlanFn[P, T], snapshot: bool, /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a read plan; ``snapshot`` False when it is one statement (a backend may then
        skip the transaction round trips)."""
        return await self._runner.read(fn, *args, **kwargs)

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
        when = time.time_ns() // 1_000_000 if at is None else ms_of(at)
        encoded = None if message is None else self._sql.encode(message, self._counter.count(message), when)
        try:
            row_id, project, position = await self._runner.write(
                plans.record, self._sql, session_id, self._project, agent, run, model, when, figures, encoded
            )
        except RollupOverflow as exc:  # rolled back: say which total, as every recorder does
            await self._read(plans.held, False, exc.keys, figures)
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
        snapshot = len(filters) <= 1 and plans.partial_day(after)  # several filters: one query
        return await self._read(plans.totals, snapshot, self._sql, filters, after)

    async def aggregate(self, by: GroupBy, *, since: datetime | None = None) -> list[UsageTotals]:
        check_group(by)
        after = None if since is None else ms_of(since)
        groups = await self._read(plans.aggregate, plans.partial_day(after), self._sql, by, after)
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
        return await self._read(plans.records, False, self._sql, session_id, run, limit)
