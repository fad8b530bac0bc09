"""Database: the library calls behind the command line, on real files."""

from __future__ import annotations

import asyncio
import secrets
import threading
import tracemalloc
from pathlib import Path

import pytest

from axio_context.errors import AmbiguousSessionError, SessionNotFoundError
from axio_context.testing import text
from axio_context.transcript import iter_jsonl, read_json
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.database import open_database


async def test_export_is_one_snapshot_while_another_connection_writes(tmp_path: Path) -> None:
    """The export's sink stops mid-way until another connection has committed appends, a new
    session and a delete; the export still shows the database exactly as it was when it began."""
    path = tmp_path / "busy.db"
    async with connect(path) as conn:
        busy = SQLiteContextStore(conn, "busy", project="/p")
        for start in range(0, 1200, 200):
            await busy.append_many(
                [text("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(start, start + 200)]
            )
        await SQLiteContextStore(conn, "doomed", project="/p").append(text("user", "bye"))

    go, committed = threading.Event(), threading.Event()

    def writer() -> None:
        async def write() -> None:
            async with connect(path) as conn:
                store = SQLiteContextStore(conn, "busy", project="/p")
                await asyncio.to_thread(go.wait, 30)
                for i in range(5):
                    await store.append_many([text("user", f"late q{i}"), text("assistant", f"late a{i}")])
                await SQLiteContextStore(conn, "newcomer", project="/p").append(text("user", "late"))
                await SQLiteContextStore(conn, "doomed", project="/p").delete_session()

        asyncio.run(write())
        committed.set()

    thread = threading.Thread(target=writer)
    thread.start()
    chunks: list[bytes] = []

    def sink(chunk: bytes) -> None:
        chunks.append(chunk)
        if len(chunks) == 3:  # inside the first batch of "busy"
            go.set()
            assert committed.wait(30), "the writer could not commit while the export ran"

    try:
        async with open_database(path) as db:
            summary = await db.export(sink, format="jsonl")
            after = await db.list_sessions()
    finally:
        go.set()
        thread.join(30)
    assert committed.is_set()
    sessions = {s.id: s for s in iter_jsonl(b"".join(chunks).splitlines())}
    assert sorted(sessions) == ["busy", "doomed"]
    assert sessions["busy"].message_count == len(sessions["busy"].messages) == 1200
    assert (summary.sessions, summary.messages) == (2, 1201)
    now = {s.session_id: s.message_count for s in after.sessions}
    assert now == {"busy": 1210, "newcomer": 1}


async def test_export_all_streams_with_flat_memory(tmp_path: Path) -> None:
    """Exporting 4x the data does not take more memory: sessions and batches are streamed."""
    path = tmp_path / "big.db"
    async with connect(path) as conn:
        for s in range(8):
            store = SQLiteContextStore(conn, f"s{s}", project="/p")
            for start in range(0, 600, 300):
                await store.append_many(
                    [text("user", secrets.token_hex(1400)) for _ in range(start, start + 300)]
                )

    async def export(ids: list[str] | None, out: Path) -> int:
        async with open_database(path) as db:
            with out.open("wb") as f:
                tracemalloc.start()
                try:
                    await db.export(f.write, format="json", session_ids=ids)
                    return tracemalloc.get_traced_memory()[1]
                finally:
                    tracemalloc.stop()

    small, big = tmp_path / "two.json", tmp_path / "all.json"
    peak_small = await export(["s0", "s1"], small)
    peak_big = await export(None, big)
    assert big.stat().st_size > 13_000_000 and big.stat().st_size > 3.9 * small.stat().st_size
    assert peak_big < 1.3 * peak_small, (peak_small, peak_big)
    assert peak_big < big.stat().st_size / 4, (peak_big, big.stat().st_size)
    assert [len(s.messages) for s in read_json(big.read_bytes())] == [600] * 8


async def test_resolve_latest_and_complete(tmp_path: Path) -> None:
    async with connect(tmp_path / "ids.db") as conn:
        for sid in ("abc-1", "abc-2", "abd", "zzz", "é-unicode"):
            await SQLiteContextStore(conn, sid, project="/p").append(text("user", sid))
    async with open_database(tmp_path / "ids.db", create=False) as db:
        assert await db.resolve("abd") == "abd"
        assert await db.resolve("z") == "zzz"
        assert await db.resolve("é") == "é-unicode"
        with pytest.raises(AmbiguousSessionError) as info:
            await db.resolve("ab")
        assert info.value.candidates == ["abc-1", "abc-2", "abd"]
        with pytest.raises(SessionNotFoundError, match="no session id starts with 'q'"):
            await db.resolve("q")
        with pytest.raises(SessionNotFoundError, match="must not be empty"):
            await db.resolve("")
        assert await db.latest() == "é-unicode"
        assert await db.complete("abc") == ["abc-1", "abc-2"]
        assert await db.complete("", limit=2) == ["é-unicode", "zzz"]


async def test_open_database_without_create_writes_nothing(tmp_path: Path) -> None:
    from axio_context.errors import DatabaseNotFoundError

    with pytest.raises(DatabaseNotFoundError, match="no database at"):
        async with open_database(tmp_path / "sub" / "none.db", create=False):
            pass
    assert not (tmp_path / "sub").exists()


async def test_prune_by_count_and_date_and_only_what_still_qualifies(tmp_path: Path) -> None:
    path = tmp_path / "prune.db"
    async with connect(path) as conn:
        for name in ("old-a", "old-b", "new-c"):
            await SQLiteContextStore(conn, name, project="p").append(text("user", name))
            await asyncio.sleep(0.01)  # distinct update times
    async with open_database(path) as db:
        listed = await db.prune(keep=1, project="p", dry_run=True)
        assert [i.session_id for i in listed] == ["old-b", "old-a"]
        assert len((await db.list_sessions()).sessions) == 3  # a dry run deletes nothing
        # old-b is appended to after it was listed: it now is the newest, and is kept
        await SQLiteContextStore(db.connection, "old-b", project="p").append(text("user", "again"))
        deleted = await db.prune(keep=1, project="p", only=[i.session_id for i in listed])
        assert [i.session_id for i in deleted] == ["old-a"]
        assert sorted(i.session_id for i in (await db.list_sessions()).sessions) == ["new-c", "old-b"]
        with pytest.raises(ValueError, match="needs a date"):
            await db.prune()
