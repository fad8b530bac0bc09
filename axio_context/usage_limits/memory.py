"""MemoryUsageRecorder: the usage recorder in memory, for MemoryContextStore users (and tests).

It keeps its rows in a list and sums them when asked (a process's worth of requests). Given the
stores it records for, it appends the message recorded with a usage to that session's store and
adds the tokens to its totals, as the SQLite recorder does in one transaction: everything is
checked first, so a bad usage or message leaves both untouched.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from ..context import ContextStore
from ..messages import Message
from ..usage import token_totals_after_add
from .counts import RequestUsage, RunUsage
from .errors import UsageError
from .records import (
    DAY_MS,
    GroupBy,
    UsageRecord,
    UsageRecorder,
    UsageTotals,
    check_group,
    day_key,
    ms_of,
    run_usage_of,
    sort_totals,
    time_of,
)
from .stored import COLUMNS, check_rollups, rollup_keys

__all__ = ["MemoryUsageRecorder"]


def check_ids(session_id: str, agent: str, run: str, model: str) -> None:
    """Refuse (UsageError naming the field) an id that is not a string, or an empty session id."""
    if not isinstance(session_id, str) or not session_id:
        raise UsageError(f"session_id must be a non-empty string, not {session_id!r}")
    for name, value in (("agent", agent), ("run", run), ("model", model)):
        if not isinstance(value, str):
            raise UsageError(f"{name} must be a string, not {value!r}")


class MemoryUsageRecorder(UsageRecorder):
    """Usage rows in memory. ``stores``: the sessions' stores (by their ``session_id``) that
    recording appends messages to and adds token totals to; ``project`` labels the rows."""

    def __init__(self, stores: Iterable[ContextStore] = (), *, project: str | None = None) -> None:
        self._stores = {s.session_id: s for s in stores}
        self._project = project
        self._rows: list[UsageRecord] = []
        self._rolled: dict[tuple[str, str], list[int]] = {}  # all-time counts per (dim, key)
        self._run_session: dict[str, str] = {}

    def add_store(self, store: ContextStore) -> None:
        """Record for this store's session too."""
        self._stores[store.session_id] = store

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
        when = ms_of(at) if at is not None else ms_of(datetime.now().astimezone())
        owner = self._run_session.get(run) if run else None
        if owner is not None and owner != session_id:
            raise UsageError(f"run {run!r} belongs to session {owner!r}, not {session_id!r}")
        keys = list(rollup_keys(session_id, agent, run, model, self._project).items())
        check_rollups(
            [(d, k, *self._rolled.get((d, k), ())) for d, k in keys if (d, k) in self._rolled], figures
        )
        store = self._stores.get(session_id)
        if message is not None and store is None:
            raise UsageError(f"no store for session {session_id!r} to append the message to")
        position = None
        if store is not None:
            # Checked before anything changes: the totals must take these tokens.
            token_totals_after_add(
                await store.get_context_tokens(), figures.input_tokens, figures.output_tokens
            )
            if message is not None:
                await store.append(message)
                position = len(await _full(store)) - 1
            await store.add_context_tokens(figures.input_tokens, figures.output_tokens)
        row = UsageRecord(
            id=len(self._rows) + 1,
            session_id=session_id,
            agent=agent,
            run=run,
            model=model,
            project=self._project,
            at=time_of(when),
            position=position,
            usage=figures,
        )
        self._rows.append(row)
        adds = [getattr(figures, name) for name in COLUMNS]
        for cell in keys:
            held = self._rolled.setdefault(cell, [0] * len(COLUMNS))
            held[:] = [a + b for a, b in zip(held, adds, strict=True)]
        if run:
            self._run_session[run] = session_id
        return row

    def _matching(
        self,
        session_id: str | None = None,
        agent: str | None = None,
        run: str | None = None,
        model: str | None = None,
        project: str | None = None,
        since: datetime | None = None,
    ) -> Iterable[UsageRecord]:
        after = None if since is None else ms_of(since)
        for row in self._rows:
            if (
                (session_id is None or row.session_id == session_id)
                and (agent is None or row.agent == agent)
                and (run is None or row.run == run)
                and (model is None or row.model == model)
                and (project is None or row.project == project)
                and (after is None or ms_of(row.at) >= after)
            ):
                yield row

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
        total = RunUsage()
        for row in self._matching(session_id, agent, run, model, project, since):
            total.incr(row.usage)
        return total

    async def aggregate(self, by: GroupBy, *, since: datetime | None = None) -> list[UsageTotals]:
        check_group(by)
        groups: dict[str, tuple[RunUsage, datetime, datetime]] = {}
        for row in self._matching(since=since):
            if by == "day":
                key = day_key(ms_of(row.at) // DAY_MS)
            elif by == "session":
                key = row.session_id
            else:
                key = getattr(row, by) or ""
            usage, first, last = groups.get(key, (RunUsage(), row.at, row.at))
            usage.incr(row.usage)
            groups[key] = (usage, min(first, row.at), max(last, row.at))
        return sort_totals(
            by, [UsageTotals(key=k, usage=u, first_at=f, last_at=la) for k, (u, f, la) in groups.items()]
        )

    async def records(
        self, *, session_id: str | None = None, run: str | None = None, limit: int = 100
    ) -> list[UsageRecord]:
        rows = list(self._matching(session_id=session_id, run=run))
        return rows[::-1][:limit]


async def _full(store: ContextStore) -> list[Message]:
    full = getattr(store, "get_full_history", None)
    return list(await full()) if full is not None else await store.get_history()
