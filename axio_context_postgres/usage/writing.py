"""Writing usage on PostgreSQL: the row, its rollups, the session's token totals and (when given)
the message it belongs to, inside the caller's one transaction.

Locks are taken in one order by every recorder, so concurrent writers queue and never deadlock:
the run's ``usage_runs`` row (its primary key makes two writers claiming a new run for two
sessions wait for each other, and the second is refused), then the session's row (the lock every
write to a session takes), then the rollup rows in (dimension, key, day) order.
"""

from __future__ import annotations

from typing import Any, Final

import asyncpg
import msgspec

from axio_context.usage import MAX_TOKENS, token_totals_after_add
from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.errors import UsageError
from axio_context.usage_limits.records import DAY_MS
from axio_context.usage_limits.stored import (
    ALL_TIME,
    COLUMNS,
    Extras,
    decode_extras,
    encode_extras,
    merge_extras,
    rollup_keys,
)

from .. import writes

__all__ = ["Batch", "RollupOverflow", "claim_run", "insert_row", "record"]

#: A message ready to append: its encoded row and its preview (see ``PostgresContextStore``).
Batch = tuple[writes.Encoded, tuple[int, str] | None]

#: The maps are MessagePack of :class:`Extras`, as in SQLite (so a copy between them is byte-equal).
_ENCODE: Final = msgspec.msgpack.Encoder()
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

# The usual case: the session exists and its totals take the tokens; one statement adds them
# (the row lock queues other writers). No row back: a new session or a total out of range, which
# the careful path below creates or refuses with its one-line error.
_ADD_TOKENS: Final = (
    "UPDATE sessions SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3,"
    " updated_at = $4 WHERE id = $1 AND input_tokens::numeric + $2 BETWEEN 0 AND $5"
    " AND output_tokens::numeric + $3 BETWEEN 0 AND $5 RETURNING project"
)

_SET_DETAILS: Final = (
    "UPDATE usage_rollups AS r SET details = u.b"
    " FROM unnest($1::text[], $2::text[], $3::integer[], $4::bytea[]) AS u(d, k, y, b)"
    " WHERE r.dim = u.d AND r.key = u.k AND r.day = u.y"
)


class RollupOverflow(UsageError):
    """The row would take a rollup past a bigint (the transaction is aborted; the recorder reads
    the rollups after it to say which)."""

    def __init__(self, keys: dict[str, str]) -> None:
        super().__init__("a usage total would pass 2**63 - 1; nothing recorded")
        self.keys = keys


async def claim_run(conn: Any, run: str, session_id: str) -> None:
    """Give ``run`` to ``session_id`` unless another session has it (UsageError then)."""
    owner = await conn.fetchval("SELECT session FROM usage_runs WHERE run = $1", run)
    if owner is None:
        # A writer claiming it at the same moment holds the key: this waits for its commit.
        inserted = await conn.fetchval(
            "INSERT INTO usage_runs (run, session) VALUES ($1, $2) ON CONFLICT (run) DO NOTHING"
            " RETURNING session",
            run,
            session_id,
        )
        owner = inserted or await conn.fetchval("SELECT session FROM usage_runs WHERE run = $1", run)
    if owner != session_id:
        raise UsageError(f"run {run!r} belongs to session {owner!r}, not {session_id!r}; nothing recorded")


async def _add_tokens(conn: Any, session_id: str, project: str | None, usage: RunUsage, now: int) -> Any:
    """Add the usage's tokens to the session's totals (the row locked); returns its project."""
    i, o = usage.input_tokens, usage.output_tokens
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


async def record(
    conn: Any,
    session_id: str,
    project: str | None,
    agent: str,
    run: str,
    model: str,
    at: int,
    usage: RunUsage,
    message: Batch | None,
) -> tuple[int, str | None, int | None]:
    """Record ``usage`` (and append ``message``) in the caller's transaction; returns the row
    id, the session's project and the message's position."""
    if run:
        await claim_run(conn, run, session_id)
    position = None
    if message is not None:
        row, preview = message
        position = await writes.append_rows(conn, session_id, project, [row], preview)
    session_project = await _add_tokens(conn, session_id, project, usage, writes.now_ms())
    row_id = await insert_row(conn, at, session_id, agent, run, model, session_project, position, usage)
    return row_id, session_project, position


async def insert_row(
    conn: Any,
    at: int,
    session_id: str,
    agent: str,
    run: str,
    model: str,
    project: str | None,
    position: int | None,
    usage: RunUsage,
) -> int:
    """Insert one usage row and add it to its rollups (in the caller's transaction); the run's
    claim and the session's token totals are the caller's (a copy brings them with the session)."""
    counts = [getattr(usage, name) for name in COLUMNS]
    extras = encode_extras(usage)
    keys = rollup_keys(session_id, agent, run, model, project)
    cells = sorted((dim, k, d) for dim, k in keys.items() for d in (at // DAY_MS, ALL_TIME))
    try:
        rolled = await conn.fetch(
            _RECORD,
            at,
            session_id,
            agent,
            run,
            model,
            project,
            position,
            *counts,
            float(usage.audio_seconds),
            usage.cost,
            extras,
            [c[0] for c in cells],
            [c[1] for c in cells],
            [c[2] for c in cells],
        )
    except asyncpg.NumericValueOutOfRangeError:
        raise RollupOverflow(keys) from None
    row_id = rolled[0][0]
    if extras is not None:  # the maps are merged here, on rows this transaction now holds
        mine = Extras(usage.details, usage.extra)
        await conn.execute(
            _SET_DETAILS,
            [r[1] for r in rolled],
            [r[2] for r in rolled],
            [r[3] for r in rolled],
            [_ENCODE.encode(merge_extras(decode_extras(r[4]), mine)) for r in rolled],
        )
    return int(row_id)
