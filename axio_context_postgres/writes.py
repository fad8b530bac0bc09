"""The writes of one session, each inside the caller's transaction: creating the row, appending,
fork, pop, clear, delete, checkpoints. :class:`.store.PostgresContextStore` wraps each in one
transaction; the import (:mod:`.transfer`) reuses them.

Every write to a session first locks its ``sessions`` row (an ``UPDATE`` or ``FOR UPDATE``), so
writers to one session queue on that row: positions stay dense with any number of processes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Final

import msgspec

from axio_context.catalog.expiry_sql import live_session
from axio_context.checkpoints import Checkpoint
from axio_context.checkpoints_sql import insert_checkpoint
from axio_context.codec import decode_message_msgpack, encode_message_msgpack
from axio_context.errors import CheckpointError
from axio_context.lineage import would_cycle
from axio_context.messages import Message, preview_for, text_columns
from axio_context.tokens import TokenCounter
from axio_context.transcript import format_time

from . import lineage
from .runner import POSTGRES, drive
from .sealed import index_text, sealed

__all__ = ["Encoded", "append_rows", "batch_of", "encode", "ensure_session", "now_ms", "stored_text"]


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return time.time_ns() // 1_000_000


class Encoded(msgspec.Struct, frozen=True):
    """A message ready to store: role, payload, search text, estimated tokens, time."""

    role: str
    payload: bytes
    body: str
    tool: str
    tokens: int
    created_at: int


def _searchable(text: str) -> str:
    return text.replace("\x00", " ")  # PostgreSQL text cannot hold NUL


def preview_text(preview: tuple[int, str] | None) -> Any:
    """The argument of a session's preview text: sealed, a NUL as a space (the message keeps it)."""
    return None if preview is None else sealed(_searchable(preview[1]))


def encode(message: Message, tokens: int, created_at: int) -> Encoded:
    """``message`` as a row (MessagePack payload, plain text for the tsvector)."""
    if not isinstance(message, Message):
        raise TypeError(f"expected a Message, got {type(message).__name__}")
    body, tool = text_columns(message)
    return Encoded(
        message.role,
        encode_message_msgpack(message),
        _searchable(body),
        _searchable(tool),
        tokens,
        created_at,
    )


def stored_text(payload: bytes) -> tuple[str, str]:
    """The search text (body, tool) of a stored payload, as :func:`encode` makes it: what a key
    leaves unstored, for embedding, snippets and a decrypt's rebuilt keyword index."""
    body, tool = text_columns(decode_message_msgpack(payload))
    return _searchable(body), _searchable(tool)


_INSERT: Final = """
INSERT INTO messages (seg, position, role, created_at, tokens, payload, body, tool)
SELECT $1, $2::integer + n - 1, r, c, t, p, b, o
FROM unnest($3::text[], $4::bigint[], $5::integer[], $6::bytea[], $7::text[], $8::text[])
    WITH ORDINALITY AS u(r, c, t, p, b, o, n)
"""


def row_arrays(rows: Sequence[Encoded]) -> tuple[Any, ...]:
    """The six array arguments of a batch's rows, in the order every unnest of them takes: roles,
    times, tokens, payloads (sealed), body and tool text (search text)."""
    return (
        [r.role for r in rows],
        [r.created_at for r in rows],
        [r.tokens for r in rows],
        sealed([r.payload for r in rows]),
        index_text([r.body for r in rows]),
        index_text([r.tool for r in rows]),
    )


async def insert_rows(conn: Any, seg: int, first: int, rows: Sequence[Encoded]) -> None:
    """Insert ``rows`` at positions ``first..`` of segment ``seg`` (one statement)."""
    await conn.execute(_INSERT, seg, first, *row_arrays(rows))


async def ensure_session(conn: Any, session_id: str, project: str | None, now: int) -> None:
    """Create the session's row (and its first segment) unless it exists."""
    if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", session_id):
        return
    seg = await conn.fetchval("INSERT INTO segments (owner) VALUES ($1) RETURNING seg", session_id)
    status = await conn.execute(
        "INSERT INTO sessions (id, seg, project, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)"
        " ON CONFLICT (id) DO NOTHING",
        session_id,
        seg,
        project,
        now,
    )
    if status.endswith(" 0"):  # another writer created it meanwhile
        await conn.execute("DELETE FROM segments WHERE seg = $1", seg)


_BUMP: Final = """
UPDATE sessions SET next_position = next_position + $2, est_tokens = est_tokens + $3, updated_at = $4,
    preview = CASE WHEN preview_pos IS NULL AND $5::integer IS NOT NULL THEN $6 ELSE preview END,
    preview_pos = CASE WHEN preview_pos IS NULL AND $5::integer IS NOT NULL THEN next_position + $5
                  ELSE preview_pos END
WHERE id = $1 RETURNING seg, next_position - $2
"""


