"""A framework's conversation log over sessions: records with a revision, entries as messages.

pydantic-ai's ``ConversationStore`` keeps a conversation as a chain of entries (each one message
pointing at the one before it) and a record naming the newest. Here an entry is a message of an
ordinary session, its id the message's ``id``; the entry before it is the message before it in
that session's view. A save that continues the last message of a session appends to that
session; one that continues any other entry (a rewritten history, a branch, a fork of a
conversation) starts a fork of its session at that point: nothing is copied, and every line stays
a session that ``show``, ``search`` and export read like any other.

The record is the framework's own serialization, opaque here; a write checks the stored revision,
appends the new entries and replaces the record in one transaction, so of two writers that loaded
the same revision, in one process or two, exactly one succeeds. Sessions this log creates carry
the adapter's name in their metadata (:mod:`axio_context.owners`): a session id another adapter
writes is refused, never mixed into.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final
from uuid import uuid4

import aiosqlite

from axio_context.conversation_log import Entry, RevisionConflictError
from axio_context.conversation_log_sql import ConversationLogCalls
from axio_context.messages import Message
from axio_context.owners import ADAPTER_KEY, claim

from . import appending, sessions
from .calls import run
from .keys import key, now_ms
from .reading import read_messages
from .runner import SQLiteRunner
from .session_rows import segments, session_row
from .transactions import read_tx, write_tx

__all__ = ["Entry", "RevisionConflictError", "SQLiteConversationLog"]


class SQLiteConversationLog(ConversationLogCalls[aiosqlite.Connection]):
    """Records and entries of one framework's conversations in an SQLite database, on the
    caller's connection (see :class:`~axio_context.conversation_log_sql.ConversationLogCalls`)."""

    @property
    def _conn(self) -> aiosqlite.Connection:
        return self._handle

    def _log_runner(self) -> SQLiteRunner:
        return SQLiteRunner(self._conn)

    def _batch(self, messages: list[Message]) -> appending.Batch:
        return appending.batch_of(messages, self._counter)

    def _append(self) -> Callable[..., tuple[str, int]]:
        return partial(_append_entries, adapter=self._adapter)

    async def fork_at(self, session_id: str, position: int, new_id: str) -> None:
        """A new session ``new_id`` of this adapter inheriting the first ``position`` messages of
        ``session_id`` (nothing copied), in one transaction; ValueError (nothing written) when
        ``session_id`` is missing or shorter, or ``new_id`` is taken."""
        await run(self._conn, _fork_checked, session_id, position, new_id, self._project, self._adapter)

    async def read_line(self, entry_id: str, limit: int | None = None) -> tuple[str | None, list[Message]]:
        """The messages from the first entry up to ``entry_id`` (its last ``limit`` when given),
        and the id of the entry before the first one returned. :class:`KeyError` for an entry the
        log does not have (a concurrent writer may have replaced what pointed at it)."""
        return await run(self._conn, _read_line, entry_id, limit)


_ENTRY: Final = "SELECT session_id, position FROM conversation_entries WHERE id = ?"


def _read_line(c: Any, entry_id: str, limit: int | None) -> tuple[str | None, list[Message]]:
    with read_tx(c):
        found = c.execute(_ENTRY, (entry_id,)).fetchone()
        row = None if found is None else session_row(c, found[0])
        if found is None or row is None or found[1] >= row.next_position:
            raise KeyError(entry_id)
        session_id, position = found
        end = position + 1
        start = 0 if limit is None else max(0, end - limit)
        if start == end:
            return entry_id, []
        got = read_messages(c, session_id, row, max(0, start - 1), end)
        if start > 0:
            return got[0].id, got[1:]
        return None, got


def _append_entries(
    c: Any, conversation_id: str, parent_id: str | None, batch: appending.Batch, project: str, *, adapter: str
) -> tuple[str, int]:
    """Append a save's messages to the session they continue (see :func:`_line_for`), inside
    the save's transaction; returns that session and the first new position."""
    target = _line_for(c, conversation_id, parent_id, project, adapter)
    row = session_row(c, target)
    first = 0 if row is None else row.next_position
    appending.append(c, target, project, batch.encoded, batch.tokens, batch.preview)
    return target, first


