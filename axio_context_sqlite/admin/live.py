"""The browsing half of :class:`~axio_context_sqlite.database.Database`: session trees, transcript
windows, and following a session as other processes append to it (``show --follow``, the TUI).

Following costs one ``PRAGMA data_version`` per tick while nothing changes: the session row and
its new messages are read only after another connection committed (see :mod:`.browsing`).
:class:`~axio_context.backends.Browsable` (re-exported here) is what the browser and ``show
--follow`` call, the same on every backend, and :func:`~axio_context.following.follow_changes`
the one loop that follows a session over any of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite

from axio_context.backends.protocol import Browsable
from axio_context.catalog import BrowseCalls
from axio_context.following import FollowCalls, FollowUpdate, follow_changes
from axio_context.memory_blocks import BlockStore
from axio_context.transcript import MessageRecord

from ..store import browsing
from ..store.calls import run
from ..store.catalog import SessionView
from ..store.runner import SQLiteRunner

__all__ = ["Browsable", "DatabaseLive", "FollowUpdate", "follow_changes"]


class DatabaseLive(BrowseCalls, FollowCalls):
    """Reads for a live browser over one connection (see :class:`.database.Database`)."""

    _conn: aiosqlite.Connection
    _path: Path

    def memory_blocks(self) -> BlockStore:
        """The memory blocks in this file, on its connection."""
        return BlockStore(SQLiteRunner(self._conn))

    async def data_version(self) -> int:
        """A number that changes whenever another connection (or process) commits to the file:
        the cheap check before re-reading anything."""
        return await run(self._conn, browsing.data_version)

    async def transcript(self, session_id: str, *, full: bool = False, limit: int = 200) -> SessionView:
        """The last ``limit`` messages of a session's model view (every message with ``full``),
        without reading the rest: ``start`` says where the window begins."""
        return await run(self._conn, browsing.transcript, session_id, full, limit)

    async def messages(
        self, session_id: str, start: int, end: int | None = None
    ) -> tuple[int, list[MessageRecord]]:
        """The session's message count and its messages at positions ``[start, end)``."""
        return await run(self._conn, browsing.message_window, session_id, start, end)

    def _change_probe(self, session_id: str) -> Callable[[], Awaitable[object]]:
        # SQLite's data_version changes when another connection commits to the file.
        return self.data_version
