"""SQLiteContextStore: one session of an SQLite database, as an axio ContextStore.

The caller owns the connection (from :func:`~axio_context_sqlite.connect`). Every method is one
call on the connection's worker thread and, where it writes, one transaction: ``append`` and
``append_many`` cost the same for a 10- and a 100,000-message session, ``fork`` inserts one row,
and token updates are single statements. Appends of a few messages (``INLINE_MESSAGES``,
``INLINE_BYTES``) and the token calls run on the event loop's thread instead when the worker is
idle (see :func:`.calls.run_inline`): the hop there and back costs as much as the statement.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final, Self
from uuid import uuid4

import aiosqlite

from axio_context.catalog import StoreCalls
from axio_context.catalog.expiry_sql import session_ttl
from axio_context.checkpoints import Checkpoint
from axio_context.compaction.guarded import starts_with
from axio_context.context import ContextStore, check_limit
from axio_context.embeddings import Embedder, check_embedder
from axio_context.errors import CheckpointError, EmbeddingMismatchError
from axio_context.expiry import DEFAULT, TTLConfig, resolve_ttl
from axio_context.messages import Message, SessionInfo
from axio_context.tokens import DefaultEstimator, TokenCounter, estimate_tokens
from axio_context.usage import MAX_TOKENS, token_count

from . import appending, checkpoints, listing, metadata_reads, reading, sessions
from .calls import NOT_RUN, run, run_inline, run_short
from .embedding import embed_batch
from .expiring import live_call, set_ttl
from .message_rows import EncodedMessage, encode_message
from .runner import SQLiteRunner
from .transactions import write_tx

__all__ = ["SQLiteContextStore"]

logger = logging.getLogger("axio_context_sqlite")

#: The most messages, and bytes (payloads plus media), an append runs inline on the event loop's
#: thread (see :func:`.calls.run_inline`): a turn's messages (an openai-agents turn of 20 items
#: holds the loop ~0.35 ms, less than the hop it saves and its wait) or a screenshot, never an
#: import, whose transaction would hold the loop for milliseconds.
INLINE_MESSAGES: Final = 32
INLINE_BYTES: Final = 256 * 1024


def _token_pair(input_tokens: int, output_tokens: int, *, totals: bool) -> tuple[int, int]:
    """The two counts as ints: any integer type (numpy's too) or a whole float (usage figures
    parsed from JSON as 10.0); anything else is refused, since SQLite would store it as it is
    and readers would see different values. ``totals`` (set) also refuses negative ones."""
    low = 0 if totals else -MAX_TOKENS
    plain = type(input_tokens) is int and type(output_tokens) is int  # the usual call
    if plain and low <= input_tokens <= MAX_TOKENS and low <= output_tokens <= MAX_TOKENS:
        return input_tokens, output_tokens
    return token_count("input_tokens", input_tokens, low=low), token_count(
        "output_tokens", output_tokens, low=low
    )


def _add_checkpoint_if_view(
    c: Any, session_id: str, project: str | None, cp: Checkpoint, summary_tokens: int, prefix: list[Message]
) -> Checkpoint:
    """:func:`.checkpoints.add_checkpoint`, refused unless the view still starts with ``prefix``
    (one transaction)."""
    with write_tx(c):
        if not starts_with(reading.get_view(c, session_id), prefix):
            raise CheckpointError(
                f"the view of session {session_id!r} changed since the compaction read it; "
                "checkpoint not written"
            )
        return checkpoints.add_checkpoint(c, session_id, project, cp, summary_tokens)


def _stored_bytes(encoded: Sequence[EncodedMessage]) -> int:
    return sum(len(e.payload) + sum(len(data) for _, data in e.blobs) for e in encoded)


class SQLiteContextStore(StoreCalls, ContextStore):
    """A session stored in SQLite; implements the ContextStore and CheckpointStore contracts.

    ``project`` defaults to the resolved current directory, as in axio. ``token_counter``
    estimates each message's tokens once, at append, for budget checks. With an ``embedder``,
    every append also stores the messages' embeddings (one batch per ``append_many``) in the
    same transaction; without one, ``Database.reindex`` fills them in later. ``db_name`` is
    axio-context-sqlite 0.12's fourth parameter, accepted so its calls port unchanged; it has no
    effect there either (that version stores it and never reads it). ``ttl`` (seconds, or a
    :class:`~axio_context.expiry.TTLConfig`) makes the session expire that long after its last
    write (or read, with ``refresh_on_read``), as openai-agents' ``RedisSession(ttl=...)`` does;
    an expired session reads as absent and a write starts it afresh.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        session_id: str,
        project: str | None = None,
        db_name: str = "axio_context",
        *,
        token_counter: TokenCounter | None = None,
        embedder: Embedder | None = None,
        ttl: float | TTLConfig | None = None,
    ) -> None:
        self._identify(session_id, project)
        self._ttl = session_ttl(ttl)
        self._ttl_ms = resolve_ttl(DEFAULT, self._ttl)
        self._conn = conn
        self._counter: TokenCounter = token_counter or DefaultEstimator()
        if embedder is not None:
            check_embedder(embedder)  # a dimension of 0 would store every message unembedded, silently
        self._embedder = embedder

    def _catalog_runner(self) -> SQLiteRunner:
        return SQLiteRunner(self._conn)

    @property
    def connection(self) -> aiosqlite.Connection:
        """The connection this store uses (owned by the caller)."""
        return self._conn

    def _child(self, session_id: str) -> SQLiteContextStore:
        return SQLiteContextStore(
            self._conn,
            session_id,
            self._project,
            token_counter=self._counter,
            embedder=self._embedder,
            ttl=self._ttl,
        )

    @property
    def ttl(self) -> TTLConfig:
        """This store's expiry of its session (never, unless ``ttl=`` was given)."""
        return self._ttl

    def _write(self, fn: Any) -> tuple[Any, ...]:
        # live_call's leading arguments for a write: the TTL starts again
        return (fn, self._ttl_ms, False, self._session_id)

    def _read(self, fn: Any) -> tuple[Any, ...]:
        # ... and for a read: the session's own TTL starts again only if the store refreshes
        return (fn, None, self._ttl.refresh_on_read, self._session_id)

    # -- writing ---------------------------------------------------------------------------------

    async def append(self, message: Message) -> None:
        """Append one message: one statement (one transaction with media), on the event loop's
        thread when the worker is idle."""
        await self.append_many((message,))

    async def append_many(self, messages: Iterable[Message]) -> None:
        """Append messages in order as one transaction: all of them are stored, or none.

        With an embedder, their embeddings go in the same transaction. An embedder that fails
        (a model service down) costs the batch its embeddings only: logged, ``reindex`` adds them
        later. One that does not fit the database (:class:`EmbeddingMismatchError`: another
        model or dimension, a wrong number of vectors) raises, and nothing is stored.
        """
        batch = list(messages)
        if not batch:
            return
        embed = self._embedder is not None
        encoded = [encode_message(m, text=embed, index=i) for i, m in enumerate(batch)]
        tokens = [self._counter.count(m) for m in batch]
        batch_args = (
            *self._write(appending.append),
            self._project,
            encoded,
            tokens,
            appending.preview_for(batch),
        )
        if not embed and len(batch) <= INLINE_MESSAGES and _stored_bytes(encoded) <= INLINE_BYTES:
            # No TTL to set: the append itself refuses an expired session (then the worker path
            # below deletes it first), so the usual append stays one statement.
            inline = batch_args[3:] if self._ttl_ms is None else None  # (session_id, ...)
            if inline is not None:
                long_queue = run_inline(self._conn, appending.append, *inline, inline=True)
            else:
                long_queue = run_inline(self._conn, live_call, *batch_args, inline=True)
            if long_queue is not NOT_RUN:
                # Every 64th append (and every batch that left the queue long) folds it.
                fold = appending.fold_due() or long_queue is True
                if fold:
                    await run(self._conn, appending.fold_if_long)
                return
        embeddings = None
        if self._embedder is not None:
            try:
                embeddings = await embed_batch(
                    self._embedder, [(e.body, e.tool) for e in encoded], self._vec_codes()
                )
            except EmbeddingMismatchError:
                raise  # it does not fit this store: every batch would fail the same way
            except Exception as exc:  # a failed embedder costs the embeddings, never the messages
                logger.warning(
                    "session %r: embedder %r failed (%s: %s); %d message(s) stored without "
                    "embeddings, `reindex` adds them",
                    self._session_id,
                    getattr(self._embedder, "model", "?"),
                    type(exc).__name__,
                    exc,
                    len(batch),
                )
        await run(self._conn, live_call, *batch_args, embeddings)

    def _vec_codes(self) -> bool:
        return bool(getattr(self._conn, "vec_loaded", False))

    async def clear(self) -> None:
        """Delete this session's messages, checkpoints and token totals; forks keep theirs."""
        await run(self._conn, live_call, *self._write(sessions.clear))

    async def pop(self) -> Message | None:
        """Remove and return the last message (a chat app's "retry"); ``None`` when empty. On the
        event loop's thread when the worker is idle, as a short append (the usual pop is a few
        statements, see :func:`.sessions.pop`)."""
        return await run_short(self._conn, live_call, *self._write(sessions.pop))

    async def fork(self) -> SQLiteContextStore:
        """A new session sharing this transcript, copy-on-write: O(1) in the history length."""
        new_id = uuid4().hex
        await run(self._conn, live_call, *self._read(sessions.fork), self._project, new_id)
        child = self._child(new_id)
        if self._ttl_ms is not None:  # the fork expires as its store's sessions do
            await run(self._conn, set_ttl, new_id, self._ttl_ms)
        return child

    async def delete_session(self, session_id: str | None = None) -> bool:
        """Delete a session (this one by default) and all only it uses; False if it did not exist."""
        return await run(
            self._conn, live_call, sessions.delete_session, None, False, session_id or self._session_id
        )

    # -- reading ---------------------------------------------------------------------------------

    async def get_history(self, limit: int | None = None) -> list[Message]:
        """The model's view: the latest checkpoint's summary, then the messages after it; with
        ``limit``, its last ``limit`` messages, reading only their rows."""
        n = None if limit is None else check_limit(limit)
        return await run(self._conn, live_call, *self._read(reading.get_view), n)

    async def get_tail(self, limit: int) -> list[Message]:
        return await self.get_history(limit=check_limit(limit))

    async def get_view_metadata(self, name: str, limit: int | None = None) -> list[Any]:
        """Per message of :meth:`get_history` (``limit`` alike), its metadata value ``name``,
        read without decoding the messages; a message with none comes back whole."""
        n = None if limit is None else check_limit(limit)
        args = (*self._read(metadata_reads.get_view_metadata), name, n)
        if n is not None and n <= INLINE_MESSAGES:  # a few rows: no hop when the worker is idle
            return await run_short(self._conn, live_call, *args)
        return await run(self._conn, live_call, *args)

    async def get_full_history(self) -> list[Message]:
        """Every message of the transcript, whatever compaction did to the view."""
        return await run(self._conn, live_call, *self._read(reading.get_full))

    # -- tokens ----------------------------------------------------------------------------------

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Set the token totals (non-negative ints) in one statement."""
        pair = _token_pair(input_tokens, output_tokens, totals=True)
        await run_short(self._conn, live_call, *self._write(sessions.set_tokens), self._project, *pair)

    async def get_context_tokens(self) -> tuple[int, int]:
        return await run_short(self._conn, live_call, *self._read(sessions.get_tokens))

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add ints to the totals in one statement (no read-modify-write race across processes)."""
        pair = _token_pair(input_tokens, output_tokens, totals=False)
        await run_short(self._conn, live_call, *self._write(sessions.add_tokens), self._project, *pair)

    # -- checkpoints -----------------------------------------------------------------------------

    async def add_checkpoint(
        self, checkpoint: Checkpoint, *, if_view_starts_with: Sequence[Message] | None = None
    ) -> Checkpoint:
        """Record a compaction checkpoint in one transaction; nothing is deleted.

        With ``if_view_starts_with``, the same transaction first checks that the view still
        starts with those messages (:class:`CheckpointError` if not), so a compaction whose
        history was cleared or popped and rewritten meanwhile cannot hide the wrong messages.
        """
        summary_tokens = estimate_tokens(checkpoint.summary, self._counter)
        args = (self._project, checkpoint, summary_tokens)
        if if_view_starts_with is None:
            return await run(self._conn, live_call, *self._write(checkpoints.add_checkpoint), *args)
        prefix = list(if_view_starts_with)
        return await run(self._conn, live_call, *self._write(_add_checkpoint_if_view), *args, prefix)

    async def list_checkpoints(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first (a fork's include those it inherited)."""
        return await run(self._conn, live_call, *self._read(checkpoints.list_checkpoints))

    async def estimated_view_tokens(self) -> int:
        """Estimated tokens of ``get_history()`` from cached counts, without reading messages."""
        return await run(self._conn, live_call, *self._read(reading.view_tokens))

    # -- sessions --------------------------------------------------------------------------------

    async def info(self) -> SessionInfo:
        """This session's listing entry (raises SessionNotFoundError before its first write)."""
        return await run(self._conn, live_call, *self._read(listing.session_info))

    async def list_forks(self) -> list[SessionInfo]:
        """Sessions forked directly from this one, oldest first."""
        return await run(self._conn, live_call, *self._read(listing.list_forks))

    async def get_title(self) -> str | None:
        """The session's title, if one was set."""
        infos = await run(self._conn, live_call, *self._read(listing.session_info_or_none))
        return None if infos is None else infos.title

    async def set_title(self, title: str | None) -> None:
        """Set (or with None, remove) the session's title."""
        await run(self._conn, live_call, *self._write(sessions.set_title), self._project, title)

    async def get_metadata(self) -> dict[str, Any]:
        """The session's free-form metadata (an empty dict when none); one indexed read, on the
        event loop's thread when the worker is idle."""
        return await run_short(self._conn, live_call, *self._read(sessions.get_metadata))

    async def set_metadata(self, metadata: dict[str, Any]) -> None:
        """Replace the session's metadata with a JSON-serialisable mapping."""
        await run(self._conn, live_call, *self._write(sessions.set_metadata), self._project, metadata)

    async def close(self) -> None:
        """No-op: the caller owns the connection, as in axio."""

    # -- constructors ----------------------------------------------------------------------------

    @classmethod
    async def from_history(
        cls, history: list[Message], *, conn: aiosqlite.Connection | None = None, project: str | None = None
    ) -> Self:
        """A new session holding ``history``; SQLite needs the connection to put it in."""
        if conn is None:
            raise TypeError("SQLiteContextStore.from_history needs conn=<an open connection>")
        store = cls(conn, uuid4().hex, project)
        await store.append_many(history)
        return store

    @classmethod
    async def from_context(
        cls, context: ContextStore, *, conn: aiosqlite.Connection | None = None, project: str | None = None
    ) -> Self:
        """A new session holding a copy of another store's history."""
        return await cls.from_history(await context.get_history(), conn=conn, project=project)
