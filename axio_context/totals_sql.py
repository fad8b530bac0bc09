"""The totals every backend's ``stats`` starts from, counted once for every SQL backend: sessions,
messages and tokens per project, each token counted once across forks."""

from __future__ import annotations

from typing import Final

import msgspec

from .catalog.expiry_sql import live_session
from .expiry import now_ms
from .sql import Dialect, Plan, Rows
from .views import ProjectStats

__all__ = ["Totals", "project_totals", "summed"]


class Totals(msgspec.Struct, frozen=True):
    """Totals of a database; ``messages`` counts transcripts (a fork's inherited ones included),
    ``stored_messages`` the rows actually stored. Each backend's stats add what only it has."""

    sessions: int
    messages: int
    stored_messages: int
    input_tokens: int
    output_tokens: int
    checkpoints: int


#: Whether a session is a fork whose parent is still there and live (its inherited totals
#: counted there; an expired parent not yet swept counts as gone). Bind now.
_FORK: Final = (
    "s.parent_id IS NOT NULL AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_id"
    f" AND {live_session('p')})"
)


def _own(column: str) -> str:
    # A session's own tokens: a fork's totals start as its parent's (axio's fork copies them), so
    # a fork's own share is what it added after the fork.
    fork = f"s.fork_{column}"
    return (
        f"(s.{column} - CASE WHEN {_FORK} THEN"
        f" CASE WHEN s.{column} < {fork} THEN s.{column} ELSE {fork} END ELSE 0 END)"
    )


def project_totals(d: Dialect, now: int | None = None) -> Plan[list[ProjectStats]]:
    """Sessions, messages and own tokens per project, the largest project first, of the live
    sessions at ``now`` (default: the current time; an expired session waiting for a sweep is
    not counted: ``stats`` says how many are due). Token sums are taken in two halves (high and
    low 32 bits) and joined exactly here: each session may hold up to 2**63 - 1, so a plain SUM
    overflows SQLite's integer."""
    inp, out = _own("input_tokens"), _own("output_tokens")
    sql = (
        "SELECT project, COUNT(*), COALESCE(SUM(next_position - hidden_count), 0),"
        f" COALESCE(SUM({inp} >> 32), 0), COALESCE(SUM({inp} & 4294967295), 0),"
        f" COALESCE(SUM({out} >> 32), 0), COALESCE(SUM({out} & 4294967295), 0)"
        f" FROM sessions s WHERE {live_session('s')} GROUP BY project ORDER BY COUNT(*) DESC, project"
    )
    rows = yield Rows(sql, (now_ms() if now is None else now,) * sql.count("?"))
    return [
        ProjectStats(r[0], int(r[1]), int(r[2]), (int(r[3]) << 32) + int(r[4]), (int(r[5]) << 32) + int(r[6]))
        for r in rows
    ]


def summed(by_project: list[ProjectStats]) -> dict[str, int]:
    """The database-wide sessions, messages and tokens of :func:`project_totals`' rows."""
    return {
        "sessions": sum(p.sessions for p in by_project),
        "messages": sum(p.messages for p in by_project),
        "input_tokens": sum(p.input_tokens for p in by_project),
        "output_tokens": sum(p.output_tokens for p in by_project),
    }
