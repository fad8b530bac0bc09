"""Usage records for ``axio-context copy`` on PostgreSQL: every row as recorded
(:class:`UsageRow`), and loading rows with their rollups rebuilt as recording builds them (the
session totals travel with the sessions, so they are left alone)."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any, Final

import msgspec

from axio_context.copying import UsageRow
from axio_context.usage_limits.records import DAY_MS
from axio_context.usage_limits.stored import ALL_TIME, COLUMNS, decode_extras, merge_extras, rollup_keys

_ENCODE: Final = msgspec.msgpack.Encoder()

__all__ = ["dump", "load"]

_N: Final = len(COLUMNS)
_SELECT: Final = (
    f"SELECT at, session, agent, run, model, project, position, {', '.join(COLUMNS)}, audio_seconds,"
    " cost, details FROM usage_records ORDER BY id"
)


async def dump(conn: Any) -> list[UsageRow]:
    """Every usage row, in the order recorded."""
    return [
        UsageRow(
            at=int(r[0]),
            session=r[1],
            agent=r[2],
            run=r[3],
            model=r[4],
            project=r[5],
            position=r[6],
            counts=tuple(int(v) for v in tuple(r)[7 : 7 + _N]),
            audio_seconds=float(r[7 + _N]),
            cost=None if r[8 + _N] is None else str(r[8 + _N]),
            details=r[9 + _N],
        )
        for r in await conn.fetch(_SELECT)
    ]


_INSERT: Final = (
    f"INSERT INTO usage_records (at, session, agent, run, model, project, position, {', '.join(COLUMNS)},"
    f" audio_seconds, cost, details) VALUES ({', '.join(f'${i}' for i in range(1, _N + 11))})"
)
_CELL_COLUMNS: Final = (
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
_UPSERT: Final = (
    f"INSERT INTO usage_rollups ({', '.join(_CELL_COLUMNS)})"
    f" VALUES ({', '.join(f'${i}' for i in range(1, len(_CELL_COLUMNS) + 1))})"
    " ON CONFLICT (dim, key, day) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _CELL_COLUMNS[3:])
)


def _values(r: UsageRow) -> tuple[Any, ...]:
    cost = None if r.cost is None else Decimal(r.cost)
    return (
        r.at,
        r.session,
        r.agent,
        r.run,
        r.model,
        r.project,
        r.position,
        *r.counts,
        r.audio_seconds,
        cost,
        r.details,
    )


def _cells(r: UsageRow) -> list[tuple[str, str, int]]:
    keys = rollup_keys(r.session, r.agent, r.run, r.model, r.project)
    return [(dim, k, d) for dim, k in keys.items() for d in (r.at // DAY_MS, ALL_TIME)]


async def load(conn: Any, rows: Sequence[UsageRow]) -> None:
    """Insert ``rows`` (in the caller's transaction) and bring their rollups up to date, each
    run given to the session that recorded it first.

    A batch is three statements however many rows: the rows, then the rollup cells they touch
    read (locked, in (dimension, key, day) order like every recorder) and written back with the
    rows added in order, exactly as recording them one by one would (the same float sums, exact
    decimals, the details maps merged in the same key order)."""
    if not rows:
        return
    runs = {r.run: r.session for r in reversed(rows) if r.run}  # the first row's session wins
    await conn.executemany(
        "INSERT INTO usage_runs (run, session) VALUES ($1, $2) ON CONFLICT (run) DO NOTHING",
        list(runs.items()),
    )
    await conn.executemany(
        _INSERT,
        [_values(r) for r in rows],
    )
    wanted = sorted({cell for r in rows for cell in _cells(r)})
    current: dict[tuple[str, str, int], list[Any]] = {}
    for c in await conn.fetch(
        f"SELECT {', '.join(_CELL_COLUMNS)} FROM usage_rollups"
        " WHERE (dim, key, day) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::integer[]))"
        " ORDER BY dim, key, day FOR UPDATE",
        [w[0] for w in wanted],
        [w[1] for w in wanted],
        [w[2] for w in wanted],
    ):
        current[(c[0], c[1], c[2])] = list(c)[3:]
    with localcontext() as exact:
        exact.prec = 1000  # numeric's sums are exact: so are these
        for r in rows:
            extras = decode_extras(r.details) if r.details is not None else None
            for cell in _cells(r):
                v = current.get(cell)
                if v is None:
                    current[cell] = v = [*([0] * _N), 0.0, None, None, r.at, r.at]
                for i, n in enumerate(r.counts):
                    v[i] = int(v[i]) + n
                v[_N] = float(v[_N]) + r.audio_seconds
                if r.cost is not None:
                    v[_N + 1] = (v[_N + 1] or Decimal(0)) + Decimal(r.cost)
                if extras is not None:
                    v[_N + 2] = _ENCODE.encode(merge_extras(decode_extras(v[_N + 2]), extras))
                v[_N + 3], v[_N + 4] = min(int(v[_N + 3]), r.at), max(int(v[_N + 4]), r.at)
    await conn.executemany(_UPSERT, [(*cell, *current[cell]) for cell in wanted])
