"""This project's store (``axio_context_sqlite``), driven only through its public API.

Prefills use ``append_many`` (one transaction per call) and ``set_context_tokens``.
Run: ``python -m bench.worker_ours SPEC.json`` (see ``bench.harness``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from axio_context import Message
from axio_context_sqlite import Database, SQLiteContextStore, connect

from .harness import PROJECT, HopCounter, worker_main

#: Messages per ``append_many`` call when prefilling a long session.
FILL_BATCH = 1000
#: Sessions prefilled concurrently.
FILL_SESSIONS = 256


class OursDriver:
    """This project's target for ``bench.harness``."""

    name = "ours"
    paginates = True
    searches = True

    def __init__(self) -> None:
        self.hops: HopCounter | None = HopCounter()
        self._conn: aiosqlite.Connection | None = None

    @property
    def conn(self) -> aiosqlite.Connection:
        assert self._conn is not None, "not open"
        return self._conn

    def convert(self, data: dict[str, Any]) -> Message:
        return Message.from_dict(data)

    def to_dict(self, message: Message) -> dict[str, Any]:
        return message.to_dict()

    async def open(self, path: Path) -> None:
        self._conn = await connect(path)
        self._path = path
        assert self.hops is not None
        self.hops.attach(self._conn)

    async def close(self) -> None:
        await self.conn.close()
        self._conn = None

    def store(self, session_id: str) -> SQLiteContextStore:
        return SQLiteContextStore(self.conn, session_id, project=PROJECT)

    async def fill(self, sessions: Sequence[tuple[str, Sequence[Message], tuple[int, int]]]) -> None:
        async def one(sid: str, messages: Sequence[Message], tokens: tuple[int, int]) -> None:
            store = self.store(sid)
            for start in range(0, len(messages), FILL_BATCH):
                await store.append_many(list(messages[start : start + FILL_BATCH]))
            await store.set_context_tokens(*tokens)

        # Many sessions in flight keep the connection's thread busy instead of waiting on each
        # round trip; the thread still runs the calls one at a time, each its own transaction.
        # Sessions start in order, so creation times still rise with the session number.
        for start in range(0, len(sessions), FILL_SESSIONS):
            await asyncio.gather(*(one(*s) for s in sessions[start : start + FILL_SESSIONS]))

    async def page(self, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
        page = await self.store("s000000").list_sessions_page(limit=limit, cursor=cursor)
        return list(page.sessions), page.next_cursor

    async def checkpoint(self) -> None:
        if not await Database(self.conn, self._path).checkpoint():
            raise RuntimeError("the WAL could not be truncated")

    async def search(self, words: str) -> int:
        return len(await Database(self.conn, self._path).search(words, mode="keyword"))

    async def hop(self) -> None:
        await self.conn._execute(_nothing)

    async def sqlite_version(self) -> str:
        rows = await self.conn.execute_fetchall("SELECT sqlite_version()")
        return str(next(iter(rows))[0])


def _nothing() -> None:
    return None


if __name__ == "__main__":
    worker_main(OursDriver)
