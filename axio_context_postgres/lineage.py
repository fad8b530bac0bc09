"""Reading a session's transcript through its segments, and freeing segments nobody reaches.

A session's transcript is its segment's own rows (positions ``base_len..``) over its base
segment's, recursively (see :mod:`.schema`). :data:`CHAIN` walks that in SQL: one query reads
any range of a session however deep its forks go.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Final

import msgspec

from axio_context.codec import decode_message_msgpack, decode_messages_msgpack
from axio_context.context import tail_of_view
from axio_context.errors import CorruptDataError
from axio_context.messages import Message

__all__ = [
    "HIDES",
    "READ",
    "TOKENS",
    "VIEW",
    "MessageRow",
    "chain",
    "free_segment",
    "hidden_positions",
    "read_rows",
    "read_view",
    "tokens_upto",
]

#: ``chain(seg, base_seg, lo, hi)``: each segment of the lineage of segment $1 and the
#: positions ``[lo, hi)`` the transcript (of length $2) takes from it.
CHAIN: Final = """
WITH RECURSIVE chain(seg, base_seg, lo, hi) AS (
    SELECT g.seg, g.base_seg, g.base_len, $2::integer FROM segments g WHERE g.seg = $1
    UNION ALL
    SELECT g.seg, g.base_seg, g.base_len, LEAST(c.lo, c.hi) FROM chain c JOIN segments g ON g.seg = c.base_seg
)
"""

#: Positions ``[$3, $4)`` of the transcript: one index range per segment. ``LATERAL`` with
#: ``OFFSET 0`` keeps the planner from flattening it into a hash join over the whole messages
#: table (a tail read of 20 at 100k rows: 5.4 ms that way; see docs/postgres.md).
READ: Final = (
    CHAIN
    + """
SELECT m.position, m.role, m.created_at, m.payload, m.tokens FROM chain c
CROSS JOIN LATERAL (SELECT position, role, created_at, payload, tokens FROM messages
    WHERE seg = c.seg AND position >= GREATEST(c.lo, $3::integer) AND position < LEAST(c.hi, $4::integer)
    OFFSET 0) m
ORDER BY m.position
"""
)

#: :data:`READ` without the rows ``clear_run`` hid from session $5.
_READ_VISIBLE: Final = (
    CHAIN
    + """
SELECT m.position, m.role, m.created_at, m.payload, m.tokens FROM chain c
CROSS JOIN LATERAL (SELECT position, role, created_at, payload, tokens FROM messages
    WHERE seg = c.seg AND position >= GREATEST(c.lo, $3::integer) AND position < LEAST(c.hi, $4::integer)
    OFFSET 0) m
WHERE NOT EXISTS (SELECT 1 FROM hidden_messages h
    WHERE h.sid = $5 AND h.seg = c.seg AND h.position = m.position)
ORDER BY m.position
"""
)

TOKENS: Final = (
    CHAIN
    + """
SELECT COALESCE(SUM(m.tokens), 0) FROM chain c
CROSS JOIN LATERAL (SELECT tokens FROM messages
    WHERE seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) m
"""
)

#: The positions of the transcript (segment $1, length $2) that ``clear_run`` hid from session $3.
_HIDDEN: Final = (
    CHAIN
    + """
SELECT COALESCE(array_agg(h.position ORDER BY h.position), '{}') FROM chain c
CROSS JOIN LATERAL (SELECT position FROM hidden_messages
    WHERE sid = $3 AND seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) h
