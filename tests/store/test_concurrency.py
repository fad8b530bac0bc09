"""Concurrent appends within one process: asyncio tasks on one store, several stores on one
connection, and two connections (two worker threads) writing the same file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from axio_context_sqlite import Connection, SQLiteContextStore, connect
from tests.support.sqlite_checks import check_storage, text_message, texts


async def test_200_concurrent_appends_keep_call_order(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await asyncio.gather(*(store.append(text_message(f"m{i}")) for i in range(200)))

    assert texts(await store.get_history()) == [f"m{i}" for i in range(200)]
    assert (await store.info()).message_count == 200
    assert check_storage(db_path) == {"s": 200}


async def test_concurrent_appends_and_batches_on_one_store(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    calls = []
    for i in range(100):
        if i % 3 == 0:
            calls.append(store.append_many([text_message(f"b{i}.{j}") for j in range(4)]))
        else:
            calls.append(store.append(text_message(f"m{i}")))
    await asyncio.gather(*calls)

    expected = []
    for i in range(100):
        expected += [f"b{i}.{j}" for j in range(4)] if i % 3 == 0 else [f"m{i}"]
    assert texts(await store.get_history()) == expected
    assert check_storage(db_path) == {"s": len(expected)}


async def test_several_stores_share_one_connection(conn: Connection, db_path: Path) -> None:
    stores = [SQLiteContextStore(conn, f"s{k}", project="p") for k in range(5)]
    await asyncio.gather(
        *(stores[k].append(text_message(f"s{k}-{i}")) for i in range(60) for k in range(5)),
        *(stores[k].add_context_tokens(1, 2) for k in range(5) for _ in range(10)),
    )

    for k, store in enumerate(stores):
        assert texts(await store.get_history()) == [f"s{k}-{i}" for i in range(60)]
        assert await store.get_context_tokens() == (10, 20)
    assert check_storage(db_path) == {f"s{k}": 60 for k in range(5)}
    listed = await stores[0].list_sessions()
    assert sorted(i.session_id for i in listed) == [f"s{k}" for k in range(5)]
    assert {i.message_count for i in listed} == {60}


async def test_two_connections_append_to_one_session(db_path: Path) -> None:
    async with connect(db_path) as a, connect(db_path) as b:
        sa = SQLiteContextStore(a, "shared", project="p")
        sb = SQLiteContextStore(b, "shared", project="p")
        await asyncio.gather(
            *(sa.append(text_message(f"a{i}")) for i in range(150)),
            *(sb.append(text_message(f"b{i}")) for i in range(150)),
            *(sa.add_context_tokens(3, 0) for _ in range(20)),
            *(sb.add_context_tokens(0, 5) for _ in range(20)),
        )
        history = texts(await sb.get_history())
        assert await sa.get_context_tokens() == (60, 100)

    assert len(history) == 300
    # Each connection's own calls keep their order; together every message is there once.
    assert [t for t in history if t[0] == "a"] == [f"a{i}" for i in range(150)]
    assert [t for t in history if t[0] == "b"] == [f"b{i}" for i in range(150)]
    assert check_storage(db_path) == {"shared": 300}


async def test_two_connections_fork_while_appending(db_path: Path) -> None:
    async with connect(db_path) as a, connect(db_path) as b:
        writer = SQLiteContextStore(a, "root", project="p")
        reader = SQLiteContextStore(b, "root", project="p")
        await writer.append(text_message("first"))

        async def fork_repeatedly() -> list[SQLiteContextStore]:
            forks = []
            for _ in range(20):
                forks.append(await reader.fork())
                await asyncio.sleep(0)
            return forks

        results = await asyncio.gather(
            fork_repeatedly(), *(writer.append(text_message(f"m{i}")) for i in range(100))
        )
        forks = results[0]
        full = texts(await writer.get_history())
        assert full == ["first"] + [f"m{i}" for i in range(100)]
        for fork in forks:
            info = await fork.info()
            # A fork is a consistent prefix of the parent taken at one instant.
            assert info.fork_position == info.message_count
            assert texts(await fork.get_history()) == full[: info.message_count]
    check_storage(db_path)
