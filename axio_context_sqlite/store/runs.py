"""Agent and run tags as the readers of sessions see them (listing, show, export): whose
session it is, which run wrote each message, and the listing filters on both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .keys import SHIFT, key, position_of
from .session_rows import SessionRow, segments

__all__ = ["agent_of", "agents_of", "run_filter", "runs_at"]


def agent_of(c: Any, sid: int) -> tuple[str, str] | None:
    """``(agent_id, thread_id)`` of an agent's session, None for any other session."""
    r = c.execute("SELECT agent_id, thread_id FROM agent_sessions WHERE sid = ?", (sid,)).fetchone()
    return None if r is None else (str(r[0]), str(r[1]))


def agents_of(c: Any, session_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """``session id -> (agent_id, thread_id)`` for the agent sessions among ``session_ids``."""
    out: dict[str, tuple[str, str]] = {}
    for i in range(0, len(session_ids), 500):
        part = list(session_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        for sid, agent, thread in c.execute(
            "SELECT s.id, a.agent_id, a.thread_id FROM sessions s JOIN agent_sessions a ON a.sid = s.sid"
            f" WHERE s.id IN ({marks})",
            part,
        ):
            out[str(sid)] = (str(agent), str(thread))
    return out


def runs_at(c: Any, row: SessionRow, start: int, end: int) -> dict[int, str]:
    """``position -> run_id`` of the tagged messages at positions ``[start, end)`` of a session."""
    out: dict[int, str] = {}
    for owner, lo, hi in segments(c, row, start, end):
        for mid, run_id in c.execute(
            "SELECT m.id, r.run_id FROM message_runs m JOIN agent_runs r ON r.id = m.run"
            " WHERE m.id >= ? AND m.id < ?",
            (key(owner, lo), key(owner, hi)),
        ):
            out[position_of(int(mid))] = str(run_id)
    return out


#: The agent sessions of a run's thread that hold one of its tags (a key range each), by run id.
RUN_SESSIONS: Final = (
    "SELECT a.sid FROM agent_sessions a JOIN agent_runs r ON r.run_id = ?"
    " AND a.thread_id = r.thread_id WHERE EXISTS (SELECT 1 FROM message_runs m"
    f" WHERE m.id >= (a.sid << {SHIFT}) AND m.id < ((a.sid + 1) << {SHIFT}) AND m.run = r.id)"
)


def run_filter(agent_id: str | None, run_id: str | None) -> tuple[list[str], list[Any]]:
    """SQL conditions on ``sessions.sid``: the sessions of one agent, and the agent sessions
    holding one run's messages."""
    where: list[str] = []
    args: list[Any] = []
    if agent_id is not None:
        where.append("sid IN (SELECT sid FROM agent_sessions WHERE agent_id = ?)")
        args.append(agent_id)
    if run_id is not None:
        # The agent sessions of the run's thread that hold one of its tags (a key range each).
        where.append(f"sid IN ({RUN_SESSIONS})")
        args.append(run_id)
    return where, args