"""
)

_SEGMENTS: Final = CHAIN + "SELECT seg, GREATEST(lo, 0), hi FROM chain WHERE lo < hi ORDER BY lo"


#: A column of a ``sessions`` row: whether ``clear_run`` hid any row from it (then reads take
#: the slower :data:`_READ_VISIBLE`; the usual session has no mark and reads as before).
HIDES: Final = "EXISTS (SELECT 1 FROM hidden_messages h WHERE h.sid = sessions.sid) AS hides"


#: A session's view in one statement, outside any transaction (one statement is its own
#: snapshot). Its first row (``head`` not 0) is session $1's: ``head`` is 1, plus 2 when it has
#: expired at $3 and 4 when ``clear_run`` hid rows from it (those two read the long way), then
#: its latest checkpoint's position and summary; then a row (``head`` 0) per position after the
#: checkpoint (the last $2 of them when $2 is not NULL), in no order: sorting them here would
#: sort every payload (a disk sort at 10k rows), where the caller sorts just the keys. No rows:
#: no session.
VIEW: Final = """
WITH RECURSIVE s AS (
    SELECT sid, seg, next_position AS n, COALESCE(expires_at <= $3::bigint, false) AS gone,
        hidden_count > 0 AS hides FROM sessions WHERE id = $1
), cp AS (
    SELECT position, summary FROM checkpoints WHERE sid = (SELECT sid FROM s) ORDER BY seq DESC LIMIT 1
), r AS (
    SELECT seg, n, GREATEST(COALESCE((SELECT position FROM cp), 0), n - COALESCE($2::integer, n)) AS lo
    FROM s WHERE NOT gone AND NOT hides
), chain(seg, base_seg, lo, hi) AS (
    SELECT g.seg, g.base_seg, g.base_len, r.n FROM r JOIN segments g ON g.seg = r.seg
    UNION ALL
    SELECT g.seg, g.base_seg, g.base_len, LEAST(c.lo, c.hi) FROM chain c JOIN segments g ON g.seg = c.base_seg
)
SELECT 1 + 2 * gone::integer + 4 * hides::integer AS head, (SELECT position FROM cp), (SELECT summary FROM cp)
FROM s
UNION ALL
SELECT 0, x.position, x.payload FROM r, chain c CROSS JOIN LATERAL (SELECT position, payload FROM messages
    WHERE seg = c.seg AND position >= GREATEST(c.lo, r.lo) AND position < c.hi OFFSET 0) x
