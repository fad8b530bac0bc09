"""The file's layout (issue 32): a new plain database is made with the page size chosen in
:data:`~axio_context_sqlite.store.driver.PAGE_SIZE` (SQLite's default, see why there), and a
database made with another page size keeps it and keeps working."""

from __future__ import annotations

from pathlib import Path

import sqlean

from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.store.driver import PAGE_SIZE
from axio_context_sqlite.store.schema import APPLICATION_ID
from tests.support.sqlite_checks import text_message, texts


def _pragma(path: Path, name: str) -> int:
    raw = sqlean.connect(str(path))
    try:
        return int(raw.execute(f"PRAGMA {name}").fetchone()[0])
    finally:
        raw.close()


async def test_a_new_database_has_the_chosen_pages(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    assert _pragma(db_path, "page_size") == PAGE_SIZE == 4096
    assert _pragma(db_path, "auto_vacuum") == 2  # incremental: vacuum needs no copy


async def test_a_database_made_with_other_pages_keeps_them_and_works(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = sqlean.connect(str(db_path), isolation_level=None)
    raw.execute("PRAGMA page_size = 1024")
    raw.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # ours, not yet given a schema
    raw.close()
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    async with connect(db_path) as conn:
        assert texts(await SQLiteContextStore(conn, "s", project="p").get_history()) == ["hello"]
    assert _pragma(db_path, "page_size") == 1024
