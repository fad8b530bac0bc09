"""The PostgreSQL step that keeps a transcript's user turns (SQLite's ``message_turns`` step of
``schema.sql``; see :mod:`axio_context.turns_sql`). Kept apart from :mod:`.migrations`, the list
of steps, which names it as one of them."""

from __future__ import annotations

from typing import Final

__all__ = ["MESSAGE_TURNS"]

# One row per user message, written in the append's transaction, keyed as its message row is
# (``seg``, ``position``): a fork's segment is based on its parent's, so it sees the turns below
# its fork point with nothing copied. ``turn`` is the message's number (1-based) in every
# transcript that sees it; ``created_at`` ms; ``content`` the message's content as JSON text.
# Rows go with their segment's (pop in place, ``free_segment``).
MESSAGE_TURNS: Final = """
CREATE TABLE message_turns (
    seg bigint NOT NULL,
    position integer NOT NULL,
    turn integer NOT NULL,
    created_at bigint NOT NULL,
    content text NOT NULL,
    PRIMARY KEY (seg, position)
);
CREATE INDEX message_turns_by_number ON message_turns (seg, turn);
"""
