"""Persisted usage on any SQL backend, written once as plans (:mod:`axio_context.sql`):
recording a row (its run's owner, the message it belongs to, the session's token totals, the
row and its rollups, all in one transaction), the reads (a scope's totals, aggregates by
dimension, the latest rows) and the copy's dump and load. A backend gives its
:class:`UsageStatements`: what its schema keeps differently (the cost as exact text or as
``numeric``, a message by its key or by its position, who owns a run) and its fastest record.

Reads come from the rollups (see :mod:`.stored`): all time is one row per group (day
:data:`~.stored.ALL_TIME`), whole UTC days an index range on (dim, key, day), and with ``since``
inside a day that day's rows after it come from ``usage_records`` by its ``at`` index. A scope
of several filters sums the matching rows through the session's or run's index.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, localcontext
from typing import Any, Final, Protocol

from ..copying import UsageRow
from ..sql import Dialect, ExecuteMany, Native, Plan, Rows
from .counts import RunUsage
from .errors import UsageError
from .records import DAY_MS, UsageRecord, day_key, time_of
from .stored import (
    ALL_TIME,
    COLUMNS,
    HELD_ROLLUPS,
    Extras,
    check_rollups,
    decode_extras,
    encode_maps,
    held_rollup_args,
    merge_extras,
    rollup_keys,
    usage_of,
)

__all__ = [
    "CELL_COLUMNS",
    "COLUMN_OF",
    "ROW_COLUMNS",
    "RollupOverflow",
    "UsageStatements",
    "aggregate",
    "dump",
    "held",
    "load",
    "record",
    "records",
    "totals",
]

#: The rollup dimensions and the usage_records expression each is keyed by (day: every row).
COLUMN_OF: Final = {
    "session": "session",
    "agent": "agent",
    "run": "run",
    "model": "model",
    "project": "COALESCE(project, '')",
    "day": "''",
}

#: The columns a usage row is inserted with, in :meth:`UsageStatements.insert`'s order (the
#: message's position is its ``position``, whatever the schema keeps).
ROW_COLUMNS: Final = ("at", "session", "agent", "run", "model", "project", "position", *COLUMNS)
#: The columns of a rollup cell, as a copy reads and writes them whole.
CELL_COLUMNS: Final = (
    "dim",
    "key",
    "day",
    *COLUMNS,
    "audio_seconds",
    "cost",
    "details",
    "first_at",
    "last_at",
)

_N: Final = len(COLUMNS)
_SUMS: Final = ", ".join(f"sum({c})" for c in (*COLUMNS, "audio_seconds"))
_PUT_CELLS: Final = (
    f"INSERT INTO usage_rollups ({', '.join(CELL_COLUMNS)}) VALUES ({', '.join('?' * len(CELL_COLUMNS))})"
    " ON CONFLICT (dim, key, day) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in CELL_COLUMNS[3:])
)

Cell = tuple[str, str, int]


class RollupOverflow(UsageError):
    """A row would take a rollup past ``2**63 - 1`` (the transaction is rolled back; the
    recorder reads the rollups after it to say which)."""

    def __init__(self, keys: dict[str, str]) -> None:
        super().__init__("a usage total would pass 2**63 - 1; nothing recorded")
        self.keys = keys


class UsageStatements(Protocol):
    """What one backend's schema keeps its own way, for the plans of this module."""

    #: The message position of a ``usage_records`` row.
    position: str
    #: An aggregate of a group's costs (:meth:`cost_of` reads it) and of its details (:meth:`maps_of`).
    cost_sum: str
    maps: str
    #: Inserts a usage row: parameters in :data:`ROW_COLUMNS` order, then audio seconds, the
    #: cost (:meth:`cost_arg`) and the details.
    insert: str
    #: Natives: ``append(conn, session_id, project, encoded)`` appends a message from
    #: :meth:`encode` and returns its position; ``add_tokens(conn, session_id, project, usage)``
    #: adds the usage's tokens to the session's totals (created if new), returns its project.
    append: Callable[..., Any]
    add_tokens: Callable[..., Any]

    def cost_of(self, value: Any) -> Decimal | None:
        """The exact sum of a group from its :attr:`cost_sum`."""
        ...

    def maps_of(self, value: Any) -> Iterable[bytes]:
        """The details blobs of a group from its :attr:`maps`."""
        ...

    def cost_arg(self, cost: Decimal | None) -> Any:
        """A cost as the cost column takes it."""
        ...

    def encode(self, message: Any, tokens: int, at: int) -> Any:
        """A message ready for :attr:`append` (what cannot be read back is refused here)."""
        ...

    def claim_run(self, d: Dialect, run: str, session_id: str) -> Plan[str | None]:
        """The session owning ``run`` (given to ``session_id`` when new, where the backend keeps owners)."""
        ...

    def claim_runs(self, d: Dialect, owners: Mapping[str, str]) -> Plan[None]:
        """Give each copied run its first session, unless it has one."""
        ...

    def insert_row(self, d: Dialect, row: Sequence[Any], usage: RunUsage) -> Plan[int]:
        """Insert one row (``row``: the first seven :data:`ROW_COLUMNS`) and add it to its
        rollups (:class:`RollupOverflow` or UsageError past a bigint, nothing written); its id."""
        ...

    def held_cells(self, cells: Sequence[Cell]) -> Rows:
        """The :data:`CELL_COLUMNS` of the rollup cells among ``cells`` (sorted), locked."""
        ...


