"""Encryption at rest on SQLite (SQLCipher): nothing written is in plaintext in the file, its -wal
or -shm or a backup; search works; every key that does not fit the file is its own one-line error."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from axio_context import Message, TextBlock
from axio_context.backends import connect as connect_location
from axio_context.backends import open_database
from axio_context.encryption import (
    ENV_KEY,
    ENV_KEY_FILE,
    EncryptionKeyError,
    KeyRequiredError,
    NotEncryptedError,
    WrongKeyError,
    parse_key,
    read_key_file,
)
from axio_context.memory.vectors import Document
from axio_context.memory_blocks import MemoryBlock
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.admin.encryption import AlreadyEncryptedError, convert_file

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))
PLANTED = b"PLANTED"


def _text(role: str, words: str) -> Message:
    return Message(role=role, content=[TextBlock(text=words)])  # type: ignore[arg-type]


async def _plant(path: Path, key: bytes | None) -> dict[str, bytes]:
    """Write planted text into every layer, and return the bytes of the file, -wal and -shm read
    while the connection is still open (the WAL not yet copied back)."""
    async with open_database(path, key=key) as db:
        store = db.store("PLANTED-session-id", project="/PLANTED/project")
        await store.append(_text("user", "PLANTED zebra message about the lighthouse"))
        await store.append(_text("assistant", "PLANTED reply on the lighthouse keeper"))
        stores = db.memory_stores()
        await stores.vectors().add(
            [
                Document(
                    id="PLANTED-doc",
                    content="PLANTED vector document",
                    embedding=[0.5, 0.25, 0.125, 1.0],
                    metadata={"k": "PLANTED"},
                )
            ]
        )
        await stores.blobs().upload("PLANTED-blob-key", b"PLANTED blob bytes " * 4)
        await stores.blocks().create(MemoryBlock("PLANTED-label", "PLANTED block value"))
        await db.search("lighthouse", mode="keyword")  # the keyword index holds the words now
        return await asyncio.to_thread(_files, path)


def _files(path: Path) -> dict[str, bytes]:
    """The bytes of the database file, its -wal and its -shm (those that exist), by suffix."""
    return {s: Path(f"{path}{s}").read_bytes() for s in ("", "-wal", "-shm") if Path(f"{path}{s}").exists()}


async def test_nothing_planted_is_in_plaintext_anywhere(tmp_path: Path) -> None:
    plain = await _plant(tmp_path / "plain.db", None)
    assert any(PLANTED in data for data in plain.values())  # the control: a plain file shows it
    path = tmp_path / "secret.db"
    during = await _plant(path, KEY)
    assert set(during) >= {"", "-wal", "-shm"}
    for suffix, data in during.items():
        assert PLANTED not in data, suffix
        assert b"lighthouse" not in data, suffix
    after = path.read_bytes()
    assert PLANTED not in after and not after.startswith(b"SQLite format 3")
    async with open_database(path, key=KEY) as db:
        backup = tmp_path / "backup.db"
        await db.backup(backup)  # type: ignore[attr-defined]
    assert PLANTED not in backup.read_bytes()
    async with open_database(backup, key=KEY) as db:
        assert (await db.info("PLANTED-session-id")).message_count == 2


async def test_search_works_encrypted(tmp_path: Path) -> None:
    path = tmp_path / "secret.db"
    await _plant(path, KEY)
    async with open_database(path, key=KEY) as db:
        hits = (await db.search("lighthouse", mode="keyword")).hits
        assert sorted(h.position for h in hits) == [0, 1]
        found = await db.memory_stores().vectors().get(["PLANTED-doc"])
        assert found[0].content == "PLANTED vector document"
    conn = await connect(path, key=KEY.hex())
    try:
        assert conn.vec_loaded  # sqlite-vec runs under SQLCipher too
        history = await SQLiteContextStore(conn, "PLANTED-session-id").get_history()
        assert history[0].content[0].text.startswith("PLANTED zebra")  # type: ignore[union-attr]
    finally:
        await conn.close()


async def test_every_key_that_does_not_fit_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "secret.db"
    await _plant(path, KEY)
    plain = tmp_path / "plain.db"
    await _plant(plain, None)
    cases: list[tuple[Path, bytes | str | None, type[Exception], str]] = [
        (path, None, KeyRequiredError, "is encrypted: give its key"),
        (path, OTHER, WrongKeyError, "the key does not open"),
        (plain, KEY, NotEncryptedError, "is not encrypted but a key was given"),
        (path, b"short", EncryptionKeyError, "must be 32 bytes, not 5"),
        (path, "ab" * 31, EncryptionKeyError, "64 hexadecimal characters (32 bytes), not 62"),
        (path, "zz" * 32, EncryptionKeyError, "must be 64 hexadecimal characters"),
    ]
    for where, key, error, words in cases:
        for readonly in (False, True):
            with pytest.raises(error) as caught:
                async with open_database(where, key=key, readonly=readonly):
                    pass
            message = str(caught.value)
            assert words in message and "\n" not in message
            assert "file is not a database" not in message
            assert KEY.hex() not in message and OTHER.hex() not in message
    assert PLANTED not in path.read_bytes()  # a wrong key wrote nothing


async def test_key_from_environment_and_key_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.db"
    hex_file = tmp_path / "hex.key"
    hex_file.write_text(KEY.hex() + "\n")
    raw_file = tmp_path / "raw.key"
    raw_file.write_bytes(KEY)
    assert read_key_file(hex_file) == read_key_file(raw_file) == KEY == parse_key(KEY.hex().upper())
    bad = tmp_path / "bad.key"
    bad.write_text("not a key")
    with pytest.raises(EncryptionKeyError, match=r"the key in .*bad\.key must be 64 hexadecimal"):
        read_key_file(bad)
    monkeypatch.setenv(ENV_KEY_FILE, str(hex_file))
    await _plant(path, None)  # the environment's key
    assert PLANTED not in path.read_bytes()
    monkeypatch.delenv(ENV_KEY_FILE)
    monkeypatch.setenv(ENV_KEY, KEY.hex())
    handle = await connect_location(str(path))
    await handle.close()
    monkeypatch.setenv(ENV_KEY, OTHER.hex())
    with pytest.raises(WrongKeyError):
        await connect_location(str(path))


async def _hits(path: Path, key: bytes | None) -> int:
    async with open_database(path, key=key) as db:
        return len((await db.search("lighthouse", mode="keyword")).hits)


async def _append_and_count(path: Path, key: bytes | None, append: bool) -> int:
    async with open_database(path, key=key) as db:
        if append:
            await db.store("PLANTED-session-id").append(_text("user", "after rekey"))
        assert (await db.memory_stores().blobs().download("PLANTED-blob-key"))[0].startswith(PLANTED)
        return (await db.info("PLANTED-session-id")).message_count


def test_encrypt_rekey_decrypt_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    asyncio.run(_plant(path, None))
    convert_file(path, None, KEY)
    assert PLANTED not in path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]  # no -wal, -shm or temporary left
    with pytest.raises(AlreadyEncryptedError):
        convert_file(path, None, OTHER)
    with pytest.raises(WrongKeyError):
        convert_file(path, OTHER, KEY)
    with pytest.raises(EncryptionKeyError, match="same as the current one"):
        convert_file(path, KEY, KEY)
    convert_file(path, KEY, OTHER)
    assert asyncio.run(_hits(path, OTHER)) == 2
    assert asyncio.run(_append_and_count(path, OTHER, True)) == 3
    with pytest.raises(WrongKeyError):
        asyncio.run(_hits(path, KEY))
    convert_file(path, OTHER, None)
    assert PLANTED in path.read_bytes()
    with pytest.raises(NotEncryptedError):
        convert_file(path, KEY, None)
    assert asyncio.run(_append_and_count(path, None, False)) == 3
    assert asyncio.run(_hits(path, None)) == 2


def test_convert_refuses_a_file_another_process_has_open(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    asyncio.run(_plant(path, None))
    script = (
        "import sqlean, sys; c = sqlean.connect(sys.argv[1]);"
        " c.execute('select count(*) from sessions').fetchall(); print('open', flush=True); sys.stdin.read()"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(Exception, match="is in use by another program"):
            convert_file(path, None, KEY)
    finally:
        holder.communicate("")
    assert path.read_bytes().startswith(b"SQLite format 3")


async def test_the_browser_opens_an_encrypted_file(tmp_path: Path) -> None:
    from textual.widgets import DataTable

    from axio_context_sqlite.tui.app import BrowserApp

    path = tmp_path / "secret.db"
    await _plant(path, KEY)
    app = BrowserApp(path, poll_interval=0.05, retry_interval=0.05, key=KEY)
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(400):  # a failsafe bound, not a timing assertion
            table = app.screen.query("#sessions")
            if table and app.screen.query_one("#sessions", DataTable).row_count == 1:
                break
            await pilot.pause(0.02)
        rows = app.screen.query_one("#sessions", DataTable).ordered_rows
        assert [r.key.value for r in rows] == ["PLANTED-session-id"]
