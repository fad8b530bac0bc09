"""One connection used in ways aiosqlite allows but a chat app does not usually do: from two
threads at once, from event loops that come and go, from a forked child; and a maintenance
checkpoint while another process reads and another connection writes.

The inline path (a short write on the event loop's own thread while the worker is idle) must
never run inside a worker job of another thread, a worker must outlive the loop that gave it a
job, and a connection copied into a forked child must refuse work with a clear error.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiosqlite.core
import pytest

from axio_context.errors import StoreClosedError
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import indexing
from tests.support.sqlite_checks import check_storage, text_message, texts


async def test_two_threads_sharing_a_connection_lose_and_duplicate_nothing(db_path: Path) -> None:
    # Thread B's loop runs batches (worker jobs: BEGIN IMMEDIATE ... COMMIT) while this loop's
    # single appends and token additions run inline whenever its own view says the worker idles.
    conn = await connect(db_path)
    stop = threading.Event()
    failures: list[BaseException] = []
    batches = 0

    def other_thread() -> None:
        async def work() -> None:
            nonlocal batches
            store = SQLiteContextStore(conn, "other")
            while not stop.is_set():
                await store.append_many([text_message(f"o{batches}a"), text_message(f"o{batches}b")])
                batches += 1

        try:
            asyncio.run(work())
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=other_thread)
    thread.start()
    store = SQLiteContextStore(conn, "main")
    try:
        for i in range(600):
            await store.append(text_message(f"m{i}"))
            await store.add_context_tokens(1, 2)
    finally:
        stop.set()
        await asyncio.to_thread(thread.join)
    try:
        assert failures == []
        assert batches > 0
        assert texts(await store.get_history()) == [f"m{i}" for i in range(600)]
        assert await store.get_context_tokens() == (600, 1200)
        other = texts(await SQLiteContextStore(conn, "other").get_history())
        assert other == [f"o{i}{half}" for i in range(batches) for half in "ab"]
    finally:
        await conn.close()
    check_storage(db_path)


def test_a_timed_out_call_in_a_closed_loop_leaves_the_connection_working(db_path: Path) -> None:
    # A sync facade calling asyncio.run per call: a call that timed out still finishes on the
    # worker after its loop closed. Handing its result to that loop must not kill the worker.
    async def opened() -> tuple[object, SQLiteContextStore]:
        conn = await connect(db_path)
        store = SQLiteContextStore(conn, "s")
        await store.append_many([text_message(f"m{i}") for i in range(20_000)])
        return conn, store

    conn, store = asyncio.run(opened())

    async def impatient() -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(store.get_history(), 0.001)

    asyncio.run(impatient())

    async def later() -> list[str]:
        await store.append(text_message("after"))
        history = texts(await store.get_history())
        await asyncio.wait_for(conn.close(), 30)  # type: ignore[attr-defined]
        return history

    history = asyncio.run(later())
    assert history == [f"m{i}" for i in range(20_000)] + ["after"]


async def test_a_dead_worker_thread_is_a_clear_error_and_close_returns(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s")
    await store.append(text_message("one"))
    conn._tx.put_nowait((None, lambda: aiosqlite.core._STOP_RUNNING_SENTINEL))  # the thread ends
    await asyncio.to_thread(conn._thread.join, 10)
    assert not conn._thread.is_alive()
    with pytest.raises(StoreClosedError, match="worker thread has stopped"):
        await store.get_history()
    with pytest.raises(StoreClosedError, match="worker thread has stopped"):
        await store.append(text_message("two"))
    await asyncio.wait_for(conn.close(), 10)
    with pytest.raises(StoreClosedError):
        await store.get_history()
    async with connect(db_path) as again:
        assert texts(await SQLiteContextStore(again, "s").get_history()) == ["one"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
async def test_a_forked_child_cannot_use_its_parents_connection(db_path: Path) -> None:
    conn = await connect(db_path)
    store = SQLiteContextStore(conn, "s")
    await store.append(text_message("parent"))
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() of a threaded process
        pid = os.fork()
    if pid == 0:  # the child: report what each call did, never return into pytest
        outcome = []
        try:
            for call in (lambda: store.append(text_message("child")), store.get_history, conn.close):
                try:
                    asyncio.run(asyncio.wait_for(call(), 5))
                    outcome.append("ran")
                except StoreClosedError as exc:
                    outcome.append("refused: " + str(exc))
                except BaseException as exc:
                    outcome.append(f"other: {exc!r}")
        finally:
            os.write(write_end, "\n".join(outcome).encode())
            os._exit(0)
    os.close(write_end)
    _, status = await asyncio.to_thread(os.waitpid, pid, 0)
    with os.fdopen(read_end) as f:
        outcome = f.read().splitlines()
    assert os.waitstatus_to_exitcode(status) == 0
    assert outcome[0].startswith("refused: ") and f"process {os.getpid()}" in outcome[0]
    assert outcome[1].startswith("refused: ")
    assert outcome[2] == "ran"  # close() forgets the copy without touching the parent's file
    await store.append(text_message("parent again"))
    assert texts(await store.get_history()) == ["parent", "parent again"]
    await conn.close()
    check_storage(db_path)


READER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN")
db.execute("SELECT count(*) FROM messages").fetchone()
print("reading", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Another process holding a read transaction on ``path`` (an old snapshot) while inside."""
    with subprocess.Popen(
        [sys.executable, "-c", READER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as reader:
        assert reader.stdout is not None and reader.stdin is not None
        try:
            assert reader.stdout.readline() == "reading\n"
            yield
            reader.stdin.write("go\n")
            reader.stdin.flush()
            assert reader.wait(10) == 0
        finally:
            if reader.poll() is None:
                reader.kill()


async def test_a_checkpoint_waiting_for_a_reader_does_not_lock_writers_out(db_path: Path) -> None:
    # A TRUNCATE checkpoint must not hold the write lock while it waits for an old reader: a
    # writer with a shorter busy timeout than the checkpoint's would get "database is locked".
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many([text_message(f"m{i}") for i in range(20)])
    with reading(db_path):
        async with connect(db_path, busy_timeout=0.5) as w, open_database(db_path, busy_timeout=3) as db:
            writer = SQLiteContextStore(w, "w")
            await writer.append(text_message("w-first"))  # frames the reader's snapshot lacks
            checkpoint = asyncio.ensure_future(db.checkpoint())
            for i in range(40):
                await writer.append(text_message(f"w{i}"))
                await asyncio.sleep(0.02)
            assert not checkpoint.done()  # still waiting for the reader all along
            assert await checkpoint is False
            assert len(await writer.get_history()) == 41
    check_storage(db_path)


async def test_an_inline_batch_is_stored_once_when_its_queue_check_fails(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inline path takes any failure as "nothing written" and hands the batch to the worker:
    # so nothing in it may fail after its commit.
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append(text_message("warm"))
        real = indexing.queue_is_long
        calls = 0

        def failing_once(c: object) -> bool:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise MemoryError("injected")
            return real(c)

        monkeypatch.setattr(indexing, "queue_is_long", failing_once)
        await store.append_many([text_message("a"), text_message("b")])
        assert calls >= 2  # the inline try, then the worker's
        assert texts(await store.get_history()) == ["warm", "a", "b"]
    check_storage(db_path)