def record(
    d: Dialect,
    sql: UsageStatements,
    session_id: str,
    project: str | None,
    agent: str,
    run: str,
    model: str,
    at: int,
    usage: RunUsage,
    message: Any,
) -> Plan[tuple[int, str | None, int | None]]:
    """Record ``usage`` (and append ``message``, encoded) in one transaction; returns the row
    id, the session's project and the message's position."""
    if run:
        owner = yield from sql.claim_run(d, run, session_id)
        if owner is not None and owner != session_id:
            raise UsageError(
                f"run {run!r} belongs to session {owner!r}, not {session_id!r}; nothing recorded"
            )
    position = None if message is None else (yield Native(sql.append, (session_id, project, message)))
    session_project = yield Native(sql.add_tokens, (session_id, project, usage))
    row = (at, session_id, agent, run, model, session_project, position)
    row_id = yield from sql.insert_row(d, row, usage)
    return row_id, session_project, position


def held(d: Dialect, keys: dict[str, str], usage: RunUsage) -> Plan[None]:
    """Raise the UsageError naming the rollup ``usage`` would take past a bigint."""
    check_rollups((yield Rows(HELD_ROLLUPS, held_rollup_args(keys))), usage)


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

    def add(self, sql: UsageStatements, row: Sequence[Any]) -> None:
        """Add one summed row: counts..., audio, cost, first, last, maps."""
        self.counts = [a + int(b or 0) for a, b in zip(self.counts, row[:_N], strict=True)]
        self.audio += float(row[_N] or 0)
        cost = sql.cost_of(row[_N + 1])
        if cost is not None:
            self.cost = cost + (self.cost or 0)
        self.first, self.last = min(self.first, int(row[_N + 2])), max(self.last, int(row[_N + 3]))
        for blob in sql.maps_of(row[_N + 4]):
            extras = decode_extras(blob)
            for k, v in extras.d.items():
                self.details[k] = self.details.get(k, 0) + v
            for k, n in extras.x.items():
                self.extra[k] = self.extra.get(k, 0) + n

    def usage(self) -> RunUsage:
        return usage_of(self.counts, self.audio, self.cost, Extras(self.details, self.extra))


def _fold(sql: UsageStatements, groups: dict[str, _Group], key: str, row: Sequence[Any]) -> None:
    group = groups.get(key)
    if group is None:
        groups[key] = group = _Group(int(row[_N + 2]), int(row[_N + 3]))
    group.add(sql, row)