"""


_POSITION: Final = itemgetter(1)


class MessageRow(msgspec.Struct, frozen=True):
    """One stored message: position, role, created time (ms), MessagePack payload, tokens."""

    position: int
    role: str
    created_at: int
    payload: bytes
    tokens: int


async def read_rows(
    conn: Any, seg: int, length: int, start: int = 0, end: int | None = None, *, hidden_by: int | None = None
) -> list[MessageRow]:
    """Positions ``[start, end)`` of the transcript of length ``length`` ending in segment ``seg``;
    with ``hidden_by`` (a session's sid) without the rows ``clear_run`` hid from that session."""
    stop = length if end is None else min(end, length)
    if start >= stop:
        return []
    if hidden_by is None:
        rows = await conn.fetch(READ, seg, length, start, stop)
    else:
        rows = await conn.fetch(_READ_VISIBLE, seg, length, start, stop, hidden_by)
    return [MessageRow(r[0], r[1], r[2], bytes(r[3]), r[4]) for r in rows]


def decode(session_id: str, rows: Sequence[MessageRow]) -> list[Message]:
    """The messages of ``rows``; one that does not decode is CorruptDataError naming it."""
    if len(rows) > 1:
        # One MessagePack array of all the payloads: one decoder call instead of one per row.
        packed = b"\xdd" + len(rows).to_bytes(4, "big") + b"".join(r.payload for r in rows)
        try:
            return decode_messages_msgpack(packed)
        except Exception:
            pass  # find which one, below
    out: list[Message] = []
    for r in rows:
        try:
            out.append(decode_message_msgpack(r.payload))
        except Exception as exc:
            raise CorruptDataError(f"message {r.position} of session {session_id!r}: {exc}") from None
    return out


def _decode_quietly(packed: bytes) -> list[Message]:
    """:func:`decode_messages_msgpack` with the cyclic garbage collector paused: a 10k-message
    load allocates enough objects to set off collections that walk the whole heap (22 against
    12 ms for the decode beside a live heap); nothing else runs meanwhile (no await)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return decode_messages_msgpack(packed)
    finally:
        if enabled:
            gc.enable()


async def read_view(conn: Any, session_id: str, limit: int | None, now: int) -> list[Message] | None:
    """The session's view (:data:`VIEW`: one statement, one round trip), its last ``limit``
    messages with ``limit``; None when it must be read the long way: expired (to be purged),
    with rows hidden by ``clear_run``, or a payload that does not decode (to be named)."""
    rows = await conn.fetch(VIEW, session_id, limit, now)
    if not rows:
        return []
    at = 0 if rows[0][0] else next(i for i, r in enumerate(rows) if r[0])
    head, cp_position, cp_summary = rows.pop(at)
    if head != 1:
        return None
    tail: list[Message] = []
    if rows:
        rows.sort(key=_POSITION)  # in position order already, but for forks' segments: linear
        packed = b"\xdd" + len(rows).to_bytes(4, "big") + b"".join([r[2] for r in rows])
        try:  # one MessagePack array: decoded where the bytes arrive, in one call
            tail = _decode_quietly(packed)
        except Exception:
            return None
    if cp_position is None:
        return tail
    summary = decode_summary(session_id, cp_summary)
    return [*summary, *tail] if limit is None else tail_of_view(summary, tail, limit)


def decode_summary(session_id: str, blob: bytes) -> list[Message]:
    """A stored checkpoint summary."""
    try:
        return decode_messages_msgpack(bytes(blob))
    except Exception as exc:
        raise CorruptDataError(f"a checkpoint summary of session {session_id!r}: {exc}") from None


async def tokens_upto(conn: Any, seg: int, end: int) -> int:
    """Estimated tokens of positions ``[0, end)`` of the transcript ending in ``seg``."""
    if end <= 0:
        return 0
    return int(await conn.fetchval(TOKENS, seg, end))


async def hidden_positions(conn: Any, seg: int, length: int, sid: int) -> list[int]:
    """The positions of the transcript (ending in ``seg``, ``length`` long) that ``clear_run``
    hid from session ``sid``, ascending."""
    if length <= 0:
        return []
    return [int(p) for p in await conn.fetchval(_HIDDEN, seg, length, sid)]


async def chain(conn: Any, seg: int, length: int) -> list[tuple[int, int, int]]:
    """``(segment, lo, hi)`` ranges making up positions ``[0, length)``, in position order."""
    return [(int(r[0]), int(r[1]), int(r[2])) for r in await conn.fetch(_SEGMENTS, seg, length)]


async def free_segment(conn: Any, seg: int | None) -> None:
    """Delete segment ``seg`` with its rows if no session and no segment reaches it any more,
    then its base likewise, up the lineage (inside the caller's transaction)."""
    while seg is not None:
        used = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM sessions WHERE seg = $1)"
            " OR EXISTS (SELECT 1 FROM segments WHERE base_seg = $1)",
            seg,
        )
        if used:
            # Still seen by forks: file its rows under one of them if no session is on it any
            # more (search reports a row under the segment's owner).
            await conn.execute(
                "UPDATE segments SET owner = COALESCE("
                "(SELECT b.owner FROM segments b WHERE b.base_seg = $1 ORDER BY b.seg LIMIT 1), owner)"
                " WHERE seg = $1 AND NOT EXISTS (SELECT 1 FROM sessions WHERE seg = $1)",
                seg,
            )
            return
        base = await conn.fetchval("DELETE FROM segments WHERE seg = $1 RETURNING base_seg", seg)
        await conn.execute("DELETE FROM messages WHERE seg = $1", seg)
        await conn.execute("DELETE FROM message_turns WHERE seg = $1", seg)  # its user turns
        if await conn.fetchval("SELECT to_regclass('embeddings') IS NOT NULL"):
            await conn.execute("DELETE FROM embeddings WHERE seg = $1", seg)
        seg = base
