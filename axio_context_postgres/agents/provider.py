"""PostgresHistoryProvider: the history provider on the same database as the sessions.

Each ``(agent_id, session_id)`` is one ordinary session (see :mod:`.threads`), so
:class:`~axio_context_postgres.PostgresContextStore`, listing, search and export see agent
conversations, and :meth:`PostgresHistoryProvider.store` gives the same session as a store. Each
method is one transaction on a pooled connection: appends lock the session's row (many writers
keep positions dense), reads run in one repeatable-read snapshot and a page reads only its rows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from axio_context.agents.chat import ChatMessageLike
from axio_context.agents.history import check_ids, check_messages, check_page
from axio_context.codec import check_message
from axio_context.errors import DecodeError
from axio_context.messages import Message, preview_for
from axio_context.tokens import DefaultEstimator, TokenCounter

from .. import writes
from ..connection import Pool, connect, translated
from ..store import PostgresContextStore
from . import threads

__all__ = ["PostgresHistoryProvider"]


def _check_text(agent_id: str, session_id: str, run_id: str = "") -> None:
    """Refuse a NUL in an id up front, naming the field: PostgreSQL text cannot hold one."""
    for field, value in (("agent_id", agent_id), ("session_id", session_id), ("run_id", run_id)):
        if "\x00" in value:
            raise ValueError(f"{field} must not contain a NUL character (PostgreSQL text cannot hold it)")


class PostgresHistoryProvider:
    """A :class:`~axio_context.agents.HistoryProvider` in a PostgreSQL database.

    ``pool`` comes from :func:`~axio_context_postgres.connect` and stays the caller's, unless the
    provider was made by :meth:`open` (then :meth:`close` closes it). New sessions are filed
    under ``project`` (default: the resolved current directory, as PostgresContextStore).
    """

    def __init__(
        self,
        pool: Pool,
        *,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._pool = pool
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()
        self._owns = False
        self._runs: dict[tuple[str, str], int] = {}  # (run_id, thread) -> agent_runs.id, never deleted

    @classmethod
    async def open(cls, url: str, *, project: str | None = None) -> PostgresHistoryProvider:
        """A provider on its own pool to ``url`` (``postgresql://...``)."""
        provider = cls(await connect(url), project=project)
        provider._owns = True
        return provider

    @property
    def pool(self) -> Pool:
        return self._pool

    async def close(self) -> None:
        """Close the pool if this provider opened it (:meth:`open`); else nothing."""
        if self._owns:
            self._owns = False
            await self._pool.close()

    @asynccontextmanager
    async def _tx(self, where: str, *, readonly: bool = False) -> AsyncIterator[Any]:
        """One pooled connection in one transaction, the driver's errors made into ours."""
        async with translated(where), self._pool.acquire() as conn:
            if readonly:
                async with conn.transaction(isolation="repeatable_read", readonly=True):
                    yield conn
            else:
                async with conn.transaction():
                    yield conn

    async def session_key(self, agent_id: str, session_id: str) -> str:
        """The id of the session holding this agent's history in ``session_id`` (created if new)."""
        check_ids(agent_id, session_id)
        _check_text(agent_id, session_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}") as conn:
            found = await threads.ensure_thread(conn, agent_id, session_id, self._project)
        return str(found["id"])

    async def store(self, agent_id: str, session_id: str) -> PostgresContextStore:
        """The same conversation as a :class:`PostgresContextStore` on this provider's pool."""
        name = await self.session_key(agent_id, session_id)
        return PostgresContextStore(self._pool, name, self._project, token_counter=self._counter)

    async def append(
        self, agent_id: str, message: Message | ChatMessageLike, *, session_id: str, run_id: str = ""
    ) -> None:
        """Append one message, tagged with ``run_id``."""
        await self.append_many(agent_id, [message], session_id=session_id, run_id=run_id)

    async def append_many(
        self,
        agent_id: str,
        messages: Sequence[Message | ChatMessageLike],
        *,
        session_id: str,
        run_id: str = "",
    ) -> None:
        """Append messages in order, with their run tags, as one transaction: all or none."""
        check_ids(agent_id, session_id, run_id)
        _check_text(agent_id, session_id, run_id)
        batch = check_messages(messages)
        if not batch:
            return
        for index, m in enumerate(batch):
            try:  # what the read path could not give back is refused before anything is written
                check_message(m)
            except DecodeError as exc:
                raise DecodeError(f"message {index}: {exc}") from None
        now = writes.now_ms()
        rows = [writes.encode(m, self._counter.count(m), now) for m in batch]
        preview = preview_for(batch)
        where = f"agent {agent_id!r} in session {session_id!r}"
        run = self._runs.get((run_id, session_id)) if run_id else None
        if run is not None or not run_id:
            # The usual case, a known run (or none) and an existing thread: one round trip.
            async with translated(where), self._pool.acquire() as conn:
                if await threads.append_existing(conn, agent_id, session_id, rows, preview, run):
                    return
        async with self._tx(where) as conn:
            if run_id and run is None:
                run = await threads.claim_run(conn, run_id, session_id)
            await threads.append(conn, agent_id, session_id, self._project, rows, preview, run)
        if run is not None:  # committed: the claim is there for good
            self._runs[(run_id, session_id)] = run

    async def get_messages(
        self, agent_id: str, *, session_id: str, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        """Messages ``offset .. offset + limit`` in append order, cleared runs left out."""
        check_ids(agent_id, session_id)
        check_page(limit, offset)
        _check_text(agent_id, session_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}", readonly=True) as conn:
            return await threads.page(conn, agent_id, session_id, limit, offset)

    async def clear(self, agent_id: str, *, session_id: str) -> None:
        """Forget the agent's history in ``session_id`` (forks of it keep theirs)."""
        check_ids(agent_id, session_id)
        _check_text(agent_id, session_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}") as conn:
            await threads.clear_thread(conn, agent_id, session_id)

    async def clear_run(self, agent_id: str, *, session_id: str, run_id: str) -> None:
        """Hide the run's messages from every read of the provider; unknown agent, session or
        run: no-op. The rows stay (positions never change); a fork made before keeps seeing
        them, one made after inherits the marks."""
        check_ids(agent_id, session_id, run_id)
        _check_text(agent_id, session_id, run_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}") as conn:
            await threads.clear_run(conn, agent_id, session_id, run_id)

    async def count_messages(self, agent_id: str, *, session_id: str) -> int:
        """How many messages :meth:`get_messages` returns without a limit (no row is read)."""
        check_ids(agent_id, session_id)
        _check_text(agent_id, session_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}", readonly=True) as conn:
            return await threads.count(conn, agent_id, session_id)

    async def get_run_ids(self, agent_id: str, *, session_id: str) -> list[str]:
        """The run id of each message, in the order of :meth:`get_messages` (``""``: no run)."""
        check_ids(agent_id, session_id)
        _check_text(agent_id, session_id)
        async with self._tx(f"agent {agent_id!r} in session {session_id!r}", readonly=True) as conn:
            return await threads.run_ids(conn, agent_id, session_id)

    def __repr__(self) -> str:
        return f"PostgresHistoryProvider(project={self._project!r})"
