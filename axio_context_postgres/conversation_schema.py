"""The PostgreSQL step of a framework's conversation log (the SQLite step of the same name's
model: see :mod:`axio_context_postgres.conversation_log`). Kept apart from :mod:`.migrations`,
the list of steps, which names it as one of them."""

from __future__ import annotations

from typing import Final

__all__ = ["CONVERSATION_LOG"]

# Each conversation's record (the framework's own JSON, opaque here) with the revision a save
# checks and where its head is. Entries are messages of ordinary sessions (branches are forks):
# ``conversation_entries`` finds one by id.
CONVERSATION_LOG: Final = """
CREATE TABLE conversation_records (
    id text PRIMARY KEY,
    scope text,
    revision text NOT NULL,
    updated_us bigint NOT NULL,
    head_session text,
    head_position integer,
    record bytea NOT NULL
);
CREATE INDEX conversation_records_by_time ON conversation_records (updated_us DESC, id);
CREATE INDEX conversation_records_by_scope ON conversation_records (scope, updated_us DESC, id);
CREATE TABLE conversation_entries (
    id text PRIMARY KEY,
    session_id text NOT NULL,
    position integer NOT NULL
);
"""
