"""The inline path: short writes run on the event loop's thread when the worker is idle.

An append or token update then costs no thread hop; it must still keep the order of operations,
never block the event loop on another process's lock, and leave everything else to the worker.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from axio_context import ImageBlock, Message, TextBlock
from axio_context.errors import DecodeError
from axio_context_sqlite import Connection, Database, SQLiteContextStore, connect
from axio_context_sqlite.store import appending, indexing
from axio_context_sqlite.store import context_store as store_module
from axio_context_sqlite.store.driver import PAGE_SIZE
from tests.support.lock_holder import holding_lock
from tests.support.sqlite_checks import check_storage, scalar, text_message, texts


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start this process's 1-in-64 keyword-queue check afresh (other tests moved the count)."""
    monkeypatch.setattr(appending, "_appends_since_check", 0)


async def test_idle_appends_and_token_updates_take_no_hop(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("first"))  # counts the database's payloads, on the worker
    jobs = conn.jobs
    for i in range(20):
        await store.append(text_message(f"m{i}", role="user" if i % 2 else "assistant"))
    await store.add_context_tokens(3, 4)
    await store.add_context_tokens(1, 1)
    await store.set_context_tokens(10, 20)
    assert await store.get_context_tokens() == (10, 20)
    await store.add_context_tokens(1, 2)
    assert await store.get_context_tokens() == (11, 22)
    assert conn.jobs == jobs
    history = await store.get_history()
    assert texts(history) == ["first", *(f"m{i}" for i in range(20))]
    info = await store.info()
    assert (info.message_count, info.input_tokens, info.output_tokens) == (21, 11, 22)
    assert info.preview == "first"
    assert check_storage(db_path) == {"s": 21}


async def test_a_new_session_and_its_tokens_inline(conn: Connection) -> None:
    tokens = SQLiteContextStore(conn, "tokens-first", project="p")
    await tokens.add_context_tokens(2, 3)  # the session's first write: UPDATE misses, upsert
    assert await tokens.get_context_tokens() == (2, 3)
    setter = SQLiteContextStore(conn, "set-first", project="p")
    await setter.set_context_tokens(5, 6)
    assert await setter.get_context_tokens() == (5, 6)
    assert {i.session_id for i in await tokens.list_sessions()} == {"tokens-first", "set-first"}


async def test_an_append_waits_behind_queued_work(conn: Connection) -> None:
    """With a job queued, an append queues behind it instead of running first on the loop."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("old"))
    gate = threading.Event()
    blocked = asyncio.ensure_future(conn._execute(gate.wait, 10.0))
    clearing = asyncio.ensure_future(store.clear())
    await asyncio.sleep(0)  # the clear is queued behind the blocked job
    appending = asyncio.ensure_future(store.append(text_message("new")))
    await asyncio.sleep(0.05)
    assert not appending.done()
    gate.set()
    await asyncio.gather(blocked, clearing, appending)
    assert texts(await store.get_history()) == ["new"]


async def test_tasks_keep_their_order_across_both_paths(conn: Connection) -> None:
    """Appends from many tasks keep their call order: single appends issued while big batches
    (which always take the worker) wait for it queue behind them, and once the worker is idle
    single appends are inline again."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("first"))  # the connection's first write: the worker's
    gate = threading.Event()
    big = store_module.INLINE_MESSAGES + 1

    def batch(i: int) -> list[str]:
        return [f"m{i}.{j}" for j in range(big)]

    async def append(i: int) -> None:
        if i % 2:
            await store.append(text_message(f"m{i}"))
        else:
            await store.append_many([text_message(t) for t in batch(i)])

    blocked = asyncio.ensure_future(conn._execute(gate.wait, 10.0))
    tasks = [asyncio.ensure_future(append(i)) for i in range(100)]
    await asyncio.sleep(0.05)  # every task has issued its append; the worker is still blocked
    assert not any(t.done() for t in tasks)
    gate.set()
    await asyncio.gather(blocked, *tasks)
    jobs = conn.jobs
    for i in range(101, 111, 2):
        await append(i)
    assert conn.jobs == jobs
    expected = ["first"]
    for i in [*range(100), *range(101, 111, 2)]:
        expected += [f"m{i}"] if i % 2 else batch(i)
    assert texts(await store.get_history()) == expected