#: :data:`_BUMP` of a live session only (an expired one updates nothing: its caller purges it
#: first, see :mod:`axio_context.catalog.expiry_sql`), so the append needs no expiry lookup.
_APPEND_ONE_STATEMENT: Final = (
    "WITH s AS ("
    + _BUMP.strip().replace(
        "WHERE id = $1 RETURNING seg, next_position - $2",
        f"WHERE id = $1 AND {live_session(param='$4')} RETURNING seg, next_position - $2 AS first",
    )
    + """)
INSERT INTO messages (seg, position, role, created_at, tokens, payload, body, tool)
SELECT s.seg, s.first + n - 1, r, c, t, p, b, o
FROM s, unnest($7::text[], $8::bigint[], $9::integer[], $10::bytea[], $11::text[], $12::text[])
    WITH ORDINALITY AS u(r, c, t, p, b, o, n)
"""
)


#: :data:`_APPEND_ONE_STATEMENT` for a lone message, its columns bound as scalars: no six
#: one-item arrays to encode and unnest (measured: 0.35 against 0.40-0.45 ms a statement, the
#: two alternated call by call on one connection at load ~4).
_APPEND_ONE_MESSAGE: Final = (
    _APPEND_ONE_STATEMENT.split("INSERT INTO messages", 1)[0]
    + """INSERT INTO messages (seg, position, role, created_at, tokens, payload, body, tool)
SELECT s.seg, s.first, $7, $8, $9, $10, $11, $12 FROM s
"""
)


async def append_existing(
    conn: Any, session_id: str, rows: Sequence[Encoded], preview: tuple[int, str] | None
) -> bool:
    """Append to an existing session in one statement (one round trip, atomic on its own: the
    ``UPDATE`` of the session row hands out the positions and the ``INSERT`` uses them);
    False, having written nothing, when the session does not exist yet or has expired."""
    head = (
        session_id,
        len(rows),
        sum(r.tokens for r in rows),
        now_ms(),
        None if preview is None else preview[0],
        preview_text(preview),
    )
    if len(rows) == 1:
        [r] = rows
        status = await conn.execute(
            _APPEND_ONE_MESSAGE,
            *head,
            r.role,
            r.created_at,
            r.tokens,
            sealed(r.payload),
            index_text(r.body),
            index_text(r.tool),
        )
    else:
        status = await conn.execute(_APPEND_ONE_STATEMENT, *head, *row_arrays(rows))
    return not status.endswith(" 0")


def batch_of(messages: list[Message], counter: TokenCounter) -> tuple[list[Encoded], tuple[int, str] | None]:
    """``messages`` as rows for :func:`append_rows` and the session's preview (the conversation
    log's and the turn index's)."""
    now = now_ms()
    return [encode(m, counter.count(m), now) for m in messages], preview_for(messages)


async def append_rows(
    conn: Any, session_id: str, project: str | None, rows: Sequence[Encoded], preview: tuple[int, str] | None
) -> int:
    """Append ``rows`` at the end of the session (created if new); returns the first position.

    The ``UPDATE`` of the session row takes its lock and hands out the positions.
    """
    args = (
        session_id,
        len(rows),
        sum(r.tokens for r in rows),
        now_ms(),
        None if preview is None else preview[0],
        preview_text(preview),
    )
    row = await conn.fetchrow(_BUMP, *args)
    if row is None:
        await ensure_session(conn, session_id, project, args[3])
        row = await conn.fetchrow(_BUMP, *args)
    seg, first = int(row[0]), int(row[1])
    await insert_rows(conn, seg, first, rows)
    return first


async def locked(conn: Any, session_id: str) -> Any:
    """The session's row, locked for this transaction (None when there is none)."""
    return await conn.fetchrow(
        "SELECT sid, seg, next_position, est_tokens, project FROM sessions WHERE id = $1 FOR UPDATE",
        session_id,
    )


async def fork(conn: Any, session_id: str, project: str | None, new_id: str) -> None:
    """A new session sharing the parent's transcript: one segment and one session row, plus
    copies of its checkpoint rows; no message is copied."""
    now = now_ms()
    await drive(conn, would_cycle(session_id, new_id))  # a stored session naming new_id above it
    await ensure_session(conn, session_id, project, now)
    parent = await conn.fetchrow(
        "SELECT sid, seg, next_position FROM sessions WHERE id = $1 FOR SHARE", session_id
    )
    seg = await conn.fetchval(
        "INSERT INTO segments (base_seg, base_len, owner) VALUES ($1, $2, $3) RETURNING seg",
        parent["seg"],
        parent["next_position"],
        new_id,
    )
    sid = await conn.fetchval(
        "INSERT INTO sessions (id, seg, project, parent_id, fork_position, created_at, updated_at,"
        " next_position, est_tokens, preview, preview_pos, input_tokens, output_tokens, next_checkpoint,"
        " fork_input_tokens, fork_output_tokens)"
        " SELECT $1, $2, project, id, next_position, $3, $3, next_position, est_tokens, preview, preview_pos,"
        " input_tokens, output_tokens, next_checkpoint, input_tokens, output_tokens"
        " FROM sessions WHERE sid = $4 RETURNING sid",
        new_id,
        seg,
        now,
        parent["sid"],
    )
    await conn.execute(
        "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
        " created_at, summary_tokens, tokens_at) SELECT $1, seq, position, summary, tokens_before,"
        " tokens_after, summarizer, created_at, summary_tokens, tokens_at FROM checkpoints WHERE sid = $2",
        sid,
        parent["sid"],
    )


