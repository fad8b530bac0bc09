"""PostgreSQL's :class:`~axio_context.usage_limits.sql.UsageStatements`: a cost is ``numeric``
(summed exactly by the server), a row keeps its message's position, ``usage_runs`` gives each run
its owner, and a record is one statement for the row and every rollup cell of it.

Locks are taken in one order by every recorder, so concurrent writers queue and never deadlock:
the run's ``usage_runs`` row (its primary key makes two writers claiming a new run for two
sessions wait for each other, and the second is refused), then the session's row (the lock every
write to a session takes), then the rollup rows in (dimension, key, day) order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

import asyncpg

from axio_context.codec import check_message
from axio_context.messages import Message, preview_for
from axio_context.sql import Dialect, ExecuteMany, Native, Plan, Rows, Value
from axio_context.usage import MAX_TOKENS, token_totals_after_add
from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.records import DAY_MS
from axio_context.usage_limits.sql import CELL_COLUMNS, RollupOverflow
from axio_context.usage_limits.stored import (
    ALL_TIME,
    COLUMNS,
    Extras,
    decode_extras,
    encode_extras,
    encode_maps,
    merge_extras,
    rollup_keys,
)

from .. import writes

__all__ = ["STATEMENTS"]

_COLS: Final = ", ".join(COLUMNS)
_N: Final = len(COLUMNS)

# The row and every rollup cell of it in one statement (one round trip): $1 at, $2 session,
# $3 agent, $4 run, $5 model, $6 project, $7 position, the counts, audio seconds, cost, details,
# then the cells' dims, keys and days. The cells come in (dim, key, day) order, so two writers
# lock the rollup rows they share in the same order and queue rather than deadlock.
_A: Final = _N + 8  # the parameter number of audio_seconds (cost, details and the cells follow)
_RECORD: Final = (
    f"WITH r AS (INSERT INTO usage_records (at, session, agent, run, model, project, position, {_COLS},"
    f" audio_seconds, cost, details) VALUES ({', '.join(f'${i}' for i in range(1, _A + 3))}) RETURNING id),"
    f" u AS (INSERT INTO usage_rollups (dim, key, day, {_COLS}, audio_seconds, cost, first_at, last_at)"
    f" SELECT d, k, y, {', '.join(f'${i}::bigint' for i in range(8, _A))},"
    f" ${_A}::double precision, ${_A + 1}::numeric, $1::bigint, $1::bigint"
    f" FROM unnest(${_A + 3}::text[], ${_A + 4}::text[], ${_A + 5}::integer[]) AS c(d, k, y)"
    " ORDER BY d, k, y ON CONFLICT (dim, key, day) DO UPDATE SET "
    + ", ".join(f"{c} = usage_rollups.{c} + excluded.{c}" for c in (*COLUMNS, "audio_seconds"))
    + ", cost = CASE WHEN excluded.cost IS NULL THEN usage_rollups.cost"
    " ELSE COALESCE(usage_rollups.cost, 0) + excluded.cost END,"
    " first_at = LEAST(usage_rollups.first_at, excluded.first_at),"
    " last_at = GREATEST(usage_rollups.last_at, excluded.last_at)"
    " RETURNING dim, key, day, details)"
    " SELECT (SELECT id FROM r), dim, key, day, details FROM u"
)

_SET_DETAILS: Final = (
    "UPDATE usage_rollups AS r SET details = u.b"
    " FROM unnest($1::text[], $2::text[], $3::integer[], $4::bytea[]) AS u(d, k, y, b)"
    " WHERE r.dim = u.d AND r.key = u.k AND r.day = u.y"
)

# The usual case: the session exists and its totals take the tokens; one statement adds them
# (the row lock queues other writers). No row back: a new session or a total out of range, which
# the careful path below creates or refuses with its one-line error.
_ADD_TOKENS: Final = (
    "UPDATE sessions SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,"
    " updated_at = $4 WHERE id = $1 AND input_tokens::numeric + $2 BETWEEN 0 AND $5"
    " AND output_tokens::numeric + $3 BETWEEN 0 AND $5 RETURNING project"
)

_CELLS: Final = (
    f"SELECT {', '.join(CELL_COLUMNS)} FROM usage_rollups"
    " WHERE (dim, key, day) IN (SELECT * FROM unnest(?::text[], ?::text[], ?::integer[]))"
    " ORDER BY dim, key, day FOR UPDATE"
)

Batch = tuple[writes.Encoded, tuple[int, str] | None]


async def _append(conn: Any, session_id: str, project: str | None, batch: Batch) -> int:
    row, preview = batch
    return await writes.append_rows(conn, session_id, project, [row], preview)


async def _add_tokens(conn: Any, session_id: str, project: str | None, usage: RunUsage) -> Any:
    """Add the usage's tokens to the session's totals (the row locked); returns its project."""
    i, o, now = usage.input_tokens, usage.output_tokens, writes.now_ms()
    row = await conn.fetchrow(_ADD_TOKENS, session_id, i, o, now, MAX_TOKENS)
    if row is not None:
        return row[0]
    await writes.ensure_session(conn, session_id, project, now)
    row = await conn.fetchrow(
        "SELECT input_tokens, output_tokens, project FROM sessions WHERE id = $1 FOR UPDATE", session_id
    )
    # the rules every store applies: a total leaving 0..2**63-1 is refused, nothing changes
    i, o = token_totals_after_add((int(row[0]), int(row[1])), i, o)
    await conn.execute(
        "UPDATE sessions SET input_tokens = $2, output_tokens = $3, updated_at = $4 WHERE id = $1",
        session_id,
        i,
        o,
        now,
    )
    return row[2]


async def _insert_row(conn: Any, args: Sequence[Any], usage: RunUsage, keys: dict[str, str]) -> int:
    """The row and its rollups in one statement, then the merged maps (one more) when it has any."""
    cells = sorted((dim, k, day) for dim, k in keys.items() for day in (args[0] // DAY_MS, ALL_TIME))
    try:
        rolled = await conn.fetch(_RECORD, *args, *(list(column) for column in zip(*cells, strict=True)))
    except asyncpg.NumericValueOutOfRangeError:
        raise RollupOverflow(keys) from None
    if args[-1] is not None:  # the maps are merged here, on rows this transaction now holds
        mine = Extras(usage.details, usage.extra)
        await conn.execute(
            _SET_DETAILS,
            [r[1] for r in rolled],
            [r[2] for r in rolled],
            [r[3] for r in rolled],
            [encode_maps(merge_extras(decode_extras(r[4]), mine)) for r in rolled],
        )
    return int(rolled[0][0])


class _Statements:
    """PostgreSQL's usage statements."""

    position = "position"
    cost_sum = "sum(cost)"
    maps = "array_agg(details) FILTER (WHERE details IS NOT NULL)"
    insert = (
        f"INSERT INTO usage_records (at, session, agent, run, model, project, position, {_COLS},"
        f" audio_seconds, cost, details) VALUES ({', '.join('?' * (_N + 10))})"
    )
    append = staticmethod(_append)
    add_tokens = staticmethod(_add_tokens)

    def cost_of(self, value: Any) -> Decimal | None:
        return value  # type: ignore[no-any-return]

    def maps_of(self, value: Any) -> Iterable[bytes]:
        return value or ()

    def cost_arg(self, cost: Decimal | None) -> Any:
        return cost

    def encode(self, message: Message, tokens: int, at: int) -> Batch:
        check_message(message)  # what the read path could not give back is refused first
        return writes.encode(message, tokens, at), preview_for([message])

    def claim_run(self, d: Dialect, run: str, session_id: str) -> Plan[str | None]:
        owner = yield Value("SELECT session FROM usage_runs WHERE run = ?", (run,))
        if owner is None:
            # A writer claiming it at the same moment holds the key: this waits for its commit.
            owner = yield Value(
                "INSERT INTO usage_runs (run, session) VALUES (?, ?) ON CONFLICT (run) DO NOTHING"
                " RETURNING session",
                (run, session_id),
            )
            if owner is None:
                owner = yield Value("SELECT session FROM usage_runs WHERE run = ?", (run,))
        return str(owner)

    def claim_runs(self, d: Dialect, owners: Mapping[str, str]) -> Plan[None]:
        yield ExecuteMany(
            "INSERT INTO usage_runs (run, session) VALUES (?, ?) ON CONFLICT (run) DO NOTHING",
            list(owners.items()),
        )

    def insert_row(self, d: Dialect, row: Sequence[Any], usage: RunUsage) -> Plan[int]:
        at, session_id, agent, run, model, project, position = row
        counts = [getattr(usage, name) for name in COLUMNS]
        args = (at, session_id, agent, run, model, project, position, *counts)
        args += (float(usage.audio_seconds), usage.cost, encode_extras(usage))
        keys = rollup_keys(session_id, agent, run, model, project)
        row_id: int = yield Native(_insert_row, (args, usage, keys))
        return row_id

    def held_cells(self, cells: Sequence[tuple[str, str, int]]) -> Rows:
        return Rows(_CELLS, [list(column) for column in zip(*cells, strict=True)])


#: The one statements object.
STATEMENTS: Final = _Statements()
