"""A framework's conversation log on PostgreSQL: records with a revision, entries as messages.

The contract is :class:`axio_context.conversation_log.ConversationLog`, kept as the SQLite
backend keeps it: an entry is a message of an ordinary session, a save that continues the last
message of a session
appends to it, and one that continues any other entry forks that session at that point (one
segment based on the parent's, nothing copied). A write takes a transaction-scoped advisory
lock on the conversation id, then checks the stored revision, appends the entries and replaces
the record, so of two writers (processes or hosts) holding the same revision exactly one
succeeds; the session it appends to is locked by the append itself, as every writer does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Final
from uuid import uuid4

from axio_context.conversation_log import RevisionConflictError
from axio_context.conversation_log_sql import ConversationLogCalls
from axio_context.messages import Message
from axio_context.owners import ADAPTER_KEY, claim
from axio_context.session_metadata import decode_metadata, encode_metadata

from . import lineage, writes
from .connection import Pool, translated
from .runner import PostgresRunner
from .sealed import sealed

__all__ = ["PostgresConversationLog"]

_ENTRY: Final = "SELECT session_id, position FROM conversation_entries WHERE id = $1"
_SESSION: Final = "SELECT sid, seg, next_position, metadata FROM sessions WHERE id = $1"


class PostgresConversationLog(ConversationLogCalls[Pool]):
    """Records and entries of one framework's conversations in a PostgreSQL database: the
    methods of :class:`axio_context.conversation_log.ConversationLog`, on a pool
    the caller owns."""

    @property
    def _pool(self) -> Pool:
        return self._handle

    @asynccontextmanager
    async def _tx(self, *, readonly: bool = False) -> AsyncIterator[Any]:
        async with translated("PostgreSQL conversation log"), self._pool.acquire() as conn:
            if readonly:
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield conn
            else:
                async with conn.transaction():
                    yield conn

    def _log_runner(self) -> PostgresRunner:
        return PostgresRunner(self._pool, "PostgreSQL conversation log")

    def _batch(self, messages: list[Message]) -> tuple[list[Any], Any]:
        return writes.batch_of(messages, self._counter)

    def _append(self) -> Callable[..., Awaitable[tuple[str, int]]]:
        return self._append_entries

    async def _append_entries(
        self,
        conn: Any,
        conversation_id: str,
        parent_id: str | None,
        batch: tuple[list[Any], Any],
        project: str,
    ) -> tuple[str, int]:
        """Append a save's messages to the session they continue (see :meth:`_line_for`), inside
        the save's transaction; returns that session and the first new position."""
        target = await self._line_for(conn, conversation_id, parent_id, project)
        rows, preview = batch
        return target, await writes.append_rows(conn, target, project, rows, preview)

    async def read_line(self, entry_id: str, limit: int | None = None) -> tuple[str | None, list[Message]]:
        """The messages from the first entry up to ``entry_id`` (its last ``limit`` when given),
        and the id of the entry before the first one returned. :class:`KeyError` for an entry the
        log does not have."""
        async with self._tx(readonly=True) as conn:
            found = await conn.fetchrow(_ENTRY, entry_id)
            row = None if found is None else await conn.fetchrow(_SESSION, found[0])
            if found is None or row is None or found[1] >= row["next_position"]:
                raise KeyError(entry_id)
            session_id, position = found[0], found[1]
            end = position + 1
            start = 0 if limit is None else max(0, end - limit)
            if start == end:
                return entry_id, []
            stored = await lineage.read_rows(conn, row["seg"], row["next_position"], max(0, start - 1), end)
            got = lineage.decode(session_id, stored)
        if start > 0:
            return got[0].id, got[1:]
        return None, got

    async def fork_at(self, session_id: str, position: int, new_id: str) -> None:
        """A new session ``new_id`` of this adapter inheriting the first ``position`` messages of
        ``session_id`` (nothing copied), in one transaction; ValueError (nothing written) when
        ``session_id`` is missing or shorter, or ``new_id`` is taken."""
        async with self._tx() as conn:
            row = await conn.fetchrow(_SESSION + " FOR UPDATE", session_id)
            if row is None or not 0 <= position <= row["next_position"]:
                raise ValueError(f"session {session_id!r} has no position {position} to fork at")
            if await conn.fetchval("SELECT 1 FROM sessions WHERE id = $1", new_id) is not None:
                raise ValueError(f"session {new_id!r} exists already")
            await self._fork_at(conn, row, position, new_id, self._project)

    async def _line_for(self, conn: Any, conversation_id: str, parent_id: str | None, project: str) -> str:
        """The session new entries after ``parent_id`` go to: the session whose last message it
        is, else a fork of its session right after it; a new session for a history's first."""
        if parent_id is None:
            return await self._new_session(conn, conversation_id, project)
        found = await _entry(conn, parent_id)
        if found is None:
            raise RevisionConflictError(conversation_id)
        session_id, position = found
        row = await conn.fetchrow(_SESSION + " FOR UPDATE", session_id)
        if row is None or row["next_position"] <= position:
            raise RevisionConflictError(conversation_id)
        if (
            row["next_position"] == position + 1
            and _metadata(session_id, row).get(ADAPTER_KEY) == self._adapter
        ):
            return session_id
        new_id = uuid4().hex
        await self._fork_at(conn, row, position + 1, new_id, project)
        return new_id

    async def _create(self, conn: Any, session_id: str, project: str) -> bool:
        """A new empty session of this adapter; False (nothing written) if the id is taken."""
        now = writes.now_ms()
        seg = await conn.fetchval("INSERT INTO segments (owner) VALUES ($1) RETURNING seg", session_id)
        status = await conn.execute(
            "INSERT INTO sessions (id, seg, project, created_at, updated_at, metadata)"
            " VALUES ($1, $2, $3, $4, $4, $5) ON CONFLICT (id) DO NOTHING",
            session_id,
            seg,
            project,
            now,
            sealed(_blob({ADAPTER_KEY: self._adapter})),
        )
        if status.endswith(" 0"):
            await conn.execute("DELETE FROM segments WHERE seg = $1", seg)
            return False
        return True

    async def _new_session(self, conn: Any, conversation_id: str, project: str) -> str:
        """A session for a new history: named after the conversation when that id is free (or
        an empty session no adapter claimed), else a fresh id when this adapter has it already.
        :class:`~axio_context.errors.SessionOwnerError` when another adapter has it."""
        if await self._create(conn, conversation_id, project):
            return conversation_id
        row = await conn.fetchrow(_SESSION + " FOR UPDATE", conversation_id)
        metadata = _metadata(conversation_id, row)
        if metadata.get(ADAPTER_KEY) == self._adapter:
            new_id = uuid4().hex
            await self._create(conn, new_id, project)
            return new_id
        wanted = claim(conversation_id, metadata, self._adapter, has_messages=row["next_position"] > 0)
        if wanted is not None:
            await conn.execute(
                "UPDATE sessions SET metadata = $2, project = COALESCE(project, $3) WHERE sid = $1",
                row["sid"],
                sealed(_blob(wanted)),
                project,
            )
        return conversation_id

    async def _fork_at(self, conn: Any, parent: Any, position: int, new_id: str, project: str) -> None:
        """A session inheriting the first ``position`` messages of ``parent``'s transcript: one
        segment and one session row, nothing copied (compaction checkpoints are not inherited)."""
        seg = await conn.fetchval(
            "INSERT INTO segments (base_seg, base_len, owner) VALUES ($1, $2, $3) RETURNING seg",
            parent["seg"],
            position,
            new_id,
        )
        est = await lineage.tokens_upto(conn, parent["seg"], position)
        now = writes.now_ms()
        await conn.execute(
            "INSERT INTO sessions (id, seg, project, parent_id, fork_position, created_at, updated_at,"
            " next_position, est_tokens, preview, preview_pos, metadata)"
            " SELECT $1, $2, $3, id, $4, $5, $5, $4, $6,"
            " CASE WHEN preview_pos < $4 THEN preview END,"
            " CASE WHEN preview_pos < $4 THEN preview_pos END, $7"
            " FROM sessions WHERE sid = $8",
            new_id,
            seg,
            project,
            position,
            now,
            est,
            sealed(_blob({ADAPTER_KEY: self._adapter})),
            parent["sid"],
        )


async def _entry(conn: Any, entry_id: str) -> tuple[str, int] | None:
    r = await conn.fetchrow(_ENTRY, entry_id)
    return None if r is None else (str(r[0]), int(r[1]))


def _blob(metadata: dict[str, Any]) -> bytes:
    return encode_metadata(metadata).encode("utf-8", "surrogatepass")


def _metadata(session_id: str, row: Any) -> dict[str, Any]:
    blob = row["metadata"]
    if blob is None:
        return {}
    return decode_metadata(session_id, bytes(blob).decode("utf-8", "surrogatepass"))
