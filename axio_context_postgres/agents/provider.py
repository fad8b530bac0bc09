"""PostgresHistoryProvider: the history provider on the same database as the sessions (the
logic is :class:`~axio_context.agents.sql_provider.SQLHistoryProvider`'s; the statements and the
one-statement append are :mod:`.threads`).

Each ``(agent_id, session_id)`` is one ordinary session, so
:class:`~axio_context_postgres.PostgresContextStore`, listing, search and export see agent
conversations, and :meth:`PostgresHistoryProvider.store` gives the same session as a store. Each
method is one transaction on a pooled connection: appends lock the session's row (many writers
keep positions dense), reads run in one repeatable-read snapshot and a page reads only its rows.
"""

from __future__ import annotations

from typing import Final

from axio_context.agents import sql as plans
from axio_context.agents.sql_provider import SQLHistoryProvider
from axio_context.codec import check_message
from axio_context.errors import DecodeError
from axio_context.messages import Message, preview_for
from axio_context.tokens import TokenCounter

from .. import writes
from ..connection import Pool, connect, translated
from ..runner import POSTGRES, PostgresRunner, drive
from ..store import PostgresContextStore
from . import threads

__all__ = ["PostgresHistoryProvider"]

#: How errors name where they happened.
WHERE: Final = "PostgreSQL history provider"


class PostgresHistoryProvider(SQLHistoryProvider):
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
        runner = PostgresRunner(pool, WHERE)
        super().__init__(runner, threads.STATEMENTS, project=project, token_counter=token_counter)
        self._pool = pool
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

    def _check(self, agent_id: str, session_id: str, run_id: str = "") -> None:
        """As every provider; and a NUL in an id is refused up front, naming the field:
        PostgreSQL text cannot hold one."""
        super()._check(agent_id, session_id, run_id)
        for field, value in (("agent_id", agent_id), ("session_id", session_id), ("run_id", run_id)):
            if "\x00" in value:
                raise ValueError(f"{field} must not contain a NUL character (PostgreSQL text cannot hold it)")

    async def store(self, agent_id: str, session_id: str) -> PostgresContextStore:
        """The same conversation as a :class:`PostgresContextStore` on this provider's pool."""
        name = await self.session_key(agent_id, session_id)
        return PostgresContextStore(self._pool, name, self._project, token_counter=self._counter)

    async def _append(self, agent_id: str, session_id: str, batch: list[Message], run_id: str) -> None:
        for index, m in enumerate(batch):
            try:  # what the read path could not give back is refused before anything is written
                check_message(m)
            except DecodeError as exc:
                raise DecodeError(f"message {index}: {exc}") from None
        now = writes.now_ms()
        rows = [writes.encode(m, self._counter.count(m), now) for m in batch]
        preview = preview_for(batch)
        run = self._runs.get((run_id, session_id)) if run_id else None
        if run is not None or not run_id:
            # The usual case, a known run (or none) and an existing thread: one round trip.
            async with translated(WHERE), self._pool.acquire() as conn:
                if await threads.append_existing(conn, agent_id, session_id, rows, preview, run):
                    return
        async with translated(WHERE), self._pool.acquire() as conn, conn.transaction():
            if run_id and run is None:
                run = await drive(conn, plans.claim_run(POSTGRES, run_id, session_id))
            await threads.append(conn, agent_id, session_id, self._project, rows, preview, run)
        if run is not None:  # committed: the claim is there for good
            self._runs[(run_id, session_id)] = run
