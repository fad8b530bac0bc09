"""The SQL of the PostgreSQL history provider: agent sessions, run tags, pages, counts, clear_run.

An agent's conversation in a thread is one ordinary session (so PostgresContextStore, listing,
search and export see it) with an ``agent_sessions`` row saying whose it is. Its id is
``<thread_id>:<agent_id>`` (just the thread id for the agent ``""``), or a hash of both when that
is taken by another agent's conversation or too long: the SQLite provider's rule, so a copy
between the backends keeps the names. Every function runs inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.agents import RunSessionError
from axio_context.agents.threads import hashed_session_id, readable_session_id, visible_window
from axio_context.messages import Message, preview_for

from .. import lineage, writes

__all__ = [
    "append",
    "append_existing",
    "claim_run",
    "clear_run",
    "clear_thread",
    "count",
    "ensure_thread",
    "find_thread",
    "page",
    "run_ids",
]

#: The longest plain session id (the SQLite schema's limit, kept so copies between backends agree).
MAX_ID: Final = 256

#: Taken (transaction-scoped) while creating a thread's session: the name is chosen once.
THREAD_LOCK: Final = 0x61786167  # "axag"

_FIND: Final = (
    "SELECT s.sid, s.id, s.seg, s.next_position FROM agent_sessions a JOIN sessions s ON s.sid = a.sid"
    " WHERE a.agent_id = $1 AND a.thread_id = $2"
)

#: The hidden positions of session $3 among the rows of its transcript (segment $1, length $2).
_HIDDEN: Final = (
    lineage.CHAIN
    + """
SELECT COALESCE(array_agg(h.position ORDER BY h.position), '{}') FROM chain c
CROSS JOIN LATERAL (SELECT position FROM hidden_messages
    WHERE sid = $3 AND seg = c.seg AND position >= c.lo AND position < c.hi OFFSET 0) h
"""
)

_HIDDEN_COUNT: Final = (
    lineage.CHAIN
    + """
SELECT count(*) FROM chain c
CROSS JOIN LATERAL (SELECT 1 FROM hidden_messages
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


async def find_thread(conn: Any, agent_id: str, thread_id: str, *, lock: bool = False) -> Any:
    """The thread's session row (sid, id, seg, next_position), locked when ``lock``; or None."""
    return await conn.fetchrow(_FIND + (" FOR UPDATE OF s" if lock else ""), agent_id, thread_id)


async def _name(conn: Any, agent_id: str, thread_id: str) -> str:
    plain = readable_session_id(agent_id, thread_id)
    if len(plain) <= MAX_ID:
        taken = await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM sessions s JOIN agent_sessions a ON a.sid = s.sid WHERE s.id = $1)",
            plain,
        )
        if not taken:  # free, or a plain session of that name: the agent adopts it
            return plain
    return hashed_session_id(agent_id, thread_id)


async def ensure_thread(conn: Any, agent_id: str, thread_id: str, project: str | None) -> Any:
    """The thread's session row, locked, created with its agent row on first use."""
    found = await find_thread(conn, agent_id, thread_id, lock=True)
    if found is not None:
        return found
    # Two processes making the same thread at once: one chooses the name, the other finds it.
    await conn.execute("SELECT pg_advisory_xact_lock($1)", THREAD_LOCK)
    found = await find_thread(conn, agent_id, thread_id, lock=True)
    if found is not None:
        return found
    name = await _name(conn, agent_id, thread_id)
    await writes.ensure_session(conn, name, project, writes.now_ms())
    await conn.execute(
        "INSERT INTO agent_sessions (sid, agent_id, thread_id)"
        " SELECT sid, $2, $3 FROM sessions WHERE id = $1",
        name,
        agent_id,
        thread_id,
    )
    return await find_thread(conn, agent_id, thread_id, lock=True)


async def claim_run(conn: Any, run_id: str, thread_id: str) -> int:
    """The run's key, registering it on first use; a run id of another thread is refused."""
    await conn.execute(
        "INSERT INTO agent_runs (run_id, thread_id, created_at) VALUES ($1, $2, $3)"
        " ON CONFLICT (run_id) DO NOTHING",
        run_id,
        thread_id,
        writes.now_ms(),
    )
    r = await conn.fetchrow("SELECT id, thread_id FROM agent_runs WHERE run_id = $1", run_id)
    if r["thread_id"] != thread_id:
        raise RunSessionError(f"run_id {run_id!r} belongs to session {r['thread_id']!r}, not {thread_id!r}")
    return int(r["id"])


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
    found = await ensure_thread(conn, agent_id, thread_id, project)
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
        None if preview is None else preview[1],
        [r.role for r in rows],
        [r.created_at for r in rows],
        [r.tokens for r in rows],
        [r.payload for r in rows],
        [r.body for r in rows],
        [r.tool for r in rows],
        run,
    )
    return bool(done)


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


