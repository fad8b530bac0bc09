"""sqlite-vec on a cold open (issue 32): once this process proved the library, a database with no
``vec0`` table opens without loading it; the first use of the codes loads it, and a database that
holds codes loads it at the open, as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from axio_context.embeddings import HashingEmbedder
from axio_context.testing import text
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.database import Database, open_database
from axio_context_sqlite.store.driver import driver_errors
from axio_context_sqlite.store.vec import probe_sqlite_vec


async def _vec_runs(conn: Connection) -> bool:
    try:
        await conn.execute_fetchall("SELECT vec_version()")
    except driver_errors():
        return False
    return True


@pytest.fixture
async def proven(tmp_path: Path) -> None:
    """A connection in this process, which proves sqlite-vec (if no earlier one did)."""
    async with connect(tmp_path / "first.db") as conn:
        assert conn.vec_loaded


@pytest.mark.usefixtures("proven")
async def test_a_database_without_codes_opens_without_loading_it(db_path: Path) -> None:
    async with connect(db_path) as conn:
        assert conn.vec_loaded  # it runs here: an embedder's appends compute codes
        assert not await _vec_runs(conn)  # but it is not loaded yet
        store = SQLiteContextStore(conn, "s", "/p", embedder=HashingEmbedder())
        await store.append_many([text("user", f"parser note {i}") for i in range(5)])
        assert await _vec_runs(conn)  # the codes' first use loaded it
        assert await conn.execute_fetchall("SELECT count(*) FROM message_codes") == [(5,)]
    async with connect(db_path) as conn:
        assert await _vec_runs(conn)  # a database with codes loads it at the open
    async with open_database(db_path) as db:
        assert (await db.index_status()).semantic == "vec0"
        hits = await db.search("parser note", mode="semantic", k=3)
        assert len(hits) == 3


@pytest.mark.usefixtures("proven")
async def test_a_deferred_load_serves_semantic_search_and_its_status(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", "/p", embedder=HashingEmbedder())
        await store.append_many([text("user", f"parser note {i}") for i in range(3)])
        await conn.execute("DROP TABLE message_codes")  # as a database whose codes went stale
    async with connect(db_path) as conn:
        assert not await _vec_runs(conn)
        assert (await Database(conn, db_path).index_status()).vec_available
        assert await _vec_runs(conn)


def test_the_probe_still_runs_on_a_connection_of_its_own() -> None:
    import sqlean

    raw = sqlean.connect(":memory:")
    try:
        assert not probe_sqlite_vec(raw)  # not loaded on a plain connection: the probe says so
    finally:
        raw.close()
