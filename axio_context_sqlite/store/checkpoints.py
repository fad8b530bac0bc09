"""Compaction checkpoints: a summary standing in for a session's first positions in the model's
view; a fork copies its parent's rows (their ``seq`` keeps their identity)."""

from __future__ import annotations

from typing import Any

import msgspec

from axio_context.checkpoints import Checkpoint
from axio_context.checkpoints_sql import insert_checkpoint
from axio_context.errors import CheckpointError

from .keys import iso, key, now_ms
from .reading import decode_summary
from .runner import SQLITE, drive
from .session_rows import ensure_session, segments
from .transactions import write_tx

__all__ = ["add_checkpoint", "list_checkpoints"]


def add_checkpoint(
    c: Any, session_id: str, project: str | None, cp: Checkpoint, summary_tokens: int
) -> Checkpoint:
    now = now_ms()
    with write_tx(c):
        row = ensure_session(c, session_id, project, now)
        if not 0 <= cp.position <= row.next_position:
            raise CheckpointError(
                f"checkpoint position {cp.position} is outside the transcript of session "
                f"{session_id!r} (0..{row.next_position})"
            )
        tail = 0
        for sid, lo, hi in segments(c, row, cp.position):
            tail += int(
                c.execute(
                    "SELECT COALESCE(SUM(tokens), 0) FROM messages WHERE id >= ? AND id < ?",
                    (key(sid, lo), key(sid, hi)),
                ).fetchone()[0]
            )
        seq = int(
            c.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE sid = ?", (row.sid,)
            ).fetchone()[0]
        )
        drive(c, insert_checkpoint(SQLITE, row.sid, seq, cp, now, summary_tokens, row.est_tokens - tail))
        c.execute("UPDATE sessions SET updated_at = ? WHERE sid = ?", (now, row.sid))
    return msgspec.structs.replace(cp, id=seq, created_at=iso(now))


def list_checkpoints(c: Any, session_id: str) -> list[Checkpoint]:
    rows = c.execute(
        "SELECT seq, position, summary, tokens_before, tokens_after, summarizer, c.created_at"
        " FROM checkpoints c JOIN sessions s ON s.sid = c.sid WHERE s.id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()
    return [
        Checkpoint(
            position=position,
            summary=decode_summary(session_id, summary),
            tokens_before=before,
            tokens_after=after,
            summarizer=summarizer,
            created_at=iso(created),
            id=seq,
        )
        for seq, position, summary, before, after, summarizer, created in rows
    ]
