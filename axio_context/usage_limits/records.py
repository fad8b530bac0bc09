"""The usage recorder contract: per-request usage rows against session, agent, run and model,
and their totals and aggregates.

Usage is a ledger: a row, once recorded, is what was spent, and clearing or deleting a session
does not take it back. Recording also adds the request's input and output tokens to the
session's token totals (``get_context_tokens``, ``list_sessions``) in the same step, so for a
session whose tokens come only from recorded usage the two always agree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Final, Literal, get_args

import msgspec

from .counts import RequestUsage, RunUsage
from .errors import UsageError

if TYPE_CHECKING:
    from ..messages import Message

__all__ = [
    "DAY_MS",
    "GROUPS",
    "GroupBy",
    "UsageRecord",
    "UsageRecorder",
    "UsageTotals",
    "check_group",
    "day_key",
    "ms_of",
    "run_usage_of",
    "time_of",
]

#: What aggregates group by.
GroupBy = Literal["session", "agent", "run", "model", "project", "day"]
GROUPS: Final[tuple[str, ...]] = get_args(GroupBy)

#: Milliseconds in a (UTC) day: days are UTC days.
DAY_MS: Final = 86_400_000


def check_group(by: str) -> GroupBy:
    """``by`` if it is one of :data:`GROUPS`, else :class:`UsageError` naming them."""
    if by not in GROUPS:
        raise UsageError(f"by must be one of {', '.join(GROUPS)}, not {by!r}")
    return by  # type: ignore[return-value]


def ms_of(when: datetime) -> int:
    """Milliseconds since the epoch (a naive time is local time)."""
    if not isinstance(when, datetime):
        raise UsageError(f"a time must be a datetime, not {when!r}")
    return int(when.timestamp() * 1000)


def time_of(ms: int) -> datetime:
    """The UTC time of ``ms`` milliseconds since the epoch."""
    return datetime.fromtimestamp(ms / 1000, UTC)


def day_key(day: int) -> str:
    """The ISO date of a UTC day number (days since 1970-01-01)."""
    return date.fromordinal(date(1970, 1, 1).toordinal() + day).isoformat()


def run_usage_of(usage: RequestUsage | RunUsage, tool_calls: int) -> RunUsage:
    """A request's usage as one request of a run (with its ``tool_calls``); a run's as it is."""
    if isinstance(usage, RunUsage):
        if tool_calls:
            raise UsageError("tool_calls must not be given with a RunUsage: it carries its own")
        return usage.validate()
    if not isinstance(usage, RequestUsage):
        raise UsageError(f"usage must be a RequestUsage or RunUsage, not {type(usage).__name__}")
    usage.validate()
    fields = {f: getattr(usage, f) for f in usage.__struct_fields__}
    fields["details"] = dict(usage.details)
    fields["extra"] = dict(usage.extra)
    return RunUsage(**fields, requests=1, tool_calls=tool_calls)


class UsageRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded request (or run) usage: whose it was, when, and the figures."""

    id: int
    session_id: str
    agent: str = ""
    run: str = ""
    model: str = ""
    project: str | None = None
    at: datetime
    #: The position of the message recorded with it, if one was.
    position: int | None = None
    usage: RunUsage


class UsageTotals(msgspec.Struct, frozen=True, kw_only=True):
    """The summed usage of one group of an aggregate (a session, an agent, a day...)."""

    key: str
    usage: RunUsage
    first_at: datetime
    last_at: datetime


class UsageRecorder(ABC):
    """Where per-request usage is kept; ``record`` adds, ``totals`` and ``aggregate`` read."""

    @abstractmethod
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
        """Record one request's usage (``requests`` 1, with the ``tool_calls`` its response
        asked for), or a run's usage as it is, and add its input and output tokens to the
        session's totals; with ``message`` (the assistant message it produced), append that
        message to the session in the same step: both are stored or neither. A run id belongs
        to one session: reusing it in another is a :class:`UsageError`."""

    @abstractmethod
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
        """The summed usage of every row matching all the filters given (all rows with none)."""

    @abstractmethod
    async def aggregate(self, by: GroupBy, *, since: datetime | None = None) -> list[UsageTotals]:
        """Totals per session, agent, run, model, project or UTC day (``YYYY-MM-DD``), most
        tokens first (by day: oldest first)."""

    @abstractmethod
    async def records(
        self, *, session_id: str | None = None, run: str | None = None, limit: int = 100
    ) -> list[UsageRecord]:
        """The latest rows (of a session or run), newest first."""


def sort_totals(by: str, totals: Sequence[UsageTotals]) -> list[UsageTotals]:
    """Aggregates in their order: by day oldest first, else most tokens first (ties by key)."""
    if by == "day":
        return sorted(totals, key=lambda t: t.key)
    return sorted(totals, key=lambda t: (-t.usage.total_tokens, -t.usage.requests, t.key))
