"""Reading usage: totals of a scope and aggregates by dimension, from the rollups.

All time comes from ``usage_rollups``' one all-time row per group; whole UTC days from its
per-day rows (an index range on (dim, key, day)); with ``since``
inside a day, that day's rows after it come from ``usage_records`` by its ``at`` index. A scope
of several filters (a session and an agent) sums the matching usage rows through the session's
or run's index.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.records import DAY_MS, UsageRecord, day_key, time_of
from axio_context.usage_limits.stored import ALL_TIME, COLUMNS, Extras, decode_extras, usage_of

from ..store.keys import position_of
from ..store.transactions import read_tx
from .rows import DIMENSIONS

__all__ = ["aggregate", "records", "totals"]

_SUMS: Final = ", ".join(f"sum({c})" for c in (*COLUMNS, "audio_seconds"))
_PLAIN: Final = ", ".join((*COLUMNS, "audio_seconds"))
_N: Final = len(COLUMNS)

#: Group -> (first, last, counts, audio, cost, extras)
_Groups = dict[str, list[Any]]


def _add(groups: _Groups, key: str, row: Any) -> None:
    """Add one summed row (counts..., audio, first, last, costs, key) to ``key``'s group.

    ``costs`` is the group's decimal costs joined by spaces: summed here, exactly (SQL's sum
    would round them to doubles)."""
    costs = row[-2]
    cost = None if costs is None else sum(map(Decimal, costs.split()), Decimal(0))
    first, last = row[_N + 1], row[_N + 2]
    g = groups.get(key)
    if g is None:
        groups[key] = [first, last, row[:_N], row[_N] or 0, cost, Extras()]
        return
    g[0], g[1] = min(g[0], first), max(g[1], last)
    g[2] = [(a or 0) + (b or 0) for a, b in zip(g[2], row[:_N], strict=True)]
    g[3] += row[_N] or 0
    if cost is not None:
        g[4] = cost + (g[4] or 0)


def _add_maps(groups: _Groups, key: str, blob: bytes) -> None:
    """Add a row's details and extra counters to ``key``'s group."""
    g = groups[key]
    extras = decode_extras(blob)
    d, x = dict(g[5].d), dict(g[5].x)
    for k, v in extras.d.items():
        d[k] = d.get(k, 0) + v
    for k, n in extras.x.items():
        x[k] = x.get(k, 0) + n
    g[5] = Extras(d, x)


def _boundary(since: int | None) -> int:
    """The first whole day the rollups cover for ``since`` (0: all)."""
    if since is None:
        return 0
    return -(-since // DAY_MS)


def _collect(c: Any, dim: str, key: str | None, since: int | None) -> _Groups:
    """Groups of one dimension (only ``key``'s when given), rollups plus the partial first day."""
    groups: _Groups = {}
    group = "day" if dim == "day" else "key"
    if since is None and (dim != "day" or key is not None):  # all time: one row per group
        where, args = "dim = ? AND day = ?", [dim, ALL_TIME]
    else:
        where, args = "dim = ? AND day >= ?", [dim, _boundary(since)]
    if key is not None:
        where += " AND key = ?"
        args.append(key)
    with read_tx(c):
        if args[1] == ALL_TIME:  # one row per group already: nothing to sum
            sql = f"SELECT {_PLAIN}, first_at, last_at, cost, {group} FROM usage_rollups WHERE {where}"
        else:
            sql = (
                f"SELECT {_SUMS}, min(first_at), max(last_at), group_concat(cost, ' '), {group}"
                f" FROM usage_rollups WHERE {where} GROUP BY {group}"
            )
        for row in c.execute(sql, args):
            _add(groups, _label(dim, row[-1]), row)
        for blob, g in c.execute(
            f"SELECT details, {group} FROM usage_rollups WHERE {where} AND details IS NOT NULL", args
        ):
            _add_maps(groups, _label(dim, g), blob)
        if since is not None and since % DAY_MS:
            column = f"at / {DAY_MS}" if dim == "day" else DIMENSIONS[dim]
            raw_where = "at >= ? AND at < ?"
            raw_args: list[Any] = [since, _boundary(since) * DAY_MS]
            if key is not None and dim != "day":  # the day's key '' is every row
                raw_where += f" AND {column} = ?"
                raw_args.append(key)
            for row in c.execute(
                f"SELECT {_SUMS}, min(at), max(at), group_concat(cost, ' '), {column} FROM usage_records"
                f" WHERE {raw_where} GROUP BY {column}",
                raw_args,
            ):
                _add(groups, _label(dim, row[-1]), row)
            for blob, g in c.execute(
                f"SELECT details, {column} FROM usage_records WHERE {raw_where} AND details IS NOT NULL",
                raw_args,
            ):
                _add_maps(groups, _label(dim, g), blob)
    return groups


def _label(dim: str, value: Any) -> str:
    return day_key(int(value)) if dim == "day" else str(value)


def _usage(g: list[Any]) -> RunUsage:
    return usage_of(g[2], g[3], g[4], g[5])


def aggregate(c: Any, by: str, since: int | None) -> list[tuple[str, RunUsage, int, int]]:
    """(key, usage, first_at, last_at) per group of ``by``."""
    return [(k, _usage(g), g[0], g[1]) for k, g in _collect(c, by, None, since).items()]


def totals(c: Any, filters: dict[str, str], since: int | None) -> RunUsage:
    """The summed usage of the rows matching every filter (dimension -> key)."""
    if len(filters) <= 1:
        dim, key = next(iter(filters.items())) if filters else ("day", "")
        groups = _collect(c, dim, key, since)
        total = RunUsage()
        for g in groups.values():
            total.incr(_usage(g))
        return total
    where = " AND ".join(f"{DIMENSIONS[d]} = ?" for d in filters)
    args: list[Any] = list(filters.values())
    if since is not None:
        where += " AND at >= ?"
        args.append(since)
    groups = {}
    with read_tx(c):
        row = c.execute(
            f"SELECT {_SUMS}, min(at), max(at), group_concat(cost, ' '), '' FROM usage_records WHERE {where}",
            args,
        ).fetchone()
        if row[_N + 1] is None:
            return RunUsage()
        _add(groups, "", row)
        for (blob,) in c.execute(
            f"SELECT details FROM usage_records WHERE {where} AND details IS NOT NULL", args
        ):
            _add_maps(groups, "", blob)
    return _usage(groups[""])


def records(c: Any, session_id: str | None, run: str | None, limit: int) -> list[UsageRecord]:
    """The latest usage rows (of a session or a run), newest first."""
    where, args = [], []
    for column, value in (("session", session_id), ("run", run)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    sql = (
        f"SELECT id, at, session, agent, run, model, project, message, {', '.join(COLUMNS)}, audio_seconds,"
        " cost, details FROM usage_records"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY at DESC, id DESC LIMIT ?"
    )
    out = []
    for r in c.execute(sql, [*args, limit]):
        counts = r[8 : 8 + _N]
        audio, cost, blob = r[8 + _N :]
        usage = usage_of(counts, audio, None if cost is None else Decimal(cost), decode_extras(blob))
        out.append(
            UsageRecord(
                id=r[0],
                session_id=r[2],
                agent=r[3],
                run=r[4],
                model=r[5],
                project=r[6],
                at=time_of(r[1]),
                position=None if r[7] is None else position_of(r[7]),
                usage=usage,
            )
        )
    return out
