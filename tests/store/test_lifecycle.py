"""Connection lifecycle: close is final and joins the worker thread, ``async with`` closes, an
unclosed connection warns and never keeps a program from exiting, and a plain aiosqlite
connection handed to the store works (the schema is applied on first use)."""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import aiosqlite
import pytest

from axio_context import StoreClosedError
from axio_context.errors import ReadOnlyDatabaseError
from axio_context_sqlite import SCHEMA_VERSION, Database, SQLiteContextStore, connect
from axio_context_sqlite.store.driver import PAGE_SIZE
from tests.support.sqlite_checks import check_storage, text_message, texts

ROOT = Path(__file__).resolve().parents[2]


async def _use(store: SQLiteContextStore) -> None:
    await store.append(text_message("hello"))
    assert texts(await store.get_history()) == ["hello"]


async def test_close_is_final_and_joins_the_thread(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s", project="p")
    await _use(store)
    thread = conn._thread
    assert thread.is_alive()

    await conn.close()
    assert not thread.is_alive()
    await conn.close()  # closing again is harmless

    with pytest.raises(StoreClosedError):
        await store.append(text_message("late"))
    with pytest.raises(StoreClosedError):
        await store.get_history()
    with pytest.raises(StoreClosedError):
        await store.fork()
    with pytest.raises(StoreClosedError):
        await store.add_context_tokens(1, 1)
    with pytest.raises(StoreClosedError):
        await store.list_sessions()
    assert check_storage(db_path) == {"s": 1}


async def test_async_with_closes(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await _use(store)
        thread = conn._thread
    assert not thread.is_alive()
    with pytest.raises(StoreClosedError):
        await store.get_history()


async def test_async_with_closes_when_the_block_raises(db_path: Path) -> None:
    threads = []

    async def failing_block() -> None:
        async with connect(db_path) as conn:
            threads.append(conn._thread)
            await _use(SQLiteContextStore(conn, "s", project="p"))
            raise KeyError("boom")

    with pytest.raises(KeyError):
        await failing_block()
    assert not threads[0].is_alive()


def _drop(held: list[object]) -> None:
    held.clear()
    gc.collect()


async def test_unclosed_connection_warns_after_use_and_its_threads_end(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s", project="p")
    await _use(store)
    await store.fork()
    for i in range(100):
        await store.append(text_message(f"m{i}"))
    threads = [conn._thread]
    held: list[object] = [conn, store]
    del conn, store
    with pytest.warns(ResourceWarning, match="deleted before being closed"):
        _drop(held)
    for thread in threads:
        assert thread is not None
        thread.join(5)
        assert not thread.is_alive()
    assert check_storage(db_path)["s"] == 101


FORGETFUL = textwrap.dedent(
    """
    import asyncio, sys
    from axio_context import Message, TextBlock
    from axio_context_sqlite import SQLiteContextStore, connect

    async def main():
        conn = await connect(sys.argv[1])  # never closed
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(Message(role="user", content=[TextBlock(text="kept")]))
        await store.get_history()
        print("done", flush=True)

    asyncio.run(main())
    """
)


def test_program_that_forgot_to_close_exits_and_warns(tmp_path: Path) -> None:
    db = tmp_path / "forgot.db"
    proc = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", FORGETFUL, str(db)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    assert "ResourceWarning" in proc.stderr
    assert "was deleted before being closed" in proc.stderr
    assert check_storage(db) == {"s": 1}  # what append returned for is on disk


async def test_plain_aiosqlite_connection_works(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    async with aiosqlite.connect(db_path) as plain:
        store = SQLiteContextStore(plain, "s", project="p")
        await store.add_context_tokens(3, 4)
        await store.append(text_message("one"))
        await store.append_many([text_message("two"), text_message("three")])
        await store.add_context_tokens(1, 1)
        child = await store.fork()
        await child.append(text_message("four"))
        assert texts(await store.get_history()) == ["one", "two", "three"]
        assert texts(await child.get_history()) == ["one", "two", "three", "four"]
        assert await store.get_context_tokens() == (4, 5)
        # Everything is committed: another connection sees it while this one is still open.
        other = sqlite3.connect(db_path)
        try:
            assert other.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            tokens = other.execute("SELECT input_tokens, output_tokens FROM sessions WHERE id = 's'")
            assert tokens.fetchone() == (4, 5)
            assert other.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 4
        finally:
            other.close()
    async with connect(db_path) as conn:
        again = SQLiteContextStore(conn, "s", project="p")
        assert texts(await again.get_history()) == ["one", "two", "three"]
        assert await again.get_context_tokens() == (4, 5)
    check_storage(db_path)


async def test_close_finishes_what_was_queued_before_it(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s", project="p")
    early = [asyncio.create_task(store.append(text_message(f"m{i}"))) for i in range(50)]
    await asyncio.sleep(0)  # the appends are queued on the worker before the close
    closing = asyncio.create_task(conn.close())
    await asyncio.sleep(0)
    late = await asyncio.gather(store.append(text_message("late")), return_exceptions=True)
    await asyncio.gather(*early)
    await closing
    assert isinstance(late[0], StoreClosedError)
    async with connect(db_path) as again:
        assert texts(await SQLiteContextStore(again, "s", project="p").get_history()) == [
            f"m{i}" for i in range(50)
        ]


# --- checkpoints ------------------------------------------------------------------------------------


def _wal_frames(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return (wal.stat().st_size - 32) // (PAGE_SIZE + 24) if wal.exists() else 0


async def test_close_leaves_no_wal_behind(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s", project="p")
    for i in range(200):
        await store.append(text_message(f"m{i}"))
    assert _wal_frames(db_path) > 0
    await conn.close()
    assert not db_path.with_name(db_path.name + "-wal").exists()  # the last connection cleaned up
    assert check_storage(db_path) == {"s": 200}


async def test_checkpoints_keep_the_wal_bounded_while_appending(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        for i in range(3000):
            await store.append(text_message(f"message {i} " * 20))
        # 3,000 appends write ~12,000 pages; SQLite's own checkpoint restarts the WAL at 1,000.
        assert _wal_frames(db_path) < 2000
    assert check_storage(db_path) == {"s": 3000}


async def test_checkpoint_empties_the_wal_between_rounds_of_appends(db_path: Path) -> None:
    wal = db_path.with_name(db_path.name + "-wal")
    async with connect(db_path) as conn:
        db = Database(conn, db_path)
        store = SQLiteContextStore(conn, "s", project="p")
        results = []
        for r in range(4):
            for i in range(300):
                await store.append(text_message(f"round {r} message {i} " * 20))
            results.append((await db.checkpoint(), wal.stat().st_size))
        assert results == [(True, 0)] * 4
        await store.append(text_message("after"))  # the next write starts a new WAL
        assert wal.stat().st_size > 0
        report = await db.vacuum()
        assert not report.wal_busy and wal.stat().st_size == 0
    assert check_storage(db_path) == {"s": 4 * 300 + 1}


async def test_checkpoint_reports_a_reader_that_keeps_the_wal_and_refuses_read_only(db_path: Path) -> None:
    wal = db_path.with_name(db_path.name + "-wal")
    async with connect(db_path, busy_timeout=0.2) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("first"))
        async with connect(db_path, readonly=True) as ro:
            with pytest.raises(ReadOnlyDatabaseError, match="open read-only"):
                await Database(ro, db_path).checkpoint()
            await ro.execute("BEGIN")
            assert await ro.execute_fetchall("SELECT count(*) FROM messages") == [(1,)]  # holds a snapshot
            await store.append(text_message("second"))
            assert await Database(conn, db_path).checkpoint() is False
            assert wal.stat().st_size > 0
            await ro.execute("ROLLBACK")
        assert await Database(conn, db_path).checkpoint() is True
        assert wal.stat().st_size == 0
        assert texts(await store.get_history()) == ["first", "second"]
    assert check_storage(db_path) == {"s": 2}


async def test_a_relative_path_keeps_working_after_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    async with connect("rel.db") as conn:
        monkeypatch.chdir(tmp_path / "elsewhere")
        store = SQLiteContextStore(conn, "s", project="p")
        for i in range(100):
            await store.append(text_message(f"m{i}"))
        assert texts(await store.get_history())[-1] == "m99"
    assert list((tmp_path / "elsewhere").iterdir()) == []  # nothing created where it now runs
    assert check_storage(tmp_path / "rel.db") == {"s": 100}