def _entry(c: Any, entry_id: str) -> tuple[str, int] | None:
    r = c.execute(_ENTRY, (entry_id,)).fetchone()
    return None if r is None else (r[0], r[1])


def _line_for(c: Any, conversation_id: str, parent_id: str | None, project: str, adapter: str) -> str:
    """The session new entries after ``parent_id`` go to: the session whose last message it is,
    else a fork of its session right after it; a new session for a history's first entry."""
    if parent_id is None:
        return _new_session(c, conversation_id, project, adapter)
    found = _entry(c, parent_id)
    if found is None:
        raise RevisionConflictError(conversation_id)
    session_id, position = found
    row = session_row(c, session_id)
    if row is None or row.next_position <= position:
        raise RevisionConflictError(conversation_id)
    if row.next_position == position + 1 and sessions.get_metadata(c, session_id).get(ADAPTER_KEY) == adapter:
        return str(session_id)
    new_id = uuid4().hex
    _fork_at(c, session_id, position + 1, new_id, project, adapter)
    return new_id


def _new_session(c: Any, conversation_id: str, project: str, adapter: str) -> str:
    """A session for a new history: named after the conversation when that id is free (or an
    empty session no adapter claimed), else a fresh id when this adapter has it already.
    :class:`~axio_context.errors.SessionOwnerError` when another adapter (or plain code) has it."""
    row = session_row(c, conversation_id)
    if row is None:
        sessions.set_metadata(c, conversation_id, project, {ADAPTER_KEY: adapter})
        return conversation_id
    metadata = sessions.get_metadata(c, conversation_id)
    if metadata.get(ADAPTER_KEY) == adapter:
        new_id = uuid4().hex
        sessions.set_metadata(c, new_id, project, {ADAPTER_KEY: adapter})
        return new_id
    wanted = claim(conversation_id, metadata, adapter, has_messages=row.next_position > 0)
    if wanted is not None:
        sessions.set_metadata(c, conversation_id, project, wanted)
    return conversation_id


def _fork_checked(c: Any, session_id: str, position: int, new_id: str, project: str, adapter: str) -> None:
    with write_tx(c):
        parent = session_row(c, session_id)
        if parent is None or not 0 <= position <= parent.next_position:
            raise ValueError(f"session {session_id!r} has no position {position} to fork at")
        if session_row(c, new_id) is not None:
            raise ValueError(f"session {new_id!r} exists already")
        _fork_at(c, session_id, position, new_id, project, adapter)


def _fork_at(c: Any, session_id: str, position: int, new_id: str, project: str, adapter: str) -> None:
    """A session inheriting the first ``position`` messages of ``session_id``'s transcript: one
    row, nothing copied (a fork at any point; compaction checkpoints are not inherited)."""
    parent = session_row(c, session_id)
    assert parent is not None
    est = 0
    for sid, lo, hi in segments(c, parent, 0, position):
        est += c.execute(
            "SELECT total(tokens) FROM messages WHERE id >= ? AND id < ?", (key(sid, lo), key(sid, hi))
        ).fetchone()[0]
    now = now_ms()
    c.execute(
        "INSERT INTO sessions (id, project, parent_id, fork_position, base_sid, base_len, next_position,"
        " created_at, updated_at, preview, preview_pos, est_tokens, metadata)"
        " SELECT ?, ?, id, ?, CASE WHEN ? > 0 THEN sid END, ?, ?, ?, ?,"
        " CASE WHEN preview_pos < ? THEN preview END, CASE WHEN preview_pos < ? THEN preview_pos END, ?, ?"
        " FROM sessions WHERE sid = ?",
        (
            new_id,
            project,
            position,
            position,
            position,
            position,
            now,
            now,
            position,
            position,
            int(est),
            sessions.encode_metadata({ADAPTER_KEY: adapter}),
            parent.sid,
        ),
    )
