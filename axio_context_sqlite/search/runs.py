"""Search hits and the agent runtime layer: ``clear_run``'s hidden messages are never hits, and
``agent_id`` / ``run_id`` keep the messages of one agent's sessions or of one run.

Applied to each ranking's candidates (at most the search depth, one query), after the ranking:
a message hidden in the session that owns its row is left out (see
:mod:`..store.hiding`). With an agent or run filter the rankings look deeper, so the ``k`` best
that pass are found among more candidates.
"""

from __future__ import annotations

from typing import Any, Final

from .query import Query
from .scope import ids_json

__all__ = ["DEEPER", "keep_visible", "narrowed"]

#: How many times deeper the rankings look when an agent or run filter narrows them.
DEEPER: Final = 20


def narrowed(q: Query) -> bool:
    """Whether the query keeps one agent's or one run's messages only."""
    return q.agent_id is not None or q.run_id is not None


def keep_visible(c: Any, q: Query, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """``ranked`` (``(message id, score)``) without hidden messages and those the filters exclude."""
    if not ranked:
        return ranked
    where: list[str] = []
    args: list[Any] = [ids_json([mid for mid, _ in ranked])]
    if c.execute("SELECT 1 FROM hidden_messages LIMIT 1").fetchone() is not None:
        where.append(
            "NOT EXISTS (SELECT 1 FROM hidden_messages h WHERE h.sid = (j.value >> 32)"
            " AND h.position = (j.value & 4294967295))"
        )
    if q.agent_id is not None:
        where.append("(j.value >> 32) IN (SELECT sid FROM agent_sessions WHERE agent_id = ?)")
        args.append(q.agent_id)
    if q.run_id is not None:
        where.append(
            "EXISTS (SELECT 1 FROM message_runs m WHERE m.id = j.value"
            " AND m.run = (SELECT id FROM agent_runs WHERE run_id = ?))"
        )
        args.append(q.run_id)
    if not where:
        return ranked
    sql = f"SELECT j.value FROM json_each(?) j WHERE {' AND '.join(where)}"
    keep = {int(r[0]) for r in c.execute(sql, args)}
    return [(mid, score) for mid, score in ranked if mid in keep]