async def clear(conn: Any, session_id: str) -> None:
    """Empty the session: a fresh segment, no checkpoints, zero tokens; forks keep theirs."""
    row = await locked(conn, session_id)
    if row is None:
        return
    seg = await conn.fetchval("INSERT INTO segments (owner) VALUES ($1) RETURNING seg", session_id)
    await conn.execute(
        "UPDATE sessions SET seg = $2, next_position = 0, est_tokens = 0, preview = NULL, preview_pos = NULL,"
        " input_tokens = 0, output_tokens = 0, updated_at = $3 WHERE sid = $1",
        row["sid"],
        seg,
        now_ms(),
    )
    await conn.execute("DELETE FROM checkpoints WHERE sid = $1", row["sid"])
    await conn.execute("DELETE FROM hidden_messages WHERE sid = $1", row["sid"])  # as SQLite's clear
    await lineage.free_segment(conn, row["seg"])


async def pop(conn: Any, session_id: str) -> Message | None:
    """Remove and return the last message; checkpoints beyond the new end go with it.

    The row is deleted in place unless a fork still sees it (or it is inherited): then the
    session moves to a new segment based on the old one without it, so forks are untouched.
    """
    row = await locked(conn, session_id)
    if row is None or row["next_position"] == 0:
        return None
    seg, last = row["seg"], row["next_position"] - 1
    [stored] = await lineage.read_rows(conn, seg, last + 1, last)
    [message] = lineage.decode(session_id, [stored])
    own = await conn.fetchval("SELECT base_len <= $2 FROM segments WHERE seg = $1", seg, last)
    seen = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM segments WHERE base_seg = $1 AND base_len > $2)", seg, last
    )
    new_seg = seg
    if own and not seen:
        await conn.execute("DELETE FROM messages WHERE seg = $1 AND position = $2", seg, last)
        if await conn.fetchval("SELECT to_regclass('embeddings') IS NOT NULL"):
            await conn.execute("DELETE FROM embeddings WHERE seg = $1 AND position = $2", seg, last)
    else:
        new_seg = await conn.fetchval(
            "INSERT INTO segments (base_seg, base_len, owner) VALUES ($1, $2, $3) RETURNING seg",
            seg,
            last,
            session_id,
        )
    await conn.execute(
        "UPDATE sessions SET seg = $2, next_position = $3, est_tokens = est_tokens - $4, updated_at = $5,"
        " preview = CASE WHEN preview_pos >= $3 THEN NULL ELSE preview END,"
        " preview_pos = CASE WHEN preview_pos >= $3 THEN NULL ELSE preview_pos END WHERE sid = $1",
        row["sid"],
        new_seg,
        last,
        stored.tokens,
        now_ms(),
    )
    await conn.execute("DELETE FROM checkpoints WHERE sid = $1 AND position > $2", row["sid"], last)
    return message


async def delete_session(conn: Any, session_id: str) -> bool:
    """Delete a session, its checkpoints, and the rows only it reached; forks keep theirs."""
    seg = await conn.fetchval("DELETE FROM sessions WHERE id = $1 RETURNING seg", session_id)
    if seg is None:
        return False
    await lineage.free_segment(conn, seg)
    return True


async def add_checkpoint(
    conn: Any,
    session_id: str,
    project: str | None,
    cp: Checkpoint,
    summary_tokens: int,
    created_at: int | None = None,
    seq: int | None = None,
) -> Checkpoint:
    """Record ``cp`` as the session's latest checkpoint (ids increase within a session)."""
    if not isinstance(cp, Checkpoint):
        raise CheckpointError(f"expected a Checkpoint, got {type(cp).__name__}")
    if not all(isinstance(m, Message) for m in cp.summary):
        raise CheckpointError("a checkpoint's summary must be a list of Message")
    await ensure_session(conn, session_id, project, now_ms())
    row = await locked(conn, session_id)
    n = row["next_position"]
    if not 0 <= cp.position <= n:
        raise CheckpointError(
            f"checkpoint position {cp.position} is outside the transcript (0..{n} messages)"
        )
    tokens_at = await lineage.tokens_upto(conn, row["seg"], cp.position)
    if seq is None:
        seq = await conn.fetchval(
            "UPDATE sessions SET next_checkpoint = next_checkpoint + 1"
            " WHERE sid = $1 RETURNING next_checkpoint - 1",
            row["sid"],
        )
    else:
        await conn.execute(
            "UPDATE sessions SET next_checkpoint = GREATEST(next_checkpoint, $2 + 1) WHERE sid = $1",
            row["sid"],
            seq,
        )
    created = now_ms() if created_at is None else created_at
    await drive(conn, insert_checkpoint(POSTGRES, row["sid"], seq, cp, created, summary_tokens, tokens_at))
    return msgspec.structs.replace(cp, id=int(seq), created_at=format_time(created))