async def test_a_locked_database_never_blocks_the_loop(db_path: Path) -> None:
    """Another process holds the write lock: the append waits on the worker, not on the loop.

    Had the inline attempt waited for the lock on the loop's thread, the loop would have stood
    still for the whole busy timeout (5 s) before the worker took over; the longest gap between
    the ticker's wake-ups shows it never did (the bound is half the timeout, far above noise).
    """
    async with connect(db_path, busy_timeout=5.0) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("one"))  # the connection's first write: the worker's
        with holding_lock(db_path) as holder:
            # the next write tries inline first
            loop = asyncio.get_running_loop()
            gaps: list[float] = []
            writing = True

            async def ticker() -> None:
                last = loop.time()
                while writing:
                    await asyncio.sleep(0.01)
                    gaps.append(loop.time() - last)
                    last = loop.time()

            ticks = asyncio.ensure_future(ticker())
            await asyncio.sleep(0.05)  # the ticker is running
            loop.call_later(0.3, holder.release)
            jobs = conn.jobs
            await store.append(text_message("two"))
            await store.add_context_tokens(1, 1)
            writing = False
            await ticks
            assert conn.jobs > jobs  # the append went to the worker, which waited for the lock
            assert max(gaps) < 2.5
            holder.wait_released()
            assert texts(await store.get_history()) == ["one", "two"]
            assert await store.get_title() == "held"
            assert await store.get_context_tokens() == (1, 1)
    assert check_storage(db_path) == {"s": 2}


async def test_full_sync_writes_stay_on_the_worker(db_path: Path) -> None:
    """With synchronous FULL every commit syncs the disk: never on the event loop's thread."""
    async with connect(db_path, synchronous="FULL") as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("first"))
        jobs = conn.jobs
        await store.append(text_message("second"))
        await store.add_context_tokens(1, 1)
        assert conn.jobs == jobs + 2
        assert texts(await store.get_history()) == ["first", "second"]


async def test_inside_an_open_transaction_appends_use_the_worker(conn: Connection) -> None:
    """A transaction the caller opened on the connection is never joined by an inline write."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("one"))
    await conn.execute("BEGIN")
    jobs = conn.jobs
    await store.add_context_tokens(1, 1)
    assert conn.jobs == jobs + 1
    await conn.execute("ROLLBACK")
    assert await store.get_context_tokens() == (0, 0)


async def test_writes_inside_a_callers_transaction_join_it(conn: Connection) -> None:
    """Every kind of write works inside a transaction the caller opened (as a savepoint of it):
    the caller's ROLLBACK undoes them all, its COMMIT keeps them, and a refused write leaves the
    caller's transaction open."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append_many([text_message("one"), text_message("two")])
    await conn.execute("BEGIN")
    await store.append(text_message("three"))
    await store.append_many([text_message(str(i)) for i in range(70)])  # folds the index too
    fork = await store.fork()
    assert (await store.pop()) is not None
    await fork.set_title("t")
    await conn.execute("ROLLBACK")
    assert texts(await store.get_history()) == ["one", "two"]
    assert [s.session_id for s in await store.list_sessions()] == ["s"]

    await conn.execute("BEGIN")
    await store.append(text_message("three"))
    fork = await store.fork()
    with pytest.raises(DecodeError):
        await store.append(Message(role="robot", content=[]))  # type: ignore[arg-type]
    await conn.execute("COMMIT")
    assert texts(await store.get_history()) == ["one", "two", "three"]
    assert texts(await fork.get_history()) == ["one", "two", "three"]
    hits = await Database(conn, Path(conn.path)).search("three", mode="keyword")
    assert ("s", 2) in [(h.session_id, h.position) for h in hits]


