"""SQLiteHistoryProvider: the history provider on the same database as the sessions (the
logic is :class:`~axio_context.agents.sql_provider.SQLHistoryProvider`'s; the statements and the
one-statement append are :mod:`.threads`).

Each ``(agent_id, session_id)`` is one ordinary session, so ``list-sessions``, ``show``,
``search`` and ``export`` see agent conversations, and :meth:`SQLiteHistoryProvider.store`
gives the same session as a :class:`SQLiteContextStore` (checkpoints, forks,
:class:`~axio_context.compaction.AutoCompactStore`). A page of :meth:`get_messages` reads only
its own rows; ``clear_run`` hides a run's positions (see :mod:`axio_context_sqlite.store.hiding`).
"""

from __future__ import annotations

from pathlib import Path

import aiosqlite

from axio_context.agents import sql as plans
from axio_context.agents.sql_provider import SQLHistoryProvider
from axio_context.messages import Message
from axio_context.tokens import TokenCounter

from ..store import appending
from ..store.calls import NOT_RUN, run, run_inline
from ..store.connection import connect
from ..store.context_store import INLINE_BYTES, INLINE_MESSAGES, SQLiteContextStore
from ..store.message_rows import encode_message
from ..store.runner import SQLiteRunner
from . import threads

__all__ = ["SQLiteHistoryProvider"]


class SQLiteHistoryProvider(SQLHistoryProvider):
    """A :class:`~axio_context.agents.HistoryProvider` in an SQLite database.

    ``conn`` comes from :func:`~axio_context_sqlite.connect` and stays the caller's, unless
    the provider was made by :meth:`open` (then :meth:`close` closes it). New sessions are
    filed under ``project`` (default: the resolved current directory, as SQLiteContextStore).
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(SQLiteRunner(conn), threads.STATEMENTS, project=project, token_counter=token_counter)
        self._conn = conn
        self._owns = False
        self._known: set[tuple[str, str]] = set()  # (agent, thread) pairs whose session was made
        self._runs: dict[tuple[str, str], int] = {}  # (run_id, thread) -> agent_runs.id
        self._installed = False

    @classmethod
    async def open(
        cls, path: str | Path | None = None, *, project: str | None = None
    ) -> SQLiteHistoryProvider:
        """A provider on its own connection to ``path`` (default: the default database file)."""
        provider = cls(await connect(path), project=project)
        provider._owns = True
        return provider

    @property
    def connection(self) -> aiosqlite.Connection:
        return self._conn

    async def close(self) -> None:
        """Close the connection if this provider opened it (:meth:`open`); else nothing."""
        if self._owns:
            self._owns = False
            await self._conn.close()

    async def _run(self, run_id: str, session_id: str) -> int:
        found = self._runs.get((run_id, session_id))
        if found is None:
            found = await self._runner.write(plans.claim_run, run_id, session_id)
            self._runs[(run_id, session_id)] = found
        return found

    async def store(self, agent_id: str, session_id: str) -> SQLiteContextStore:
        """The same conversation as a :class:`SQLiteContextStore` on this provider's connection."""
        name = await self.session_key(agent_id, session_id)
        return SQLiteContextStore(self._conn, name, self._project, token_counter=self._counter)

    async def _append(self, agent_id: str, session_id: str, batch: list[Message], run_id: str) -> None:
        encoded = [encode_message(m, index=i) for i, m in enumerate(batch)]
        tokens = [self._counter.count(m) for m in batch]
        run_key = await self._run(run_id, session_id) if run_id else None
        if not self._installed:
            await run(self._conn, threads.install_agent_append)
            self._installed = True
        if (agent_id, session_id) not in self._known:  # made once here; the append re-checks
            await self.session_key(agent_id, session_id)
            self._known.add((agent_id, session_id))
        preview = appending.preview_for(batch)
        args = (agent_id, session_id, self._project, encoded, tokens, preview, run_key)
        stored = sum(len(e.payload) + sum(len(d) for _, d in e.blobs) for e in encoded)
        if len(batch) <= INLINE_MESSAGES and stored <= INLINE_BYTES:
            # As SQLiteContextStore.append: on the event loop's thread when the worker is idle.
            long_queue = run_inline(self._conn, threads.append_agent, *args, inline=True)
            if long_queue is not NOT_RUN:
                fold = appending.fold_due() or long_queue is True
                if fold:
                    await run(self._conn, appending.fold_if_long)
                return
        await run(self._conn, threads.append_agent, *args)
