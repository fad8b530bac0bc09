"""The layout of the stored vectors: the sqlite-vec codes table without the project column no search
read, an older table with it still written to and searched, and rebuilt smaller by ``reindex``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from axio_context.embeddings import HashingEmbedder, Vector
from axio_context.testing import text
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store.vec import code_bits, load_sqlite_vec
from tests.support.sqlite_checks import raw_connect

TOPICS = ("parser brackets", "cache invalidation", "socket timeout", "unicode escapes", "index migration")


def codes_sql(path: Path) -> str:
    raw = raw_connect(path)
    try:
        row = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'message_codes'").fetchone()
        return str(row[0])
    finally:
        raw.close()


async def fill(path: Path, sessions: int = 4, per: int = 40) -> None:
    async with connect(path) as conn:
        for s in range(sessions):
            store = SQLiteContextStore(
                conn, f"s{s}", f"/work/project-with-a-long-name-{s % 2}", embedder=HashingEmbedder()
            )
            await store.append_many(
                [text("user" if i % 2 else "assistant", f"{TOPICS[i % 5]} note {s}-{i}") for i in range(per)]
            )


async def fork_and_delete_parent(db: Database) -> str:
    """Fork s1, then delete s1: the fork's inherited rows, and their codes, are copied to it."""
    parent = SQLiteContextStore(
        db.connection, "s1", "/work/project-with-a-long-name-1", embedder=HashingEmbedder()
    )
    child = await parent.fork()
    assert await parent.delete_session()
    hits = await db.search("unicode escapes", mode="semantic", session_id=child.session_id, k=40)
    assert hits and all(h.session_id == child.session_id for h in hits)
    # the 8 messages of the fork on this topic first (positions 3, 8, ... 38)
    assert sorted(h.position for h in hits[:8]) == list(range(3, 40, 5))
    space = await db.vector_space()
    raw = raw_connect(db.path)
    try:
        assert load_sqlite_vec(raw)
        assert raw.execute("SELECT COUNT(*) FROM message_codes").fetchone()[0] == space.embedded
    finally:
        raw.close()
    return child.session_id


def make_outdated(path: Path) -> int:
    """Rewrite the codes table in the layout older databases have (with a project column); returns
    how many codes it holds."""
    raw = raw_connect(path)
    try:
        assert load_sqlite_vec(raw)
        rows = raw.execute(
            "SELECT c.rowid, c.sid, s.project, c.role, c.created_at, c.code FROM message_codes c"
            " JOIN sessions s ON s.sid = c.sid"
        ).fetchall()
        raw.execute("DROP TABLE message_codes")
        raw.execute(
            "CREATE VIRTUAL TABLE message_codes USING vec0(sid integer, project text, role integer,"
            f" created_at integer, code bit[{code_bits(384)}])"
        )
        raw.executemany(
            "INSERT INTO message_codes (rowid, sid, project, role, created_at, code)"
            " VALUES (?, ?, ?, ?, ?, vec_bit(?))",
            rows,
        )
        raw.commit()
        return len(rows)
    finally:
        raw.close()


async def test_the_codes_table_keeps_no_project_column(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    await fill(path)
    sql = codes_sql(path)
    assert "project" not in sql and "sid integer" in sql and f"bit[{code_bits(384)}]" in sql
    async with open_database(path) as db:
        hits = await db.search(
            "socket timeout", mode="semantic", project="/work/project-with-a-long-name-1", k=5
        )
        assert hits and all(h.project == "/work/project-with-a-long-name-1" for h in hits)
        assert all("socket timeout" in h.snippet for h in hits)
        status = await db.index_status()
        assert (status.semantic, status.codes_stale) == ("vec0", False)
        await fork_and_delete_parent(db)


async def test_an_older_codes_table_is_used_until_reindex_rebuilds_it_smaller(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    await fill(path)
    assert make_outdated(path) == 160
    assert "project text" in codes_sql(path)
    async with open_database(path) as db:
        # still written to in its own layout: an append with an embedder
        store = SQLiteContextStore(db.connection, "late", "/work/late", embedder=HashingEmbedder())
        await store.append(text("user", "cache invalidation late note"))
        await fork_and_delete_parent(db)
        status = await db.index_status()
        assert (status.semantic, status.codes_stale) == ("vec0", False)
        hits = await db.search("cache invalidation late note", mode="semantic", k=3)
        assert (hits[0].session_id, hits[0].position) == ("late", 0)
        before = [(h.session_id, h.position) for h in await db.search("cache invalidation", mode="semantic")]
        assert len(before) == 10
        old_space = await db.vector_space()
        report = await db.reindex(HashingEmbedder())
        assert report.embedded == 0 and report.codes_added == old_space.embedded and not report.codes_stale
        assert "project" not in codes_sql(path)
        new_space = await db.vector_space()
        assert new_space.embedded == old_space.embedded
        assert new_space.codes < old_space.codes  # the project text and its index are gone
        after = [(h.session_id, h.position) for h in await db.search("cache invalidation", mode="semantic")]
        assert after == before  # 161 messages: every one a candidate, so the same exact ranking
        again = await db.reindex(HashingEmbedder())
        assert (again.codes_added, again.codes_removed) == (0, 0)
        assert (await db.search("parser brackets", mode="semantic", k=50)).not_embedded == 0


class Counting:
    """Wraps an embedder and records every text it is asked to embed."""

    def __init__(self, inner: HashingEmbedder) -> None:
        self.inner = inner
        self.seen: list[str] = []
        self.model, self.dimension = inner.model, inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.seen += texts
        return await self.inner.embed(texts)


async def test_each_distinct_text_of_a_batch_is_embedded_once(tmp_path: Path) -> None:
    path = tmp_path / "twins.db"
    repeated = ["tests passed", "continue", "tests passed", "FileNotFoundError: config.toml", "continue"]
    appending = Counting(HashingEmbedder())
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "on-append", "/p", embedder=appending)
        await store.append_many([text("user", t) for t in repeated])
        await SQLiteContextStore(conn, "later", "/p").append_many([text("user", t) for t in repeated * 3])
    assert sorted(appending.seen) == sorted(set(repeated))
    async with open_database(path) as db:
        reindexing = Counting(HashingEmbedder())
        report = await db.reindex(reindexing, batch_size=8)
        assert report.embedded == 15 and report.codes_added == 0
        # two batches of 8 and 7 messages: each distinct text once per batch
        assert len(reindexing.seen) == 6 and set(reindexing.seen) == set(repeated)
        assert (await db.vector_space()).embedded == 20
        twins = await db.similar("later", 0, k=10)
        same = [h for h in twins if h.score > 0.999]
        assert {(h.session_id, h.position) for h in same} == {
            ("later", 5),
            ("later", 10),
            ("on-append", 0),
            ("on-append", 2),
            ("later", 2),
            ("later", 7),
            ("later", 12),
        }
