"""The keyword queue: appends queue their messages, a search folds the queue first."""

from __future__ import annotations

from pathlib import Path

import pytest

from axio_context.testing import text
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import appending, indexing
from tests.support.sqlite_checks import scalar


def _queued(path: Path) -> int:
    return int(scalar(path, "SELECT count(*) FROM fts_pending"))


async def test_a_search_sees_every_appended_message(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text("user", "the zebra escaped"))
        await store.append_many([text("assistant", "catch the zebra"), text("user", "no zebra here? yes")])
        assert _queued(db_path) == 3  # nothing indexed yet: appends only queued
        hits = await Database(conn, db_path).search("zebra", mode="keyword")
        assert sorted(h.position for h in hits) == [0, 1, 2]
        assert _queued(db_path) == 0
        await store.append(text("user", "another zebra"))
        hits = await Database(conn, db_path).search("zebra", mode="keyword")
        assert sorted(h.position for h in hits) == [0, 1, 2, 3]


async def test_a_long_queue_is_folded_by_an_append(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexing, "FLUSH_AT", 10)
    # The every-64th count is the process's: earlier tests leave it anywhere, and a first check
    # at one of the 70 appends' 7th to 9th (queue still short) left the next one past the 70th.
    monkeypatch.setattr(appending, "_appends_since_check", 0)
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append_many([text("user", f"okapi {i}") for i in range(9)])
        assert _queued(db_path) == 9
        await store.append_many([text("user", "okapi 9"), text("user", "okapi 10")])
        assert _queued(db_path) == 0
        # one-statement appends check the queue every 64 calls
        for i in range(70):
            await store.append(text("user", f"okapi single {i}"))
        assert _queued(db_path) < 64
        hits = await Database(conn, db_path).search("okapi", mode="keyword", k=100)
        assert len(hits) == 81


async def test_a_large_batch_indexes_itself_and_the_queue(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text("user", "a queued tapir"))
        await store.append_many([text("user", f"tapir {i}") for i in range(indexing.FOLD_BATCH - 1)])
        assert _queued(db_path) == indexing.FOLD_BATCH  # a small batch only queues
        await store.append_many([text("assistant", f"bulk tapir {i}") for i in range(indexing.FOLD_BATCH)])
        assert _queued(db_path) == 0
    # Nothing waits for a writer: even a read-only connection (which cannot fold) finds all.
    async with connect(db_path, readonly=True) as ro:
        hits = await Database(ro, db_path).search("tapir", mode="keyword", k=1000)
        assert sorted(h.position for h in hits) == list(range(2 * indexing.FOLD_BATCH))


async def test_a_read_only_connection_searches_what_is_indexed(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text("user", "indexed lemur"))
        await Database(conn, db_path).search("lemur", mode="keyword")  # folds the queue
        await store.append(text("user", "queued lemur"))
    async with connect(db_path, readonly=True) as ro:
        hits = await Database(ro, db_path).search("lemur", mode="keyword")
        assert [h.position for h in hits] == [0]  # the queued one waits for a writer
    async with open_database(db_path) as db:
        assert sorted(h.position for h in await db.search("lemur", mode="keyword")) == [0, 1]


async def test_a_large_batch_is_indexed_once_even_over_a_stale_queue_entry(db_path: Path) -> None:
    """A batch that indexes itself takes its rows from hand, never through the queue; an entry
    already queued under one of its ids (left by older code) neither doubles its index row nor
    stays queued."""
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text("user", "a first tapir"))
        sid = int(scalar(db_path, "SELECT sid FROM sessions WHERE id = 's'"))
        await Database(conn, db_path).search("tapir", mode="keyword")  # folds the queue
        stale = (sid << 32) | 5
        await conn.execute("INSERT INTO fts_pending (id) VALUES (?)", (stale,))
        await conn.commit()
        # what the batch puts in the queue, seen by a trigger of this connection's own
        await conn.execute("CREATE TEMP TABLE queued_log (id INTEGER)")
        await conn.execute(
            "CREATE TEMP TRIGGER queued_logged AFTER INSERT ON fts_pending"
            " BEGIN INSERT INTO queued_log VALUES (NEW.id); END"
        )
        await store.append_many([text("assistant", f"bulk tapir {i}") for i in range(indexing.FOLD_BATCH)])
        async with conn.execute("SELECT count(*) FROM queued_log") as cur:
            assert (await cur.fetchone()) == (0,)
        assert _queued(db_path) == 0
        assert int(scalar(db_path, "SELECT count(*) FROM messages_fts")) == 1 + indexing.FOLD_BATCH
        hits = await Database(conn, db_path).search("tapir", mode="keyword", k=1000)
        assert sorted(h.position for h in hits) == list(range(1 + indexing.FOLD_BATCH))