def _boundary(since: int | None) -> int:
    """The first whole day the rollups cover for ``since`` (0: all)."""
    return 0 if since is None else -(-since // DAY_MS)


def partial_day(since: int | None) -> bool:
    """Whether a read from ``since`` takes two queries (rollups and that day's rows)."""
    return since is not None and since % DAY_MS != 0


def _collect(
    d: Dialect, sql: UsageStatements, dim: str, key: str | None, since: int | None
) -> Plan[dict[str, _Group]]:
    """Groups of one dimension (only ``key``'s when given): rollups plus the partial first day."""
    groups: dict[str, _Group] = {}
    group = "day" if dim == "day" else "key"
    args: list[Any]
    if since is None and (dim != "day" or key is not None):  # all time: one row per group
        where, args = "dim = ? AND day = ?", [dim, ALL_TIME]
    else:
        where, args = "dim = ? AND day >= ?", [dim, _boundary(since)]
    if key is not None:
        where += " AND key = ?"
        args.append(key)
    aggregates = f"{_SUMS}, {sql.cost_sum}, min(first_at), max(last_at), {sql.maps}"
    sql_text = f"SELECT {group}, {aggregates} FROM usage_rollups WHERE {where} GROUP BY {group}"
    for row in (yield Rows(sql_text, args)):
        _fold(sql, groups, day_key(int(row[0])) if dim == "day" else row[0], tuple(row)[1:])
    if partial_day(since):
        assert since is not None
        first_day = _boundary(since) - 1  # every raw row read is of this one day
        column = COLUMN_OF[dim]
        raw_where = "at >= ? AND at < ?"
        raw_args: list[Any] = [since, _boundary(since) * DAY_MS]
        if key is not None and dim != "day":  # the day's key '' is every row
            raw_where += f" AND {column} = ?"
            raw_args.append(key)
        aggregates = f"{_SUMS}, {sql.cost_sum}, min(at), max(at), {sql.maps}"
        sql_text = f"SELECT {column}, {aggregates} FROM usage_records WHERE {raw_where} GROUP BY 1"
        for row in (yield Rows(sql_text, raw_args)):
            _fold(sql, groups, day_key(first_day) if dim == "day" else row[0], tuple(row)[1:])
    return groups


def aggregate(
    d: Dialect, sql: UsageStatements, by: str, since: int | None
) -> Plan[list[tuple[str, RunUsage, int, int]]]:
    """(key, usage, first_at, last_at) per group of ``by``."""
    groups = yield from _collect(d, sql, by, None, since)
    return [(k, g.usage(), g.first, g.last) for k, g in groups.items()]


def totals(d: Dialect, sql: UsageStatements, filters: dict[str, str], since: int | None) -> Plan[RunUsage]:
    """The summed usage of the rows matching every filter (dimension -> key)."""
    total = RunUsage()
    if len(filters) <= 1:
        dim, key = next(iter(filters.items())) if filters else ("day", "")
        for g in (yield from _collect(d, sql, dim, key, since)).values():
            total.incr(g.usage())
        return total
    parts = [f"{COLUMN_OF[dim]} = ?" for dim in filters]
    args: list[Any] = list(filters.values())
    if since is not None:
        parts.append("at >= ?")
        args.append(since)
    aggregates = f"{_SUMS}, {sql.cost_sum}, min(at), max(at), {sql.maps}"
    rows = yield Rows(f"SELECT {aggregates} FROM usage_records WHERE {' AND '.join(parts)}", args)
    row = tuple(rows[0])
    if row[_N + 2] is None:  # no row matched
        return total
    group = _Group(int(row[_N + 2]), int(row[_N + 3]))
    group.add(sql, row)
    return group.usage()


def _cost(value: Any) -> Decimal | None:
    return None if value is None else Decimal(value)


def records(
    d: Dialect, sql: UsageStatements, session_id: str | None, run: str | None, limit: int
) -> Plan[list[UsageRecord]]:
    """The latest usage rows (of a session or a run), newest first (an index walk, no sort)."""
    where: list[str] = []
    args: list[Any] = []
    for column, value in (("session", session_id), ("run", run)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    rows = yield Rows(
        f"SELECT id, at, session, agent, run, model, project, {sql.position}, {', '.join(COLUMNS)},"
        " audio_seconds, cost, details FROM usage_records"
        + (" WHERE " + " AND ".join(where) if where else "")
        + " ORDER BY at DESC, id DESC LIMIT ?",
        [*args, limit],
    )
    out = []
    for r in rows:
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
                position=None if r[7] is None else int(r[7]),
                usage=usage_of(tuple(r)[8 : 8 + _N], audio, _cost(cost), decode_extras(blob)),
            )
        )
    return out


