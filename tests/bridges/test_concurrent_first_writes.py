"""A new session written at once from several threads, each with its own event loop (as
openai-agents' own concurrent-access test does, whose thread pool hides what a thread raised):
every item is kept and no thread fails, on each backend. Before the owner check read the
metadata again, a thread could see the messages of a concurrent first write before its claim
and fail with SessionOwnerError (3 runs in 10 on PostgreSQL)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from pathlib import Path
from typing import Any

import pytest

from axio_context.errors import SessionOwnerError
from axio_context.owners import ADAPTER_KEY, claim_read

from .upstream import SQLiteSession, ensure_upstream

ensure_upstream()


#: every test runs on SQLite files, then on a PostgreSQL database of its own (conftest.py)
pytestmark = pytest.mark.usefixtures("upstream_on_each_backend")


@pytest.mark.parametrize("round_", range(4))
async def test_threads_writing_a_new_session_at_once_all_succeed(tmp_path: Path, round_: int) -> None:
    session = SQLiteSession(f"at-once-{round_}", tmp_path / "c.db")
    items: list[Any] = [{"role": "user", "content": f"Message {i}"} for i in range(10)]

    def add(item: Any) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(session.add_items([item]))
        finally:
            loop.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        list(pool.map(add, items))  # a thread's exception is raised here
    assert {i["content"] for i in await session.get_items()} == {f"Message {i}" for i in range(10)}
    session.close()


async def test_a_claim_made_between_the_two_reads_is_seen() -> None:
    reads = iter([{}, {ADAPTER_KEY: "ours"}])  # unclaimed, then claimed by a concurrent writer

    async def metadata() -> dict[str, Any]:
        return next(reads)

    async def messages() -> bool:
        return True

    assert await claim_read("s", "ours", metadata, messages) is None
    with pytest.raises(SessionOwnerError, match="not written by the 'ours' adapter"):
        await claim_read("s", "ours", _always({}), messages)  # still nobody's: someone else wrote
    with pytest.raises(SessionOwnerError, match="belongs to the 'theirs' adapter"):
        await claim_read("s", "ours", _always({ADAPTER_KEY: "theirs"}), messages)
    assert await claim_read("s", "ours", _always({}), _always(False)) == {ADAPTER_KEY: "ours"}


def _always(value: Any) -> Any:
    async def read() -> Any:
        return value

    return read
