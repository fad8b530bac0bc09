"""Writing a compaction checkpoint's row, once for every SQL backend (the backends find its
place, its number and the tokens before it their own way: key ranges on SQLite, segments on
PostgreSQL)."""

from __future__ import annotations

from .checkpoints import Checkpoint
from .codec import encode_messages_msgpack
from .sql import Dialect, Execute, Plan

__all__ = ["insert_checkpoint"]


def insert_checkpoint(
    d: Dialect, sid: int, seq: int, cp: Checkpoint, created_ms: int, summary_tokens: int, tokens_at: int
) -> Plan[None]:
    """Store checkpoint number ``seq`` of session ``sid``: ``cp`` with its summary encoded, made
    at ``created_ms``; ``tokens_at`` is the transcript's estimated tokens before ``cp.position``."""
    yield Execute(
        "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
        " created_at, summary_tokens, tokens_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            sid,
            seq,
            cp.position,
            d.sealed(encode_messages_msgpack(cp.summary)),
            cp.tokens_before,
            cp.tokens_after,
            cp.summarizer,
            created_ms,
            summary_tokens,
            tokens_at,
        ),
    )
