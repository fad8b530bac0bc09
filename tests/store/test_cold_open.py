"""A cold open costs one hop to the worker thread, the open itself: the key, the file and the
cancelled-statement handler are done in it, not in hops of their own (issue 32, cold open)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.errors import DatabaseNotFoundError
from tests.support.sqlite_checks import text_message, texts


async def test_opening_hands_the_worker_no_job_beyond_the_open(db_path: Path) -> None:
    async with connect(db_path) as conn:
        assert conn.jobs == 0
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("hello"))
    async with connect(db_path) as again:
        assert again.jobs == 0
        assert texts(await SQLiteContextStore(again, "s", project="p").get_history()) == ["hello"]


async def test_a_missing_folder_is_made_and_a_readonly_open_of_nothing_refused(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "context.db"
    async with connect(deep) as conn:
        assert conn.jobs == 0
    assert deep.exists()
    missing = tmp_path / "none.db"
    with pytest.raises(DatabaseNotFoundError, match="no database at"):
        await connect(missing, readonly=True)
    assert not missing.exists()


async def test_a_close_finishes_queued_work_and_ends_the_worker(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s", project="p")
    pending = [asyncio.ensure_future(store.append_many([text_message(f"m{i}")])) for i in range(3)]
    await asyncio.sleep(0)  # each append has handed its job to the worker
    await conn.close()
    assert [t.result() for t in pending] == [None, None, None]
    assert not conn._thread.is_alive()
    assert not db_path.with_name(db_path.name + "-wal").exists()  # the last close tidied up
    await conn.close()  # a second close does nothing
    async with connect(db_path) as again:
        assert texts(await SQLiteContextStore(again, "s", project="p").get_history()) == ["m0", "m1", "m2"]