async def _hidden(conn: Any, found: Any) -> list[int]:
    return list(await conn.fetchval(_HIDDEN, found["seg"], found["next_position"], found["sid"]))


async def page(conn: Any, agent_id: str, thread_id: str, limit: int | None, offset: int) -> list[Message]:
    """Visible messages ``offset .. offset + limit`` of the thread: only their rows are read."""
    found = await find_thread(conn, agent_id, thread_id)
    if found is None or limit == 0:
        return []
    hidden = await _hidden(conn, found)
    start, end = visible_window(hidden, offset, limit, found["next_position"])
    if start >= end:
        return []
    gone = set(hidden)
    rows = [
        lineage.MessageRow(r[0], r[1], r[2], bytes(r[3]), r[4])
        for r in await conn.fetch(_PAGE, found["seg"], found["next_position"], start, end)
        if r[0] not in gone
    ]
    return lineage.decode(found["id"], rows)


async def count(conn: Any, agent_id: str, thread_id: str) -> int:
    found = await find_thread(conn, agent_id, thread_id)
    if found is None:
        return 0
    n = await conn.fetchval(_HIDDEN_COUNT, found["seg"], found["next_position"], found["sid"])
    return int(found["next_position"]) - int(n)


async def clear_run(conn: Any, agent_id: str, thread_id: str, run_id: str) -> int:
    """Hide the run's messages from the thread's session; returns how many. Unknown: 0."""
    found = await find_thread(conn, agent_id, thread_id, lock=True)
    run = await conn.fetchval("SELECT id FROM agent_runs WHERE run_id = $1", run_id)
    if found is None or run is None:
        return 0
    status = await conn.execute(_HIDE_RUN, found["seg"], found["next_position"], run, found["sid"])
    await _repreview(conn, found)
    return int(status.rsplit(" ", 1)[-1])


#: The session's preview position when the message there is hidden from it.
_HIDDEN_PREVIEW: Final = (
    "SELECT s.preview_pos FROM sessions s WHERE s.sid = $1 AND EXISTS"
    " (SELECT 1 FROM hidden_messages h WHERE h.sid = s.sid AND h.position = s.preview_pos)"
)

#: How many messages past a hidden preview are read at a time to find the next one.
_PREVIEW_PAGE: Final = 64


async def _repreview(conn: Any, found: Any) -> None:
    """When the preview came from a message now hidden, take it from the first user message
    still visible after it (none: no preview, so the next append sets one)."""
    at = await conn.fetchval(_HIDDEN_PREVIEW, found["sid"])
    if at is None:
        return
    gone = set(await _hidden(conn, found))
    preview: tuple[int, str] | None = None
    start, n = at + 1, found["next_position"]
    while preview is None and start < n:
        end = min(start + _PREVIEW_PAGE, n)
        rows = [
            lineage.MessageRow(r[0], r[1], r[2], bytes(r[3]), r[4])
            for r in await conn.fetch(_PAGE, found["seg"], n, start, end)
            if r[0] not in gone
        ]
        first = preview_for(lineage.decode(found["id"], rows))
        if first is not None:
            preview = (rows[first[0]].position, first[1])
        start = end
    await conn.execute(
        "UPDATE sessions SET preview = $2, preview_pos = $3 WHERE sid = $1",
        found["sid"],
        None if preview is None else preview[1],
        None if preview is None else preview[0],
    )


async def clear_thread(conn: Any, agent_id: str, thread_id: str) -> None:
    """Empty the thread's session (forks keep theirs) and drop its marks."""
    found = await find_thread(conn, agent_id, thread_id, lock=True)
    if found is not None:
        await writes.clear(conn, found["id"])
        await conn.execute("DELETE FROM hidden_messages WHERE sid = $1", found["sid"])


async def run_ids(conn: Any, agent_id: str, thread_id: str) -> list[str]:
    """The run id of each visible message of the thread (``""`` for untagged ones), in order."""
    found = await find_thread(conn, agent_id, thread_id)
    if found is None:
        return []
    tags = {int(p): str(r) for p, r in await conn.fetch(_TAGS, found["seg"], found["next_position"])}
    gone = set(await _hidden(conn, found))
    return [tags.get(p, "") for p in range(found["next_position"]) if p not in gone]
