"""PostgreSQL's :class:`~axio_context.agents.sql.ThreadStatements` (the thread plans themselves
are :mod:`axio_context.agents.sql`'s) and its appends, the provider's hot path.

A thread here is ``(sid, id, next_position, seg)``; its transcript's rows are reached through
the segment chain (:data:`..lineage.CHAIN`), an index range per segment, so a page, the marks
and the tags read only the rows they need. Every function runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.agents import sql as plans
from axio_context.messages import Message

from .. import lineage, writes
from ..runner import POSTGRES, drive
from ..runs import runs_at
from ..sessions import FULL

__all__ = ["STATEMENTS", "append", "append_existing"]

#: The hidden positions of session $3 among the rows of its transcript (segment $1, length $2).
_HIDDEN: Final = (
    lineage.CHAIN
    + """
SELECT COALESCE(array_agg(h.position ORDER BY h.position), '{}') FROM chain c
CROSS JOIN LATERAL (SELECT position FROM hidden_messages
    WHERE sid = $3 AND seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) h
"""
)

#: Mark, for session $4, every row of run $3 in its transcript (one statement).
_HIDE_RUN: Final = (
    lineage.CHAIN
    + """
INSERT INTO hidden_messages (sid, seg, position)
SELECT $4, m.seg, m.position FROM chain c
CROSS JOIN LATERAL (SELECT seg, position FROM message_runs
    WHERE run = $3 AND seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) m
ON CONFLICT DO NOTHING
"""
)

_TAGS: Final = (
    lineage.CHAIN
    + """
SELECT m.position, r.run_id FROM chain c
CROSS JOIN LATERAL (SELECT position, run FROM message_runs
    WHERE seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) m
JOIN agent_runs r ON r.id = m.run
"""
)


#: Positions ``[$3, $4)`` of the transcript: an index range per segment (LATERAL, with ``OFFSET 0``
#: so the planner cannot flatten it into a hash join over the whole table): a page reads its rows.
_PAGE: Final = (
    lineage.CHAIN
    + """
SELECT m.position, m.role, m.created_at, m.payload, m.tokens FROM chain c
CROSS JOIN LATERAL (SELECT position, role, created_at, payload, tokens FROM messages
    WHERE seg = c.seg AND position >= GREATEST(c.lo, $3::integer) AND position < LEAST(c.hi, $4::integer)
    OFFSET 0) m
ORDER BY m.position
"""
)


async def append(
    conn: Any,
    agent_id: str,
    thread_id: str,
    project: str | None,
    rows: Sequence[writes.Encoded],
    preview: tuple[int, str] | None,
    run: int | None,
) -> None:
    """Append ``rows`` to the thread's session (made if missing), tagged with run key ``run``
    (None: untagged). The session row stays locked from the lookup to the tags."""
    found = await drive(conn, plans.ensure_thread(POSTGRES, STATEMENTS, agent_id, thread_id, project))
    first = await writes.append_rows(conn, found["id"], project, rows, preview)
    if run is not None:
        await conn.execute(
            "INSERT INTO message_runs (seg, position, run)"
            " SELECT $1, p, $3 FROM generate_series($2::integer, $2::integer + $4 - 1) AS p",
            found["seg"],
            first,
            run,
            len(rows),
        )


#: One batch to an existing thread in one statement (one round trip, atomic on its own): the
#: ``UPDATE`` of the thread's session row takes its lock and hands out the positions, the rows
#: and their run tags ($13, NULL: none) go in; 0 rows back, nothing written, when no thread yet.
_APPEND_EXISTING: Final = """
WITH t AS (
    SELECT sid FROM agent_sessions WHERE agent_id = $1 AND thread_id = $2
), s AS (
    UPDATE sessions SET next_position = next_position + $3, est_tokens = est_tokens + $4,
        updated_at = $5,
        preview = CASE WHEN preview_pos IS NULL AND $6::integer IS NOT NULL THEN $7 ELSE preview END,
        preview_pos = CASE WHEN preview_pos IS NULL AND $6::integer IS NOT NULL THEN next_position + $6
                      ELSE preview_pos END
    WHERE sid = (SELECT sid FROM t) RETURNING seg, next_position - $3 AS first
), m AS (
    INSERT INTO messages (seg, position, role, created_at, tokens, payload, body, tool)
    SELECT s.seg, s.first + n - 1, r, c, k, p, b, o
    FROM s, unnest($8::text[], $9::bigint[], $10::integer[], $11::bytea[], $12::text[], $13::text[])
        WITH ORDINALITY AS u(r, c, k, p, b, o, n)
    RETURNING seg, position
), g AS (
    INSERT INTO message_runs (seg, position, run)
    SELECT seg, position, $14 FROM m WHERE $14::bigint IS NOT NULL
)
SELECT count(*) FROM s
"""


async def append_existing(
    conn: Any,
    agent_id: str,
    thread_id: str,
    rows: Sequence[writes.Encoded],
    preview: tuple[int, str] | None,
    run: int | None,
) -> bool:
    """Append to the thread's session if it exists (one statement); False, nothing written, if not."""
    done = await conn.fetchval(
        _APPEND_EXISTING,
        agent_id,
        thread_id,
        len(rows),
        sum(r.tokens for r in rows),
        writes.now_ms(),
        None if preview is None else preview[0],
        writes.preview_text(preview),
        *writes.row_arrays(rows),
        run,
    )
    return bool(done)


