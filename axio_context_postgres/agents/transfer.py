"""Agent runs for ``axio-context copy`` on PostgreSQL: each run with the messages it tagged, and
tagging them again on whichever segment holds each position here, as the SQLite backend does;
loads run in the caller's transaction."""

from __future__ import annotations

from typing import Any

from axio_context.copying import RunRow

from .. import lineage
from ..runs import runs_at
from ..sessions import FULL

__all__ = ["dump_runs", "load_run"]


async def dump_runs(conn: Any) -> list[RunRow]:
    """Every run with the (session, position) of every message it tagged, by run id."""
    tags: dict[str, list[tuple[str, int]]] = {}
    for s in await conn.fetch(f"SELECT {FULL} FROM sessions"):
        for position, run_id in (await runs_at(conn, s, 0, s["next_position"])).items():
            tags.setdefault(run_id, []).append((s["id"], position))
    rows = await conn.fetch(
        'SELECT run_id, thread_id, created_at FROM agent_runs ORDER BY run_id COLLATE "C"'
    )
    return [RunRow(r[0], r[1], int(r[2]), tuple(sorted(tags.get(r[0], [])))) for r in rows]


async def load_run(conn: Any, run: RunRow) -> None:
    """Register the run (kept when there) and tag its messages; a position a session here does
    not have is left untagged."""
    await conn.execute(
        "INSERT INTO agent_runs (run_id, thread_id, created_at) VALUES ($1, $2, $3)"
        " ON CONFLICT (run_id) DO NOTHING",
        run.run_id,
        run.thread_id,
        run.created_at,
    )
    rid = await conn.fetchval("SELECT id FROM agent_runs WHERE run_id = $1", run.run_id)
    for session_id, position in run.tags:
        s = await conn.fetchrow("SELECT seg, next_position FROM sessions WHERE id = $1", session_id)
        if s is None or position >= s["next_position"]:
            continue
        for seg, lo, hi in await lineage.chain(conn, s["seg"], s["next_position"]):
            if lo <= position < hi:
                await conn.execute(
                    "INSERT INTO message_runs (seg, position, run) VALUES ($1, $2, $3)"
                    " ON CONFLICT DO NOTHING",
                    seg,
                    position,
                    rid,
                )
