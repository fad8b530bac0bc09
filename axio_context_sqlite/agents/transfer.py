"""Agent runs for ``axio-context copy``: each run with the messages it tagged (an export leaves
run tags out), and tagging them again in another database, on whichever session's rows hold
each position there (a fork's inherited positions are its parent's rows)."""

from __future__ import annotations

from typing import Any

from axio_context.copying import RunRow

from ..store.keys import key
from ..store.runs import runs_at
from ..store.session_rows import segments, session_row
from ..store.transactions import read_tx, write_tx

__all__ = ["dump_runs", "load_run"]


def dump_runs(c: Any) -> list[RunRow]:
    """Every run with the (session, position) of every message it tagged, by run id."""
    with read_tx(c):
        tags: dict[str, list[tuple[str, int]]] = {}
        for (session_id,) in c.execute("SELECT id FROM sessions ORDER BY id").fetchall():
            row = session_row(c, session_id)
            assert row is not None  # inside this snapshot
            for position, run_id in runs_at(c, row, 0, row.next_position).items():
                tags.setdefault(run_id, []).append((session_id, position))
        return [
            RunRow(run_id, thread_id, int(created_at), tuple(sorted(tags.get(run_id, []))))
            for run_id, thread_id, created_at in c.execute(
                "SELECT run_id, thread_id, created_at FROM agent_runs ORDER BY run_id"
            ).fetchall()
        ]


def load_run(c: Any, run: RunRow) -> None:
    """Register the run (kept when there) and tag its messages, in one transaction; a position
    a session here does not have is left untagged."""
    with write_tx(c):
        found = c.execute("SELECT id FROM agent_runs WHERE run_id = ?", (run.run_id,)).fetchone()
        if found is None:
            found = c.execute(
                "INSERT INTO agent_runs (run_id, thread_id, created_at) VALUES (?, ?, ?) RETURNING id",
                (run.run_id, run.thread_id, run.created_at),
            ).fetchone()
        for session_id, position in run.tags:
            row = session_row(c, session_id)
            if row is None:
                continue
            for owner, _, _ in segments(c, row, position, position + 1):
                c.execute(
                    "INSERT OR IGNORE INTO message_runs (id, run) VALUES (?, ?)",
                    (key(owner, position), found[0]),
                )