async def _messages(conn: Any, thread: Any, start: int, end: int) -> list[tuple[int, Message]]:
    rows = [
        lineage.MessageRow(r[0], r[1], r[2], bytes(r[3]), r[4])
        for r in await conn.fetch(_PAGE, thread["seg"], thread["next_position"], start, end)
    ]
    return list(zip((r.position for r in rows), lineage.decode(thread["id"], rows), strict=True))


async def _hidden(conn: Any, thread: Any) -> list[int]:
    return list(await conn.fetchval(_HIDDEN, thread["seg"], thread["next_position"], thread["sid"]))


async def _hide_run(conn: Any, thread: Any, run: int) -> int:
    status = await conn.execute(_HIDE_RUN, thread["seg"], thread["next_position"], run, thread["sid"])
    return int(status.rsplit(" ", 1)[-1])


async def _tags(conn: Any, thread: Any) -> dict[int, str]:
    return {int(p): str(r) for p, r in await conn.fetch(_TAGS, thread["seg"], thread["next_position"])}


async def _clear(conn: Any, thread: Any) -> None:
    await writes.clear(conn, thread["id"])
    await conn.execute("DELETE FROM hidden_messages WHERE sid = $1", thread["sid"])


async def _every_tag(conn: Any) -> dict[str, list[tuple[str, int]]]:
    tags: dict[str, list[tuple[str, int]]] = {}
    for s in await conn.fetch(f"SELECT {FULL} FROM sessions"):
        for position, run_id in (await runs_at(conn, s, 0, s["next_position"])).items():
            tags.setdefault(run_id, []).append((s["id"], position))
    return tags


async def _tag(conn: Any, session_id: str, position: int, run: int) -> None:
    s = await conn.fetchrow("SELECT seg, next_position FROM sessions WHERE id = $1", session_id)
    if s is None or position >= s["next_position"]:
        return
    for seg, lo, hi in await lineage.chain(conn, s["seg"], s["next_position"]):
        if lo <= position < hi:
            await conn.execute(
                "INSERT INTO message_runs (seg, position, run) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                seg,
                position,
                run,
            )


class _Statements:
    """PostgreSQL's thread statements."""

    thread_columns = ", s.seg"
    lock_thread = " FOR UPDATE OF s"
    create_session = staticmethod(writes.ensure_session)
    clear_session = staticmethod(_clear)
    messages = staticmethod(_messages)
    hidden = staticmethod(_hidden)
    hide_run = staticmethod(_hide_run)
    tags = staticmethod(_tags)
    every_tag = staticmethod(_every_tag)
    tag = staticmethod(_tag)


#: The one statements object.
STATEMENTS: Final = _Statements()
