"""Reading usage on PostgreSQL: totals of a scope and aggregates by dimension, from the rollups.

All time is one ``usage_rollups`` row per group (day -1); whole UTC days since a time are an index
range on (dim, key, day); with ``since`` inside a day, that day's rows after it come from
``usage_records`` by its ``at`` index. A scope of several filters (a session and an agent) sums
the matching usage rows through the session's or run's index. Each read sees one snapshot.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.records import DAY_MS, UsageRecord, day_key, time_of
from axio_context.usage_limits.stored import ALL_TIME, COLUMNS, Extras, decode_extras, usage_of

__all__ = ["aggregate", "records", "totals"]

#: The rollup dimensions and the usage_records expression each is keyed by (day: every row).
COLUMN_OF: Final = {
    "session": "session",
    "agent": "agent",
    "run": "run",
    "model": "model",
    "project": "COALESCE(project, '')",
    "day": "''",
}

_N: Final = len(COLUMNS)
# counts..., audio, cost, first, last, details[]: what every summing query selects after its key
_SUMS: Final = ", ".join(f"sum({c})" for c in (*COLUMNS, "audio_seconds")) + ", sum(cost)"
_MAPS: Final = "array_agg(details) FILTER (WHERE details IS NOT NULL)"


class _Group:
    """The running sum of one group: counts, audio seconds, exact cost, times and maps."""

    __slots__ = ("audio", "cost", "counts", "details", "extra", "first", "last")

    def __init__(self, first: int, last: int) -> None:
        self.counts = [0] * _N
        self.audio = 0.0
        self.cost: Decimal | None = None
        self.first, self.last = first, last
        self.details: dict[str, int] = {}
        self.extra: dict[str, int | float] = {}

    def add(self, row: Any) -> None:
        """Add one summed row: counts..., audio, cost, first, last, details blobs."""
        self.counts = [a + int(b or 0) for a, b in zip(self.counts, row[:_N], strict=True)]
        self.audio += float(row[_N] or 0)
        if row[_N + 1] is not None:
            self.cost = row[_N + 1] + (self.cost or 0)
        self.first, self.last = min(self.first, int(row[_N + 2])), max(self.last, int(row[_N + 3]))
        for blob in row[_N + 4] or ():
            extras = decode_extras(blob)
            for k, v in extras.d.items():
                self.details[k] = self.details.get(k, 0) + v
            for k, n in extras.x.items():
                self.extra[k] = self.extra.get(k, 0) + n

    def usage(self) -> RunUsage:
        return usage_of(self.counts, self.audio, self.cost, Extras(self.details, self.extra))


def _boundary(since: int | None) -> int:
    """The first whole day the rollups cover for ``since`` (0: all)."""
    return 0 if since is None else -(-since // DAY_MS)


def _fold(groups: dict[str, _Group], key: str, row: Any) -> None:
    first, last = int(row[_N + 2]), int(row[_N + 3])
    groups.setdefault(key, _Group(first, last)).add(row)


async def _collect(conn: Any, dim: str, key: str | None, since: int | None) -> dict[str, _Group]:
    """Groups of one dimension (only ``key``'s when given): rollups plus the partial first day."""
    groups: dict[str, _Group] = {}
    group = "day" if dim == "day" else "key"
    args: list[Any]
    if since is None and (dim != "day" or key is not None):  # all time: one row per group
        where, args = "dim = $1 AND day = $2", [dim, ALL_TIME]
    else:
        where, args = "dim = $1 AND day >= $2", [dim, _boundary(since)]
    if key is not None:
        where += " AND key = $3"
        args.append(key)
    sql = (
        f"SELECT {group}, {_SUMS}, min(first_at), max(last_at), {_MAPS}"
        f" FROM usage_rollups WHERE {where} GROUP BY {group}"
    )
    for row in await conn.fetch(sql, *args):
        _fold(groups, day_key(row[0]) if dim == "day" else row[0], tuple(row)[1:])
    if since is not None and since % DAY_MS:
        first_day = _boundary(since) - 1  # every raw row read is of this one day
        column = COLUMN_OF[dim]
        raw_where = "at >= $1 AND at < $2"
        raw_args: list[Any] = [since, _boundary(since) * DAY_MS]
        if key is not None and dim != "day":  # the day's key '' is every row
            raw_where += f" AND {column} = $3"
            raw_args.append(key)
        sql = (
            f"SELECT {column}, {_SUMS}, min(at), max(at), {_MAPS}"
            f" FROM usage_records WHERE {raw_where} GROUP BY 1"
        )
        for row in await conn.fetch(sql, *raw_args):
            _fold(groups, day_key(first_day) if dim == "day" else row[0], tuple(row)[1:])
    return groups


async def aggregate(conn: Any, by: str, since: int | None) -> list[tuple[str, RunUsage, int, int]]:
    """(key, usage, first_at, last_at) per group of ``by``."""
    return [(k, g.usage(), g.first, g.last) for k, g in (await _collect(conn, by, None, since)).items()]


async def totals(conn: Any, filters: dict[str, str], since: int | None) -> RunUsage:
    """The summed usage of the rows matching every filter (dimension -> key)."""
    total = RunUsage()
    if len(filters) <= 1:
        dim, key = next(iter(filters.items())) if filters else ("day", "")
        for g in (await _collect(conn, dim, key, since)).values():
            total.incr(g.usage())
        return total
    parts = [f"{COLUMN_OF[d]} = ${i}" for i, d in enumerate(filters, 1)]
    args: list[Any] = list(filters.values())
    if since is not None:
        parts.append(f"at >= ${len(args) + 1}")
        args.append(since)
    row = await conn.fetchrow(
        f"SELECT {_SUMS}, min(at), max(at), {_MAPS} FROM usage_records WHERE {' AND '.join(parts)}", *args
    )
    if row[_N + 2] is None:  # no row matched
        return total
    group = _Group(int(row[_N + 2]), int(row[_N + 3]))
    group.add(row)
    return group.usage()


async def records(conn: Any, session_id: str | None, run: str | None, limit: int) -> list[UsageRecord]:
    """The latest usage rows (of a session or a run), newest first (an index walk, no sort)."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("session", session_id), ("run", run)):
        if value is not None:
            args.append(value)
            where.append(f"{column} = ${len(args)}")
    args.append(limit)
    sql = (
        f"SELECT id, at, session, agent, run, model, project, position, {', '.join(COLUMNS)},"
        " audio_seconds, cost, details FROM usage_records"
        + (" WHERE " + " AND ".join(where) if where else "")
        + f" ORDER BY at DESC, id DESC LIMIT ${len(args)}"
    )
    out = []
    for r in await conn.fetch(sql, *args):
        audio, cost, blob = r[8 + _N], r[9 + _N], r[10 + _N]
        out.append(
            UsageRecord(
                id=int(r[0]),
                session_id=r[2],
                agent=r[3],
                run=r[4],
                model=r[5],
                project=r[6],
                at=time_of(int(r[1])),
                position=r[7],
                usage=usage_of(tuple(r)[8 : 8 + _N], audio, cost, decode_extras(blob)),
            )
        )
    return out