async def test_sqlites_own_checkpoints_keep_the_wal_bounded_under_inline_appends(db_path: Path) -> None:
    """Checkpoints are SQLite's own, in the commit crossing 1,000 WAL pages, inline writes
    included: 1,500 appends (~6,000 pages) leave the WAL near that bound, and nothing is lost."""
    async with connect(db_path) as conn:
        rows = await conn.execute_fetchall("PRAGMA wal_autocheckpoint")
        assert next(iter(rows))[0] == 1000
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("first"))
        jobs = conn.jobs
        for i in range(1500):
            await store.append(text_message(f"message {i} " * 20))
        assert conn.jobs - jobs < 100  # inline, but for the keyword-queue folds
        wal = db_path.with_name(db_path.name + "-wal")
        assert (wal.stat().st_size - 32) // (PAGE_SIZE + 24) < 1500
    assert check_storage(db_path) == {"s": 1501}


def _with_image(text: str, data: bytes) -> Message:
    return Message(role="user", content=[TextBlock(text=text), ImageBlock(media_type="image/png", data=data)])


async def test_small_batches_and_media_inline(conn: Connection, db_path: Path) -> None:
    """A turn's few messages, or a message with a screenshot, is one transaction on the loop."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("first"))
    shot = bytes(range(256)) * 64  # 16 KB: stored once, as a blob
    jobs = conn.jobs
    await store.append_many([text_message("q"), text_message("a", role="assistant"), text_message("q2")])
    await store.append(_with_image("look", shot))
    await store.append_many([_with_image("again", shot), text_message("ok", role="assistant")])
    assert conn.jobs == jobs
    history = await store.get_history()
    assert texts(history) == ["first", "q", "a", "q2", "look", "again", "ok"]
    images = [b for m in history for b in m.content if isinstance(b, ImageBlock)]
    assert [i.data for i in images] == [shot, shot]
    assert scalar(db_path, "SELECT count(*) || ':' || sum(refs) FROM blobs") == "1:2"
    assert check_storage(db_path) == {"s": 7}


async def test_big_batches_and_big_media_take_the_worker(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("first"))
    jobs = conn.jobs
    await store.append_many([text_message(f"m{i}") for i in range(store_module.INLINE_MESSAGES + 1)])
    assert conn.jobs == jobs + 1
    big = bytes(range(256)) * (store_module.INLINE_BYTES // 256 + 1)
    await store.append(_with_image("big", big))
    assert conn.jobs == jobs + 2
    history = await store.get_history()
    assert len(history) == store_module.INLINE_MESSAGES + 3
    assert [b.data for b in history[-1].content if isinstance(b, ImageBlock)] == [big]
    assert check_storage(db_path) == {"s": store_module.INLINE_MESSAGES + 3}


async def test_a_locked_batch_with_media_is_stored_once(db_path: Path) -> None:
    """The inline transaction fails on the lock having written nothing; the worker's then stores
    the batch and its blob exactly once."""
    shot = bytes(range(256)) * 64
    async with connect(db_path, busy_timeout=5.0) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("one"))  # the connection's first write: the worker's
        with holding_lock(db_path) as holder:
            asyncio.get_running_loop().call_later(0.2, holder.release)
            jobs = conn.jobs
            await store.append_many([_with_image("shot", shot), text_message("two")])
            assert conn.jobs > jobs  # tried inline, met the lock, went to the worker
            holder.wait_released()
            assert texts(await store.get_history()) == ["one", "shot", "two"]
            assert await store.get_title() == "held"
    assert scalar(db_path, "SELECT count(*) || ':' || sum(refs) FROM blobs") == "1:1"
    assert check_storage(db_path) == {"s": 3}


async def test_keyword_index_folds_run_on_the_worker(
    conn: Connection, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folding the queue into the keyword index (tokenizing, ~40 ms per 1,024 messages) never
    runs inside an inline append, single or batch: the follow-up on the worker does it."""
    monkeypatch.setattr(indexing, "FLUSH_AT", 4)
    threads: list[int] = []
    flush = indexing.flush_pending

    def recording(c: Any) -> int:
        threads.append(threading.get_ident())
        return flush(c)

    monkeypatch.setattr(indexing, "flush_pending", recording)
    store = SQLiteContextStore(conn, "s", project="p")
    for i in range(70):
        await store.append(text_message(f"single {i}"))
    for i in range(10):
        await store.append_many([text_message(f"pair {i}"), text_message(f"pair {i}", role="assistant")])
    assert threads and set(threads) == {conn._thread.ident}
    assert check_storage(db_path) == {"s": 90}
