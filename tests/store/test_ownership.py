"""Whose file it is: another application's SQLite file is refused and left exactly as it was;
only an empty or missing file becomes ours, and only when opened for writing. Read-only opening
never writes anything (no file, no folder, no schema)."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from axio_context.errors import CorruptDatabaseError, DatabaseNotFoundError, SchemaVersionError
from axio_context_sqlite import SCHEMA_VERSION, SQLiteContextStore, connect, open_database
from axio_context_sqlite.errors import EmptyDatabaseError, ForeignDatabaseError
from axio_context_sqlite.store.calls import run
from axio_context_sqlite.store.schema import APPLICATION_ID
from tests.fixtures.make_fixture import load
from tests.support.sqlite_checks import scalar, text_message

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _fingerprint(path: Path) -> tuple[str, int, list[str]]:
    """Bytes, modification time, and the folder's listing (no -wal/-shm/-journal appeared)."""
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        path.stat().st_mtime_ns,
        sorted(p.name for p in path.parent.iterdir()),
    )


def _foreign(path: Path, *, application_id: int = 0, tables: tuple[str, ...] = ("notes",)) -> None:
    """Another application's database (stdlib sqlite3: rollback journal, its own tables)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    for table in tables:
        db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, body TEXT)")
        db.execute(f"INSERT INTO {table} (body) VALUES ('theirs')")
    db.execute("PRAGMA user_version = 3")  # a version number of theirs, below ours
    if application_id:
        db.execute(f"PRAGMA application_id = {application_id}")
    db.commit()
    db.close()


@pytest.mark.parametrize("readonly", [False, True], ids=["write", "readonly"])
async def test_foreign_sqlite_file_is_refused_and_left_unchanged(db_path: Path, readonly: bool) -> None:
    await asyncio.to_thread(_foreign, db_path)
    before = _fingerprint(db_path)
    with pytest.raises(
        ForeignDatabaseError, match=rf"^{db_path} is an SQLite database of another application"
    ):
        await connect(db_path, readonly=readonly)
    assert _fingerprint(db_path) == before
    assert scalar(db_path, "PRAGMA journal_mode") == "delete"  # not switched to WAL
    assert scalar(db_path, "PRAGMA application_id") == 0


async def test_file_of_another_application_id_is_refused_even_with_tables_named_like_ours(
    db_path: Path,
) -> None:
    await asyncio.to_thread(
        _foreign,
        db_path,
        application_id=0x12345678,
        tables=("sessions", "messages", "checkpoints", "settings"),
    )
    before = _fingerprint(db_path)
    with pytest.raises(ForeignDatabaseError, match="0x12345678"):
        await connect(db_path)
    assert _fingerprint(db_path) == before


async def test_foreign_file_is_refused_through_an_adopted_aiosqlite_connection(db_path: Path) -> None:
    await asyncio.to_thread(_foreign, db_path)
    before = _fingerprint(db_path)
    async with aiosqlite.connect(db_path) as plain:
        with pytest.raises(ForeignDatabaseError):
            await SQLiteContextStore(plain, "s", project="p").get_history()
    assert _fingerprint(db_path) == before


async def test_non_sqlite_file_is_still_refused(db_path: Path) -> None:
    await asyncio.to_thread(db_path.parent.mkdir, parents=True)
    await asyncio.to_thread(db_path.write_bytes, b"just some text, not a database\n" * 100)
    before = _fingerprint(db_path)
    with pytest.raises(CorruptDatabaseError, match="not a database"):
        await connect(db_path)
    assert _fingerprint(db_path) == before


async def test_new_and_empty_files_become_ours_marked_with_our_application_id(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    assert scalar(db_path, "PRAGMA application_id") == APPLICATION_ID
    empty = db_path.with_name("empty.db")
    await asyncio.to_thread(empty.touch)
    async with connect(empty) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    assert scalar(empty, "PRAGMA application_id") == APPLICATION_ID
    assert scalar(empty, "PRAGMA user_version") == SCHEMA_VERSION


async def test_database_from_before_the_mark_is_ours_and_gets_marked(tmp_path: Path) -> None:
    path = tmp_path / "v5.db"
    await asyncio.to_thread(load, (FIXTURES / "schema_v5.sql").read_text(), path)
    assert scalar(path, "PRAGMA application_id") == 0
    async with connect(path) as conn:
        assert await SQLiteContextStore(conn, "beta-long", project="beta").get_history()
    assert scalar(path, "PRAGMA application_id") == APPLICATION_ID
    assert scalar(path, "PRAGMA user_version") == SCHEMA_VERSION


# --- read-only opening -----------------------------------------------------------------------------


async def test_readonly_open_of_a_missing_path_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "no" / "such" / "folder" / "context.db"
    with pytest.raises(DatabaseNotFoundError, match=f"no database at {path}"):
        await connect(path, readonly=True)
    with pytest.raises(DatabaseNotFoundError):
        async with open_database(path, readonly=True):
            pass
    assert await asyncio.to_thread(lambda: list(tmp_path.iterdir())) == []  # not even the folder


async def test_readonly_open_of_an_empty_file_writes_no_schema(db_path: Path) -> None:
    await asyncio.to_thread(db_path.parent.mkdir, parents=True)
    await asyncio.to_thread(db_path.touch)
    before = _fingerprint(db_path)
    with pytest.raises(EmptyDatabaseError, match="no database yet"):
        await connect(db_path, readonly=True)
    with pytest.raises(DatabaseNotFoundError):  # what the CLI turns into "no sessions yet"
        async with open_database(db_path, readonly=True):
            pass
    assert _fingerprint(db_path) == before
    assert _fingerprint(db_path)[0] == hashlib.sha256(b"").hexdigest()


async def test_readonly_database_reads_and_leaves_the_file_unchanged(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    before = _fingerprint(db_path)
    async with open_database(db_path, readonly=True) as db:
        page = await db.list_sessions()
        assert [s.session_id for s in page.sessions] == ["s"]
        assert (await db.stats()).sessions == 1
    assert _fingerprint(db_path)[:2] == before[:2]


async def test_run_on_a_readonly_connection_of_an_old_database_is_refused_without_writing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v5.db"
    await asyncio.to_thread(load, (FIXTURES / "schema_v5.sql").read_text(), path)
    before = _fingerprint(path)
    with pytest.raises(SchemaVersionError, match="needs an upgrade"):
        async with connect(path, readonly=True) as conn:
            await run(conn, lambda raw: None)
    assert _fingerprint(path) == before
