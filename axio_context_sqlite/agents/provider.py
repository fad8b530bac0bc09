"""SQLiteHistoryProvider: the history provider on the same database as the sessions.

Each ``(agent_id, session_id)`` is one ordinary session (see :mod:`.threads`), so
``list-sessions``, ``show``, ``search`` and ``export`` see agent conversations, and
:meth:`SQLiteHistoryProvider.store` gives the same session as a :class:`SQLiteContextStore`
(checkpoints, forks, :class:`~axio_context.compaction.AutoCompactStore`). A page of
:meth:`get_messages` reads only its own rows; ``clear_run`` hides a run's positions (see
:mod:`axio_context_sqlite.store.hiding`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import aiosqlite

from axio_context.agents.chat import ChatMessageLike
from axio_context.agents.history import check_ids, check_messages, check_page
from axio_context.messages import Message
from axio_context.tokens import DefaultEstimator, TokenCounter

from ..store import appending
from ..store.calls import NOT_RUN, run, run_inline
from ..store.connection import connect
from ..store.context_store import INLINE_BYTES, INLINE_MESSAGES, SQLiteContextStore
from ..store.message_rows import encode_message
from . import threads

__all__ = ["SQLiteHistoryProvider"]


class SQLiteHistoryProvider:
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
        self._conn = conn
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()
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
            found = await run(self._conn, threads.claim_run, run_id, session_id)
            self._runs[(run_id, session_id)] = found
        return found

    async def session_key(self, agent_id: str, session_id: str) -> str:
        """The id of the session holding this agent's history in ``session_id`` (created if new)."""
        check_ids(agent_id, session_id)
        return (await run(self._conn, threads.ensure_thread, agent_id, session_id, self._project))[1]

    async def store(self, agent_id: str, session_id: str) -> SQLiteContextStore:
        """The same conversation as a :class:`SQLiteContextStore` on this provider's connection."""
        name = await self.session_key(agent_id, session_id)
        return SQLiteContextStore(self._conn, name, self._project, token_counter=self._counter)

    async def append(
        self, agent_id: str, message: Message | ChatMessageLike, *, session_id: str, run_id: str = ""
    ) -> None:
        """Append one message, tagged with ``run_id`` (one statement)."""
        await self.append_many(agent_id, [message], session_id=session_id, run_id=run_id)

    async def append_many(
        self,
        agent_id: str,
        messages: Sequence[Message | ChatMessageLike],
        *,
        session_id: str,
        run_id: str = "",
    ) -> None:
        """Append messages in order, with their run tags, as one transaction."""
        check_ids(agent_id, session_id, run_id)
        batch = check_messages(messages)
        if not batch:
            return
        encoded = [encode_message(m, index=i) for i, m in enumerate(batch)]
        tokens = [self._counter.count(m) for m in batch]
        run_key = await self._run(run_id, session_id) if run_id else None
        if not self._installed:
            await run(self._conn, threads.install_agent_append)
            self._installed = True
        if (agent_id, session_id) not in self._known:  # made once here; the append re-checks
            await run(self._conn, threads.ensure_thread, agent_id, session_id, self._project)
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

    async def get_messages(
        self, agent_id: str, *, session_id: str, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        """Messages ``offset .. offset + limit`` in append order, cleared runs left out."""
        check_ids(agent_id, session_id)
        check_page(limit, offset)
        return await run(self._conn, threads.page, agent_id, session_id, limit, offset)

    async def clear(self, agent_id: str, *, session_id: str) -> None:
        """Forget the agent's history in ``session_id`` (forks of it keep theirs)."""
        check_ids(agent_id, session_id)
        await run(self._conn, threads.clear_thread, agent_id, session_id)

    async def clear_run(self, agent_id: str, *, session_id: str, run_id: str) -> None:
        """Hide the run's messages from every read; unknown agent, session or run: no-op."""
        check_ids(agent_id, session_id, run_id)
        await run(self._conn, threads.clear_run, agent_id, session_id, run_id)

    async def count_messages(self, agent_id: str, *, session_id: str) -> int:
        check_ids(agent_id, session_id)
        return await run(self._conn, threads.count, agent_id, session_id)

    async def get_run_ids(self, agent_id: str, *, session_id: str) -> list[str]:
        """The run id of each message, in the order of :meth:`get_messages` (``""``: no run)."""
        check_ids(agent_id, session_id)
        return await run(self._conn, threads.run_ids, agent_id, session_id)

    def __repr__(self) -> str:
        return f"SQLiteHistoryProvider(project={self._project!r})"
