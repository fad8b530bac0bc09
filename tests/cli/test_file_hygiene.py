"""What the files on disk look like after the library and the commands: the data folder is its
owner's only, whatever the umask, and a command that only reads leaves nothing beside the
database (no ``-wal``, no ``-shm``) and the file as it was, without disturbing a writer."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.cli_helpers import invoke, make_sessions


@pytest.fixture
def umask_000() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_connect_makes_the_data_folders_owner_only(tmp_path: Path, umask: int) -> None:
    async def go() -> None:
        async with connect(tmp_path / "home" / "data" / "axio" / "context.db"):
            pass

    old = os.umask(umask)
    try:
        asyncio.run(go())
    finally:
        os.umask(old)
    for folder in ("home", "home/data", "home/data/axio"):
        assert _mode(tmp_path / folder) == 0o700, folder
    assert _mode(tmp_path / "home/data/axio/context.db") == 0o600


def test_an_existing_folder_keeps_its_mode(tmp_path: Path, umask_000: None) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)

    async def go() -> None:
        async with connect(shared / "context.db"):
            pass

    asyncio.run(go())
    assert _mode(shared) == 0o755  # not ours to change


def test_the_cli_default_database_folder_is_owner_only(tmp_path: Path, umask_000: None) -> None:
    db = tmp_path / "cli" / "context.db"  # $AXIO_CONTEXT_DB (tests/conftest.py)
    make_sessions(db, {"s1": [text("user", "hello")]})
    assert _mode(db.parent) == 0o700


READERS = [
    ["info"],
    ["info", "--json"],
    ["list-sessions"],
    ["list-sessions", "--tree"],
    ["stats"],
    ["show", "s1"],
    ["show", "s1", "--json"],
    ["title", "s1"],
    ["index"],
    ["export", "s1"],
    ["state", "s1"],
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_command_that_only_reads_leaves_nothing_beside_the_database(
    tmp_path: Path, args: list[str]
) -> None:
    db = tmp_path / "context.db"
    make_sessions(db, {"s1": [text("user", "hello"), text("assistant", "hi")]})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.db"]
    before = _digest(db)
    invoke("--db", db, *args, ok=args[0] != "state")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.db"], args
    assert _digest(db) == before


def test_a_reader_leaves_a_writers_files_alone(tmp_path: Path) -> None:
    db = tmp_path / "context.db"
    make_sessions(db, {"s1": [text("user", "hello")]})

    async def go() -> None:
        async with connect(db) as conn:  # a writer with the database open: its -wal and -shm
            store = SQLiteContextStore(conn, "s1", project="p")
            await store.append(text("user", "while it is open"))
            assert (tmp_path / "context.db-wal").exists() and (tmp_path / "context.db-shm").exists()
            out = await asyncio.to_thread(lambda: invoke("--db", db, "show", "s1").stdout)
            assert "while it is open" in out
            assert (tmp_path / "context.db-wal").exists() and (tmp_path / "context.db-shm").exists()
            await store.append(text("assistant", "and after"))
        assert len(await _history(db)) == 3

    asyncio.run(go())


async def _history(db: Path) -> list[object]:
    async with connect(db) as conn:
        return list(await SQLiteContextStore(conn, "s1", project="p").get_history())
