"""Writing usage: a row, its rollups, the session's token totals and (when given) the message it
belongs to, in one transaction.

Each row also adds to ``usage_rollups`` (see :mod:`axio_context.usage_limits.stored`, whose
row shapes and overflow rule this uses): running totals per (dimension, key, UTC day) and per
(dimension, key) for all time (day :data:`ALL_TIME`), for the session, agent, run, model,
project and the day itself, so aggregates and limit checks read one rollup row per group (per
group and day with ``since``) instead of every usage row. Integer counts are summed by the upsert itself; the
exact decimal cost and the details maps are merged in Python, still inside the transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

import msgspec

from axio_context.usage_limits.counts import RunUsage
from axio_context.usage_limits.errors import UsageError
from axio_context.usage_limits.records import DAY_MS
from axio_context.usage_limits.stored import (
    ALL_TIME,
    COLUMNS,
    HELD_ROLLUPS,
    Extras,
    check_rollups,
    decode_extras,
    encode_extras,
    held_rollup_args,
    merge_extras,
    rollup_keys,
    usage_of,
)

from ..store import appending, sessions
from ..store.keys import key
from ..store.message_rows import EncodedMessage
from ..store.transactions import write_tx

__all__ = [
    "ALL_TIME",
    "COLUMNS",
    "DIMENSIONS",
    "Extras",
    "decode_extras",
    "encode_extras",
    "insert_row",
    "merge_extras",
    "record",
    "rollup_keys",
    "usage_of",
]

#: The rollup dimensions and the usage_records column each is keyed by (day: key '').
DIMENSIONS: Final = {
    "session": "session",
    "agent": "agent",
    "run": "run",
    "model": "model",
    "project": "ifnull(project, '')",
    "day": "''",
}

_ENCODE: Final = msgspec.msgpack.Encoder()

_COLS: Final = ", ".join(COLUMNS)
_INSERT: Final = (
    f"INSERT INTO usage_records (at, session, agent, run, model, project, message, {_COLS},"
    f" audio_seconds, cost, details) VALUES ({', '.join('?' * (len(COLUMNS) + 10))})"
)
_UPSERT: Final = (
    f"INSERT INTO usage_rollups (dim, key, day, {_COLS}, audio_seconds, first_at, last_at)"
    f" VALUES ({', '.join('?' * (len(COLUMNS) + 6))}) ON CONFLICT (dim, key, day) DO UPDATE SET "
    + ", ".join(f"{c} = {c} + excluded.{c}" for c in (*COLUMNS, "audio_seconds"))
    + ", first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)"
)


def record(
    c: Any,
    session_id: str,
    project: str | None,
    agent: str,
    run: str,
    model: str,
    at: int,
    usage: RunUsage,
    message: tuple[Sequence[EncodedMessage], Sequence[int], tuple[int, str] | None] | None,
) -> tuple[int, str | None, int | None]:
    """Record ``usage`` (and append ``message``'s encoded batch) in one transaction; returns
    the row id, the session's project and the message's position."""
    with write_tx(c):
        if run:
            owner = c.execute(
                "SELECT session FROM usage_records WHERE run = ? AND session <> ? LIMIT 1", (run, session_id)
            ).fetchone()
            if owner is not None:
                raise UsageError(
                    f"run {run!r} belongs to session {owner[0]!r}, not {session_id!r}; nothing recorded"
                )
        if message is not None:
            appending.append(c, session_id, project, *message)
        sessions.add_tokens(c, session_id, project, usage.input_tokens, usage.output_tokens)
        sid, next_position, session_project = c.execute(
            "SELECT sid, next_position, project FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        position = next_position - 1 if message is not None else None
        message_id = None if position is None else key(sid, position)
        row_id = insert_row(c, at, session_id, agent, run, model, session_project, message_id, usage)
    return row_id, session_project, position


def insert_row(
    c: Any,
    at: int,
    session_id: str,
    agent: str,
    run: str,
    model: str,
    project: str | None,
    message_id: int | None,
    usage: RunUsage,
) -> int:
    """Insert one usage row and add it to its rollups (inside the caller's transaction); the
    session's token totals are the caller's (a copy brings them with the session)."""
    counts = [getattr(usage, name) for name in COLUMNS]
    cost = None if usage.cost is None else str(usage.cost)
    extras = encode_extras(usage)
    keys = rollup_keys(session_id, agent, run, model, project)
    check_rollups(c.execute(HELD_ROLLUPS, held_rollup_args(keys)), usage)
    row = c.execute(
        _INSERT + " RETURNING id",
        (at, session_id, agent, run, model, project, message_id, *counts, usage.audio_seconds, cost, extras),
    ).fetchone()
    days = (at // DAY_MS, ALL_TIME)
    c.executemany(
        _UPSERT,
        [(dim, k, d, *counts, usage.audio_seconds, at, at) for dim, k in keys.items() for d in days],
    )
    if cost is not None or extras is not None:
        for d in days:
            _merge_exact(c, keys, d, usage)
    return int(row[0])


def _merge_exact(c: Any, keys: dict[str, str], day: int, usage: RunUsage) -> None:
    """Add the cost and the details maps to each rollup row (exact decimals, merged maps)."""
    mine = Extras(usage.details, usage.extra)
    for dim, k in keys.items():
        cost, blob = c.execute(
            "SELECT cost, details FROM usage_rollups WHERE dim = ? AND key = ? AND day = ?", (dim, k, day)
        ).fetchone()
        if usage.cost is not None:
            cost = str(Decimal(cost) + usage.cost) if cost is not None else str(usage.cost)
        if mine.d or mine.x:
            blob = _ENCODE.encode(merge_extras(decode_extras(blob), mine))
        c.execute(
            "UPDATE usage_rollups SET cost = ?, details = ? WHERE dim = ? AND key = ? AND day = ?",
            (cost, blob, dim, k, day),
        )
