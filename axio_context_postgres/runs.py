"""Agent and run tags as the readers of sessions see them on PostgreSQL (listing, show, search,
export): whose session it is, which run wrote each message, the ``--agent`` / ``--run`` filters,
and the purge of the rows ``clear_run`` hid. The SQLite backend's semantics
(its ``store.runs`` and ``store.hiding``), on this schema (see :mod:`.schema`, step 3).

A message belongs to a session through its segment's ``owner``; a run's tag and a ``clear_run``
mark point at the message row ``(seg, position)``, so every filter here is an index lookup on
those keys, never a scan of the messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.errors import SessionNotFoundError
from axio_context.messages import Message
from axio_context.views import SessionView

from . import lineage, sessions, writes
from .info import RUN_SESSIONS

__all__ = ["agent_session", "agents_of", "purge_hidden", "run_filter", "runs_at", "show"]


def run_filter(args: list[Any], agent_id: str | None, run_id: str | None) -> list[str]:
    """SQL conditions on ``sessions`` (values appended to ``args``): one agent's sessions, and
    the agent sessions of the run's thread that own a message of the run."""
    where: list[str] = []
    if agent_id is not None:
        args.append(agent_id)
        where.append(f"sid IN (SELECT sid FROM agent_sessions WHERE agent_id = ${len(args)})")
    if run_id is not None:
        args.append(run_id)
        where.append(f"sid IN ({RUN_SESSIONS.replace('?', f'${len(args)}')})")
    return where


async def agents_of(conn: Any, session_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``session id -> (agent_id, thread_id)`` for the agent sessions among ``session_ids``."""
    rows = await conn.fetch(
        "SELECT s.id, a.agent_id, a.thread_id FROM sessions s JOIN agent_sessions a ON a.sid = s.sid"
        " WHERE s.id = ANY($1::text[])",
        list(session_ids),
    )
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


async def agent_session(conn: Any, agent_id: str, thread_id: str) -> str:
    """The id of the session holding ``agent_id``'s history in thread ``thread_id``."""
    found = await conn.fetchval(
        "SELECT s.id FROM agent_sessions a JOIN sessions s ON s.sid = a.sid"
        " WHERE a.agent_id = $1 AND a.thread_id = $2",
        agent_id,
        thread_id,
    )
    if found is None:
        raise SessionNotFoundError(f"agent {agent_id!r} has no session in thread {thread_id!r}")
    return str(found)


#: The run tags of the transcript (segment $1, length $2) at positions ``[$3, $4)``.
_TAGS: Final = (
    lineage.CHAIN
    + """
SELECT m.position, r.run_id FROM chain c
CROSS JOIN LATERAL (SELECT position, run FROM message_runs
    WHERE seg = c.seg AND position >= GREATEST(c.lo, $3::integer) AND position < LEAST(c.hi, $4::integer)
    OFFSET 0) m
JOIN agent_runs r ON r.id = m.run
"""
)


async def runs_at(conn: Any, s: Any, start: int, end: int) -> dict[int, str]:
    """``position -> run_id`` of the tagged messages at ``[start, end)`` of session row ``s``."""
    if start >= end:
        return {}
    rows = await conn.fetch(_TAGS, s["seg"], s["next_position"], start, end)
    return {int(r[0]): str(r[1]) for r in rows}


async def show(conn: Any, session_id: str, full: bool, run_id: str | None) -> SessionView:
    """A session's fields and its model view (or with ``full`` every message), each message with
    its position and run, those ``clear_run`` hid left out; ``run_id`` keeps that run's only."""
    s = await sessions.full_row(conn, session_id)
    h = await sessions.header(conn, s, 0)
    n = s["next_position"]
    summary, start = None, 0
    if not full and h.checkpoints:
        summary, start = h.checkpoints[-1].summary, h.checkpoints[-1].position
    messages = await sessions.records(conn, s, start, n)
    gone = set(await sessions.hidden(conn, s))
    positions = [p for p in range(start, n) if p not in gone]
    tags = await runs_at(conn, s, start, n)
    run_ids = [tags.get(p, "") for p in positions]
    if run_id is not None:
        kept = [i for i, r in enumerate(run_ids) if r == run_id]
        messages, positions = [messages[i] for i in kept], [positions[i] for i in kept]
        run_ids = [run_id] * len(kept)
    return SessionView(
        h,
        summary,
        start,
        messages,
        positions=positions,
        runs=run_ids,
        agent_id=s["agent_id"],
        thread_id=s["thread_id"],
        hidden=len(gone),
    )


#: A purged row's payload: a message with no content (its role stays in the row's column).
_EMPTY: Final = writes.encode(Message(role="user", content=[]), 0, 0).payload

#: Hidden rows not purged yet that the session which hid them owns (its segment's own part)
#: and no fork reads (no segment based on theirs takes that position).
_PURGEABLE: Final = """
SELECT DISTINCT m.seg, m.position FROM hidden_messages h
JOIN sessions s ON s.sid = h.sid
JOIN segments g ON g.seg = h.seg AND g.owner = s.id AND h.position >= g.base_len
JOIN messages m ON m.seg = h.seg AND m.position = h.position
WHERE NOT (m.payload = $1 AND m.body = '' AND m.tool = '')
    AND NOT EXISTS (SELECT 1 FROM segments f WHERE f.base_seg = h.seg AND f.base_len > h.position)
"""


async def purge_hidden(conn: Any) -> int:
    """Empty the payload of every hidden row nothing else reads (in the caller's transaction):
    its text (so its search entry), embedding and run tag go, the row and its mark stay, so
    positions stay dense. Returns how many rows were emptied."""
    rows = await conn.fetch(_PURGEABLE, _EMPTY)
    if not rows:
        return 0
    segs, positions = [int(r[0]) for r in rows], [int(r[1]) for r in rows]
    await conn.execute(
        "UPDATE messages m SET payload = $3, body = '', tool = '', tokens = 0"
        " FROM unnest($1::bigint[], $2::integer[]) AS u (seg, position)"
        " WHERE m.seg = u.seg AND m.position = u.position",
        segs,
        positions,
        _EMPTY,
    )
    await conn.execute(
        "DELETE FROM message_runs t USING unnest($1::bigint[], $2::integer[]) AS u (seg, position)"
        " WHERE t.seg = u.seg AND t.position = u.position",
        segs,
        positions,
    )
    if await conn.fetchval("SELECT to_regclass('embeddings') IS NOT NULL"):
        await conn.execute(
            "DELETE FROM embeddings e USING unnest($1::bigint[], $2::integer[]) AS u (seg, position)"
            " WHERE e.seg = u.seg AND e.position = u.position",
            segs,
            positions,
        )
    return len(rows)
