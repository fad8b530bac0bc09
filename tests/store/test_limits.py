"""Limits the store enforces: token totals stay within 0..2**63-1, session ids are at most
MAX_SESSION_ID characters, and a file-size limit is reported as "file too large"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context_sqlite import Connection, Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.errors import MAX_SESSION_ID, SessionIdError, TokenTotalError
from tests.support.sqlite_checks import raw_connect, scalar, text_message

ROOT = Path(__file__).resolve().parents[2]
FILE_LIMIT = ROOT / "tests" / "procs" / "file_limit.py"
MAX = (1 << 63) - 1


# --- token totals ----------------------------------------------------------------------------------


async def test_adding_below_zero_is_refused_and_changes_nothing(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    with pytest.raises(TokenTotalError, match=r"input_tokens .* total -1, outside 0"):
        await store.add_context_tokens(-1, 0)
    assert await store.list_sessions() == []  # the refused first write created no session
    await store.add_context_tokens(10, 20)
    with pytest.raises(TokenTotalError, match="output_tokens"):
        await store.add_context_tokens(5, -21)
    assert await store.get_context_tokens() == (10, 20)  # neither total moved
    await store.add_context_tokens(-10, -20)  # down to exactly zero is fine
    assert await store.get_context_tokens() == (0, 0)


async def test_adding_past_the_64_bit_limit_is_refused_and_totals_stay_integers(
    conn: Connection, db_path: Path
) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.add_context_tokens(MAX - 1, 7)
    await store.add_context_tokens(1, 0)  # exactly the limit is fine
    for args in [(1, 0), (MAX, 0), (0, MAX)]:
        with pytest.raises(TokenTotalError, match=f"outside 0..{MAX}"):
            await store.add_context_tokens(*args)
    assert await store.get_context_tokens() == (MAX, 7)
    await store.add_context_tokens(-1, 1)  # later additions still count exactly
    assert await store.get_context_tokens() == (MAX - 1, 8)
    assert (
        scalar(db_path, "SELECT typeof(input_tokens) || typeof(output_tokens) FROM sessions")
        == "integerinteger"
    )


async def test_refused_addition_on_a_session_created_meanwhile_changes_nothing(conn: Connection) -> None:
    """The upsert branch (the UPDATE found no row, another writer created it): same rule."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.set_context_tokens(MAX, 0)
    other = SQLiteContextStore(conn, "t", project="p")
    await other.add_context_tokens(3, 4)
    with pytest.raises(TokenTotalError):
        await store.add_context_tokens(1, 1)
    assert await store.get_context_tokens() == (MAX, 0)
    assert await other.get_context_tokens() == (3, 4)


# --- session ids -----------------------------------------------------------------------------------


async def test_session_id_longer_than_the_limit_is_refused_on_create(conn: Connection) -> None:
    long_id = "x" * (MAX_SESSION_ID + 1)
    store = SQLiteContextStore(conn, long_id, project="p")
    with pytest.raises(SessionIdError, match=f"longer than {MAX_SESSION_ID} characters"):
        await store.append(text_message("hello"))
    with pytest.raises(SessionIdError):
        await store.add_context_tokens(1, 1)
    with pytest.raises(SessionIdError):
        await SQLiteContextStore(conn, "é" * (MAX_SESSION_ID + 1), project="p").set_title("t")
    assert await store.list_sessions() == []
    # At the limit (characters, not bytes), and every short id as before: accepted.
    for ok in ("é" * MAX_SESSION_ID, "s", "with spaces/and:colons", "tab\tinside"):
        await SQLiteContextStore(conn, ok, project="p").append(text_message("kept"))
    assert len(await store.list_sessions()) == 4


async def test_session_id_limit_holds_for_fork_rename_and_import(db_path: Path, tmp_path: Path) -> None:
    long_id = "y" * (MAX_SESSION_ID + 1)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    async with open_database(db_path) as db:
        with pytest.raises(SessionIdError):
            await db.fork("s", long_id)
        with pytest.raises(SessionIdError):
            await db.rename("s", long_id)
        export = tmp_path / "export.json"
        chunks: list[bytes] = []
        await db.export(chunks.append, session_ids=["s"])
        data = json.loads(b"".join(chunks))
        text = json.dumps(data).replace('"s"', json.dumps(long_id))
        export.write_text(text)
        with pytest.raises(SessionIdError):
            await db.import_file(export, new_ids=False)
        assert [s.session_id for s in (await db.list_sessions()).sessions] == ["s"]
        assert await _texts(db, "s") == ["hello"]


async def _texts(db: Database, session_id: str) -> list[str]:
    view = await db.show(session_id)
    return [m.message().text for m in view.messages]


async def test_ids_stored_before_the_limit_stay_readable(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("hello"))
    long_id = "z" * 2000
    db = raw_connect(db_path)  # a database from before the limit held such an id
    db.execute("DROP TRIGGER sessions_id_limit_update")
    db.execute("UPDATE sessions SET id = ? WHERE id = 's'", (long_id,))
    db.commit()
    db.close()
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, long_id, project="p")
        assert [m.text for m in await store.get_history()] == ["hello"]
        await store.append(text_message("and more"))
        assert len(await store.get_history()) == 2


# --- file-size limit -------------------------------------------------------------------------------


def test_file_size_limit_is_reported_as_file_too_large(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(FILE_LIMIT), str(tmp_path), str(1 << 20)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"].startswith("FileTooLargeError: file too large ("), out["error"]
    assert "file-size limit of 1048576 bytes" in out["error"]
    assert out["batches"] >= 1
    # Every batch that returned reads back whole; the refused one left nothing behind.
    assert out["stored"] == [f"m{i}.{j}" for i in range(out["batches"]) for j in range(3)]
