"""PostgresContextStore: one session of a PostgreSQL database, as an axio ContextStore.

The caller owns the pool (from :func:`~axio_context_postgres.connect`). Every method takes one
connection from the pool for one transaction (:mod:`.writes` holds the SQL of the writes), so
any number of stores, tasks and processes share one database: writers to a session queue on its
row lock, reads run in a repeatable-read snapshot.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Self, cast
from uuid import uuid4

from axio_context.catalog import StoreCalls
from axio_context.catalog.expiry_sql import (
    expired,
    live_session,
    purge_if_expired,
    refresh_session,
    session_ttl,
)
from axio_context.catalog.expiry_sql import touch as touch_session
from axio_context.checkpoints import Checkpoint
from axio_context.codec import check_message
from axio_context.compaction.guarded import starts_with
from axio_context.context import ContextStore, check_limit, tail_of_view
from axio_context.errors import CheckpointError, DecodeError, SessionNotFoundError
from axio_context.expiry import DEFAULT, TTLConfig, now_ms, resolve_ttl
from axio_context.messages import Message, SessionInfo
from axio_context.tokens import DefaultEstimator, TokenCounter, estimate_tokens
from axio_context.transcript import format_time
from axio_context.usage import token_count, token_totals_after_add
from axio_context.views import SessionPage

from . import lineage, writes
from .connection import Pool, translated
from .info import INFO_COLUMNS, info_of
from .runner import POSTGRES, PostgresRunner, drive
from .sealed import sealed

__all__ = ["PostgresContextStore", "SessionPage"]


def _hider(row: Any) -> int | None:
    """The sid whose ``clear_run`` marks a read of this session leaves out; None: it has none."""
    return int(row["sid"]) if row["hides"] else None


class PostgresContextStore(StoreCalls, ContextStore):
    """A session stored in PostgreSQL; implements the ContextStore and CheckpointStore contracts.

    ``project`` defaults to the resolved current directory, as in axio and the SQLite store.
    ``ttl`` (seconds, or a :class:`~axio_context.expiry.TTLConfig`) makes the session expire that
    long after its last write (or read, with ``refresh_on_read``), as openai-agents'
    ``RedisSession(ttl=...)`` does; an expired session reads as absent and a write starts it afresh.
    """

    def __init__(
        self,
        pool: Pool,
        session_id: str,
        project: str | None = None,
        *,
        token_counter: TokenCounter | None = None,
        ttl: float | TTLConfig | None = None,
    ) -> None:
        self._identify(session_id, project)
        self._ttl = session_ttl(ttl)
        self._ttl_ms = resolve_ttl(DEFAULT, self._ttl)
        self._pool = pool
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    def _catalog_runner(self) -> PostgresRunner:
        return PostgresRunner(self._pool, "the session store")

    @property
    def pool(self) -> Pool:
        """The pool this store uses (owned by the caller)."""
        return self._pool

    @property
    def ttl(self) -> TTLConfig:
        """This store's expiry of its session (never, unless ``ttl=`` was given)."""
        return self._ttl

    async def _live(self, conn: Any, now: int) -> None:
        """Delete this session first if it has expired (its forks keep their rows): a read then
        finds nothing and a write starts it afresh (see :mod:`axio_context.catalog.expiry_sql`)."""
        if await drive(conn, expired(POSTGRES, self._session_id, now)):
            async with conn.transaction():
                await drive(conn, purge_if_expired(POSTGRES, self._session_id, writes.delete_session, now))

    @asynccontextmanager
    async def _tx(self, *, readonly: bool = False, touch: bool | None = None) -> AsyncIterator[Any]:
        """One pooled connection in one transaction, the driver's errors made into ours, on the
        session as if an expired one were absent; a write (``touch``, by default when not
        ``readonly``) restarts the store's TTL, a read its own when the store refreshes."""
        where = f"session {self._session_id!r}"
        now = now_ms()
        write = not readonly if touch is None else touch
        write = write and self._ttl_ms is not None
        refresh = readonly and self._ttl.refresh_on_read
        async with translated(where), self._pool.acquire() as conn:
            await self._live(conn, now)
            if readonly and not refresh:
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield conn
            else:
                async with conn.transaction():
                    yield conn
                    if write:
                        await drive(conn, touch_session(POSTGRES, self._session_id, self._ttl_ms, now))
                    elif refresh:
                        await drive(conn, refresh_session(POSTGRES, self._session_id, now))

    # -- writing ---------------------------------------------------------------------------------

    async def append(self, message: Message) -> None:
        """Append one message: one statement (one round trip) once the session exists."""
        await self.append_many((message,))

    async def append_many(self, messages: Iterable[Message]) -> None:
        """Append messages in order as one transaction: all of them are stored, or none."""
        batch = list(messages)
        if not batch:
            return
        now = writes.now_ms()
        for index, m in enumerate(batch):
            try:  # what the read path could not give back is refused before anything is written
                check_message(m)
            except DecodeError as exc:
                raise DecodeError(f"message {index}: {exc}") from None
        rows = [writes.encode(m, self._counter.count(m), now) for m in batch]
        from axio_context.messages import preview_for

        preview = preview_for(batch)
        if self._ttl_ms is not None:  # the append and the TTL starting again, in one transaction
            async with self._tx() as conn:
                if not await writes.append_existing(conn, self._session_id, rows, preview):
                    await writes.append_rows(conn, self._session_id, self._project, rows, preview)
            return
        async with translated(f"session {self._session_id!r}"), self._pool.acquire() as conn:
            # The usual case, an existing live session: one statement, one round trip.
            if await writes.append_existing(conn, self._session_id, rows, preview):
                return
            await self._live(conn, now)  # new, or expired: purged first, then started afresh
            async with conn.transaction():
                await writes.append_rows(conn, self._session_id, self._project, rows, preview)

    async def clear(self) -> None:
        """Delete this session's messages, checkpoints and token totals; forks keep theirs."""
        async with self._tx() as conn:
            await writes.clear(conn, self._session_id)

    async def pop(self) -> Message | None:
        """Remove and return the last message (a chat app's "retry"); ``None`` when empty."""
        async with self._tx() as conn:
            return await writes.pop(conn, self._session_id)

    async def fork(self) -> PostgresContextStore:
        """A new session sharing this transcript, copy-on-write: O(1) in the history length."""
        new_id = uuid4().hex
        async with self._tx(touch=False) as conn:
            await writes.fork(conn, self._session_id, self._project, new_id)
            if self._ttl_ms is not None:  # the fork expires as its store's sessions do
                await drive(conn, touch_session(POSTGRES, new_id, self._ttl_ms, now_ms()))
        return PostgresContextStore(
            self._pool, new_id, self._project, token_counter=self._counter, ttl=self._ttl
        )

    async def delete_session(self, session_id: str | None = None) -> bool:
        """Delete a session (this one by default); False if it did not exist."""
        if session_id not in (None, self._session_id):
            return await PostgresContextStore(self._pool, session_id, self._project).delete_session()
        async with self._tx(touch=False) as conn:
            return await writes.delete_session(conn, self._session_id)

    # -- reading ---------------------------------------------------------------------------------

    async def _row(self, conn: Any) -> Any:
        return await conn.fetchrow(
            f"SELECT sid, seg, next_position, est_tokens, {lineage.HIDES} FROM sessions WHERE id = $1",
            self._session_id,
        )

    async def _view(self, conn: Any, limit: int | None = None) -> list[Message]:
        row = await self._row(conn)
        if row is None:
            return []
        cp = await conn.fetchrow(
            "SELECT position, summary FROM checkpoints WHERE sid = $1 ORDER BY seq DESC LIMIT 1", row["sid"]
        )
        start = 0 if cp is None else cp["position"]
        if limit is not None:
            start = max(start, row["next_position"] - limit)
        rows = await lineage.read_rows(conn, row["seg"], row["next_position"], start, hidden_by=_hider(row))
        tail = lineage.decode(self._session_id, rows)
        if cp is None:
            return tail
        summary = lineage.decode_summary(self._session_id, cp["summary"])
        return [*summary, *tail] if limit is None else tail_of_view(summary, tail, limit)

    async def get_history(self, limit: int | None = None) -> list[Message]:
        """The model's view: the latest checkpoint's summary, then the messages after it; with
        ``limit``, its last ``limit`` messages, reading only their rows."""
        n = None if limit is None else check_limit(limit)
        if n == 0:
            return []
        if not self._ttl.refresh_on_read:  # the usual case: one statement, no transaction
            async with translated(f"session {self._session_id!r}"), self._pool.acquire() as conn:
                view = await lineage.read_view(conn, self._session_id, n, now_ms())
            if view is not None:
                return view
        async with self._tx(readonly=True) as conn:
            return await self._view(conn, n)

    async def get_tail(self, limit: int) -> list[Message]:
        return await self.get_history(limit=check_limit(limit))

    async def get_full_history(self) -> list[Message]:
        """Every message of the transcript, whatever compaction did to the view."""
        async with self._tx(readonly=True) as conn:
            row = await self._row(conn)
            if row is None:
                return []
            rows = await lineage.read_rows(conn, row["seg"], row["next_position"], hidden_by=_hider(row))
            return lineage.decode(self._session_id, rows)

    # -- tokens ----------------------------------------------------------------------------------

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Set the token totals (non-negative ints) in one statement."""
        i, o = token_count("input_tokens", input_tokens), token_count("output_tokens", output_tokens)
        await self._tokens("input_tokens = $2, output_tokens = $3", i, o)

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the totals in one transaction; the session row is locked, so adds from other
        processes wait rather than race."""
        async with self._tx() as conn:
            now = writes.now_ms()
            await writes.ensure_session(conn, self._session_id, self._project, now)
            row = await conn.fetchrow(
                "SELECT input_tokens, output_tokens FROM sessions WHERE id = $1 FOR UPDATE", self._session_id
            )
            assert row is not None
            # the rules every store applies: a total leaving 0..2**63-1 is refused, nothing changes
            i, o = token_totals_after_add((int(row[0]), int(row[1])), input_tokens, output_tokens)
            await conn.execute(
                "UPDATE sessions SET input_tokens = $2, output_tokens = $3, updated_at = $4 WHERE id = $1",
                self._session_id,
                i,
                o,
                now,
            )

    async def _tokens(self, assignment: str, i: int, o: int) -> None:
        sql = f"UPDATE sessions SET {assignment}, updated_at = $4 WHERE id = $1"
        async with self._tx() as conn:
            now = writes.now_ms()
            if (await conn.execute(sql, self._session_id, i, o, now)).endswith(" 0"):
                await writes.ensure_session(conn, self._session_id, self._project, now)
                await conn.execute(sql, self._session_id, i, o, now)

    async def get_context_tokens(self) -> tuple[int, int]:
        async with self._tx(readonly=True) as conn:
            row = await conn.fetchrow(
                "SELECT input_tokens, output_tokens FROM sessions WHERE id = $1", self._session_id
            )
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    # -- checkpoints -----------------------------------------------------------------------------

    async def add_checkpoint(
        self, checkpoint: Checkpoint, *, if_view_starts_with: Sequence[Message] | None = None
    ) -> Checkpoint:
        """Record a compaction checkpoint in one transaction; nothing is deleted.

        With ``if_view_starts_with``, the same transaction (holding the session's row lock) first
        checks that the view still starts with those messages (CheckpointError if not).
        """
        summary = checkpoint.summary if isinstance(checkpoint, Checkpoint) else []
        summary_tokens = (
            estimate_tokens(summary, self._counter) if all(isinstance(m, Message) for m in summary) else 0
        )
        async with self._tx() as conn:
            if if_view_starts_with is not None:
                await writes.locked(conn, self._session_id)
                if not starts_with(await self._view(conn), list(if_view_starts_with)):
                    raise CheckpointError(
                        f"the view of session {self._session_id!r} changed since the compaction read it; "
                        "checkpoint not written"
                    )
            return await writes.add_checkpoint(
                conn, self._session_id, self._project, checkpoint, summary_tokens
            )

    async def list_checkpoints(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first (a fork's include those it inherited)."""
        async with self._tx(readonly=True) as conn:
            rows = await conn.fetch(
                "SELECT c.seq, c.position, c.summary, c.tokens_before, c.tokens_after, c.summarizer,"
                " c.created_at FROM checkpoints c JOIN sessions s ON s.sid = c.sid"
                " WHERE s.id = $1 ORDER BY c.seq",
                self._session_id,
            )
        return [
            Checkpoint(
                position=r[1],
                summary=lineage.decode_summary(self._session_id, r[2]),
                tokens_before=r[3],
                tokens_after=r[4],
                summarizer=r[5],
                created_at=format_time(r[6]),
                id=r[0],
            )
            for r in rows
        ]

    async def estimated_view_tokens(self) -> int:
        """Estimated tokens of ``get_history()`` from cached counts, without reading messages."""
        async with self._tx(readonly=True) as conn:
            row = await conn.fetchrow(
                "SELECT s.est_tokens, c.summary_tokens, c.tokens_at FROM sessions s LEFT JOIN LATERAL"
                " (SELECT summary_tokens, tokens_at FROM checkpoints WHERE sid = s.sid"
                " ORDER BY seq DESC LIMIT 1) c"
                " ON true WHERE s.id = $1",
                self._session_id,
            )
        if row is None:
            return 0
        if row[1] is None:
            return int(row[0])
        return int(row[1]) + int(row[0]) - int(row[2])

    # -- sessions --------------------------------------------------------------------------------

    async def info(self) -> SessionInfo:
        """This session's listing entry (raises SessionNotFoundError before its first write)."""
        async with self._tx(readonly=True) as conn:
            r = await conn.fetchrow(f"SELECT {INFO_COLUMNS} FROM sessions WHERE id = $1", self._session_id)
        if r is None:
            raise SessionNotFoundError(f"no session {self._session_id!r}")
        return info_of(r)

    async def list_forks(self) -> list[SessionInfo]:
        """Sessions forked directly from this one, oldest first."""
        async with self._tx(readonly=True) as conn:
            rows = await conn.fetch(
                f"SELECT {INFO_COLUMNS} FROM sessions WHERE parent_id = $1 AND {live_session(param='$2')}"
                " ORDER BY sid",
                self._session_id,
                now_ms(),
            )
        return [info_of(r) for r in rows]

    async def get_title(self) -> str | None:
        """The session's title, if one was set."""
        async with self._tx(readonly=True) as conn:
            return cast(
                str | None, await conn.fetchval("SELECT title FROM sessions WHERE id = $1", self._session_id)
            )

    async def set_title(self, title: str | None) -> None:
        """Set (or with None, remove) the session's title."""
        async with self._tx() as conn:
            await writes.ensure_session(conn, self._session_id, self._project, writes.now_ms())
            await conn.execute("UPDATE sessions SET title = $2 WHERE id = $1", self._session_id, title)

    async def get_metadata(self) -> dict[str, Any]:
        """The session's free-form metadata (an empty dict when none)."""
        from axio_context.session_metadata import decode_metadata

        async with self._tx(readonly=True) as conn:
            blob = await conn.fetchval("SELECT metadata FROM sessions WHERE id = $1", self._session_id)
        return (
            {}
            if blob is None
            else decode_metadata(self._session_id, bytes(blob).decode("utf-8", "surrogatepass"))
        )

    async def set_metadata(self, metadata: dict[str, Any]) -> None:
        """Replace the session's metadata with a JSON-serialisable mapping."""
        from axio_context.session_metadata import encode_metadata

        blob = encode_metadata(metadata).encode("utf-8", "surrogatepass")
        async with self._tx() as conn:
            await writes.ensure_session(conn, self._session_id, self._project, writes.now_ms())
            await conn.execute(
                "UPDATE sessions SET metadata = $2 WHERE id = $1", self._session_id, sealed(blob)
            )

    async def close(self) -> None:
        """No-op: the caller owns the pool, as with the SQLite store's connection."""

    # -- constructors ----------------------------------------------------------------------------

    @classmethod
    async def from_history(
        cls, history: list[Message], *, pool: Pool | None = None, project: str | None = None
    ) -> Self:
        """A new session holding ``history``; PostgreSQL needs the pool to put it in."""
        if pool is None:
            raise TypeError("PostgresContextStore.from_history needs pool=<an open pool>")
        store = cls(pool, uuid4().hex, project)
        await store.append_many(history)
        return store

    @classmethod
    async def from_context(
        cls, context: ContextStore, *, pool: Pool | None = None, project: str | None = None
    ) -> Self:
        """A new session holding a copy of another store's history."""
        return await cls.from_history(await context.get_history(), pool=pool, project=project)