def dump(d: Dialect, sql: UsageStatements) -> Plan[list[UsageRow]]:
    """Every usage row, in the order recorded (for ``axio-context copy``)."""
    rows = yield Rows(
        f"SELECT at, session, agent, run, model, project, {sql.position}, {', '.join(COLUMNS)},"
        " audio_seconds, cost, details FROM usage_records ORDER BY id"
    )
    return [
        UsageRow(
            at=int(r[0]),
            session=r[1],
            agent=r[2],
            run=r[3],
            model=r[4],
            project=r[5],
            position=None if r[6] is None else int(r[6]),
            counts=tuple(int(v) for v in tuple(r)[7 : 7 + _N]),
            audio_seconds=float(r[7 + _N]),
            cost=None if r[8 + _N] is None else str(r[8 + _N]),
            details=None if r[9 + _N] is None else bytes(r[9 + _N]),
        )
        for r in rows
    ]


def _row_args(r: UsageRow) -> tuple[Any, ...]:
    """A copied row's :data:`ROW_COLUMNS` and audio seconds."""
    return (r.at, r.session, r.agent, r.run, r.model, r.project, r.position, *r.counts, r.audio_seconds)


def _cells(r: UsageRow) -> list[Cell]:
    keys = rollup_keys(r.session, r.agent, r.run, r.model, r.project)
    return [(dim, k, day) for dim, k in keys.items() for day in (r.at // DAY_MS, ALL_TIME)]


def load(d: Dialect, sql: UsageStatements, rows: Sequence[UsageRow]) -> Plan[None]:
    """Insert copied ``rows`` (in the caller's transaction) and bring their rollups up to date,
    each run given to the session that recorded it first (the session totals travel with the
    sessions, so they are left alone).

    A batch is a few statements however many rows: the rows, then the rollup cells they touch
    read (locked, in (dimension, key, day) order like every recorder) and written back with the
    rows added in order, exactly as recording them one by one would (the same float sums, exact
    decimals, the details maps merged in the same key order)."""
    if not rows:
        return
    yield from sql.claim_runs(d, {r.run: r.session for r in reversed(rows) if r.run})
    yield ExecuteMany(sql.insert, [(*_row_args(r), sql.cost_arg(_cost(r.cost)), r.details) for r in rows])
    wanted = sorted({cell for r in rows for cell in _cells(r)})
    current: dict[Cell, list[Any]] = {
        (c[0], c[1], int(c[2])): list(c)[3:] for c in (yield sql.held_cells(wanted))
    }
    with localcontext() as exact:
        exact.prec = 1000  # numeric's sums are exact: so are these
        for r in rows:
            extras = None if r.details is None else decode_extras(r.details)
            for cell in _cells(r):
                v = current.get(cell)
                if v is None:
                    current[cell] = v = [*([0] * _N), 0.0, None, None, r.at, r.at]
                for i, n in enumerate(r.counts):
                    v[i] = int(v[i]) + n
                v[_N] = float(v[_N]) + r.audio_seconds
                if r.cost is not None:
                    v[_N + 1] = (_cost(v[_N + 1]) or Decimal(0)) + Decimal(r.cost)
                if extras is not None:
                    v[_N + 2] = encode_maps(merge_extras(decode_extras(v[_N + 2]), extras))
                v[_N + 3], v[_N + 4] = min(int(v[_N + 3]), r.at), max(int(v[_N + 4]), r.at)
    yield ExecuteMany(
        _PUT_CELLS,
        [
            (*c, *v[: _N + 1], sql.cost_arg(_cost(v[_N + 1])), *v[_N + 2 :])
            for c in wanted
            for v in (current[c],)
        ],
    )
