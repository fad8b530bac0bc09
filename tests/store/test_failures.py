"""Failure modes: each one a clear named error, and nothing else damaged.

Read-only files and folders are exercised for real. Root ignores file permissions, so when the
suite runs as root the probe runs in a subprocess under ``setpriv`` with the capabilities that
bypass permission checks (DAC override, DAC read-search, fowner) removed from its bounding set:
still uid 0 and owner of the files, but bound by their mode bits like any user.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
import sqlean

from axio_context import ImageBlock, Message, TextBlock
from axio_context.errors import (
    CorruptDatabaseError,
    CorruptDataError,
    DatabaseError,
    DatabaseLockedError,
    DatabaseNotFoundError,
    DatabaseOpenError,
    ReadOnlyDatabaseError,
    SchemaVersionError,
    SearchQueryError,
)
from axio_context_sqlite import SCHEMA_VERSION, Database, SQLiteContextStore, connect
from axio_context_sqlite.errors import translate_error
from tests.support.lock_holder import LockHolder, holding_lock
from tests.support.sqlite_checks import check_storage, raw_connect, text_message, texts

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).resolve().parents[1] / "procs" / "ro_probe.py"


def snapshot(path: Path) -> tuple[str, int, list[str]]:
    """The file's content hash, its mtime, and what lies beside it."""
    return (
        hashlib.sha256(path.read_bytes()).hexdigest(),
        path.stat().st_mtime_ns,
        sorted(p.name for p in path.parent.iterdir()),
    )


def settle(path: Path) -> None:
    """Checkpoint the WAL into the main file and close, so the file alone holds everything."""
    db = raw_connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


# --- read-only files and folders --------------------------------------------------------------


def _unprivileged() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: file permissions cannot be made to apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner"]


def probe(action: str, db: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [*_unprivileged(), sys.executable, str(PROBE), action, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``axio-context`` command on ``db``, as the probe's unprivileged user."""
    return subprocess.run(
        [*_unprivileged(), sys.executable, "-m", "axio_context_sqlite", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"},
    )


def test_permissions_really_apply_to_the_probe(tmp_path: Path) -> None:
    """Guard: the mechanism above must stop writes, or the read-only tests prove nothing."""
    target = tmp_path / "f"
    target.write_text("x")
    target.chmod(0o444)
    code = f"open({str(target)!r}, 'a')"
    proc = subprocess.run([*_unprivileged(), sys.executable, "-c", code], capture_output=True, text=True)
    assert "PermissionError" in proc.stderr


WRITES = ("append", "tokens", "fork", "title")


def test_read_only_database_file(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    assert probe("make", db) == {"make": "ok"}
    settle(db)
    db.chmod(0o444)
    before = snapshot(db)

    out = probe("probe", db)
    # Reading works; every kind of write is refused with the named error naming the file.
    assert out["connect"] == out["read"] == out["ro_connect"] == out["ro_read"] == "ok"
    assert out["texts"] == out["ro_texts"] == ["one", "two"]
    for name in WRITES:
        for key in (name, f"ro_{name}"):
            assert out[key].startswith("ReadOnlyDatabaseError: "), (key, out[key])
            assert str(db) in out[key]
    assert snapshot(db)[0] == before[0]  # the database's bytes did not change

    # Nothing else damaged: once the file is writable again, so is the database, data intact
    # (SQLite gave the -wal/-shm it created while the file was read-only the file's mode).
    db.chmod(0o600)
    after = probe("after", db)
    assert after == {"append": "ok", "texts": ["one", "two", "after"], "tokens": [3, 4]}
    check_storage(db)


def test_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    db = folder / "ro.db"
    assert probe("make", db) == {"make": "ok"}
    settle(db)
    before = snapshot(db)
    folder.chmod(0o555)
    try:
        out = probe("probe", db)
        # WAL needs its -shm beside the file: without a writable folder a writable connection is
        # refused, with the named error naming the file. A read-only one reads the file alone
        # (it holds everything: no -wal), and refuses every write.
        assert out["connect"].startswith("ReadOnlyDatabaseError: ")
        assert str(db) in out["connect"]
        assert out["ro_connect"] == out["ro_read"] == "ok"
        assert out["ro_texts"] == ["one", "two"]
        for name in WRITES:
            assert out[f"ro_{name}"].startswith("ReadOnlyDatabaseError: "), (name, out[f"ro_{name}"])
        assert snapshot(db) == before
        # The command line's read commands fall back to that read-only connection.
        listed = _cli(db, "show", "s")
        assert listed.returncode == 0, listed.stderr
        assert "one" in listed.stdout and "two" in listed.stdout
        assert snapshot(db) == before

        new = probe("probe", folder / "new.db")
        assert new["connect"].startswith("DatabaseOpenError: ")
        assert "new.db" in new["connect"]
        assert new["ro_connect"].startswith("DatabaseNotFoundError: ")
        deeper = probe("probe", folder / "sub" / "new.db")
        assert deeper["connect"].startswith("DatabaseOpenError: ")
        assert snapshot(db) == before
    finally:
        folder.chmod(0o755)
    assert probe("after", db) == {"append": "ok", "texts": ["one", "two", "after"], "tokens": [3, 4]}


def test_read_only_folder_with_changes_still_in_the_wal(tmp_path: Path) -> None:
    """Committed changes still in the -wal of a read-only folder: read through its -shm when
    that is there; without it SQLite cannot read them, and the error says what to do (never the
    file alone, which would be a stale view)."""
    folder = tmp_path / "locked"
    db = folder / "ro.db"
    wal, shm = db.with_name("ro.db-wal"), db.with_name("ro.db-shm")
    assert probe("make", db) == {"make": "ok"}
    settle(db)
    assert probe("unclosed", db) == {"unclosed": "ok"}
    assert wal.stat().st_size > 0 and shm.exists()
    folder.chmod(0o555)
    try:
        out = probe("probe", db)
        # The -wal and -shm themselves are writable: a writable connection may still append.
        assert out["append"] == "ok"
        assert out["ro_connect"] == "ok"
        assert out["ro_texts"] == ["one", "two", "late", "new"]
        assert out["ro_append"].startswith("ReadOnlyDatabaseError: ")

        folder.chmod(0o755)
        shm.unlink()
        folder.chmod(0o555)
        before = snapshot(db)
        out = probe("probe", db)
        assert out["connect"].startswith("DatabaseOpenError: ")
        assert out["ro_connect"].startswith("ReadOnlyDatabaseError: ")
        assert str(db) in out["ro_connect"] and "ro.db-wal" in out["ro_connect"]
        assert "writable folder" in out["ro_connect"]
        shown = _cli(db, "show", "s")
        assert shown.returncode == 1
        assert shown.stderr.startswith("Error: cannot read ") and "writable folder" in shown.stderr
        assert snapshot(db) == before and wal.stat().st_size > 0
    finally:
        folder.chmod(0o755)
    after = probe("after", db)
    assert after["texts"] == ["one", "two", "late", "new", "after"]
    check_storage(db)


async def test_readonly_connection_refuses_writes_and_changes_nothing(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append_many(
            [text_message("one"), text_message("two")]
        )
    settle(db_path)
    before = snapshot(db_path)[0]

    async with connect(db_path, readonly=True) as ro:
        store = SQLiteContextStore(ro, "s", project="p")
        assert texts(await store.get_history()) == ["one", "two"]
        for write in (
            lambda: store.append(text_message("x")),
            lambda: store.append_many([text_message("x"), text_message("y")]),
            lambda: store.add_context_tokens(1, 1),
            lambda: store.set_context_tokens(1, 1),
            store.fork,
            store.clear,
            store.pop,
            store.delete_session,
            lambda: store.set_metadata({"a": 1}),
            lambda: SQLiteContextStore(ro, "new", project="p").append(text_message("x")),
        ):
            with pytest.raises(ReadOnlyDatabaseError, match="read-only"):
                await write()
        assert texts(await store.get_history()) == ["one", "two"]
    assert snapshot(db_path)[0] == before
    with pytest.raises(DatabaseNotFoundError):
        await connect(db_path.with_name("missing.db"), readonly=True)
    assert not db_path.with_name("missing.db").exists()


# --- a lock held by another process -----------------------------------------------------------


async def test_lock_held_past_the_busy_timeout(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
    with holding_lock(db_path) as holder:
        await _contend(db_path, holder)
    db = raw_connect(db_path)
    assert db.execute("SELECT value FROM settings WHERE key = 'held'").fetchone() == ("yes",)
    db.close()
    assert check_storage(db_path) == {"s": 2}


async def _contend(db_path: Path, holder: LockHolder) -> None:
    async with connect(db_path, busy_timeout=0.2) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        for write in (
            lambda: store.append(text_message("blocked")),
            lambda: store.append_many([text_message("b1"), text_message("b2")]),
            lambda: store.add_context_tokens(5, 5),
            store.fork,
            store.pop,
            lambda: store.set_title("mine"),
        ):
            with pytest.raises(DatabaseLockedError, match="locked") as info:
                await write()
            assert str(db_path) in str(info.value)
        # Readers are not blocked by a writer (WAL), and see the last committed state.
        assert texts(await store.get_history()) == ["one"]
        assert await store.get_title() is None

        holder.release()
        holder.wait_released()

        # The held transaction's data is intact; none of the refused writes happened.
        assert await store.get_title() == "held"
        assert texts(await store.get_history()) == ["one"]
        assert await store.get_context_tokens() == (0, 0)
        await store.append(text_message("two"))  # and the database works again
        assert texts(await store.get_history()) == ["one", "two"]


# --- damaged data -----------------------------------------------------------------------------


def _overwrite(db_path: Path, session: str, position: int, payload: bytes, flags: int) -> None:
    db = raw_connect(db_path)
    (sid,) = db.execute("SELECT sid FROM sessions WHERE id = ?", (session,)).fetchone()
    cur = db.execute(
        "UPDATE messages SET payload = ?, flags = ? WHERE id = ?", (payload, flags, (sid << 32) | position)
    )
    assert cur.rowcount == 1
    db.commit()
    db.close()


@pytest.mark.parametrize(
    ("payload", "flags"),
    [
        (b"\xc1\xc1 junk that is not msgpack", 0),  # not MessagePack at all
        (b"\x92\xa4text\x01", 0),  # MessagePack, but not a list of blocks
        (b"not zlib data", 1),  # claims zlib compression, is not
        (b"not zstd data", 4),  # claims Zstandard compression, is not
        (b"\x91\x82\xa4type\xa5image\xa4data\xc4\x01x", 2),  # an image block without media_type
    ],
)
async def test_corrupt_payload_row(db_path: Path, payload: bytes, flags: int) -> None:
    async with connect(db_path) as conn:
        bad = SQLiteContextStore(conn, "bad", project="p")
        good = SQLiteContextStore(conn, "good", project="p")
        await bad.append_many([text_message(f"b{i}") for i in range(4)])
        await good.append_many([text_message(f"g{i}") for i in range(3)])
        child = await bad.fork()
    _overwrite(db_path, "bad", 2, payload, flags)

    async with connect(db_path) as conn:
        bad = SQLiteContextStore(conn, "bad", project="p")
        child = SQLiteContextStore(conn, child.session_id, project="p")
        for read in (bad.get_history, bad.get_full_history, child.get_history):
            with pytest.raises(CorruptDataError) as info:
                await read()
            assert "position 2" in str(info.value)
        assert "'bad'" in str(await _raises(bad.get_history))
        assert child.session_id in str(await _raises(child.get_history))
        # Everything else still loads and works.
        good = SQLiteContextStore(conn, "good", project="p")
        assert texts(await good.get_history()) == ["g0", "g1", "g2"]
        await good.append(text_message("g3"))
        assert {i.session_id: i.message_count for i in await good.list_sessions()} == {
            "bad": 4,
            "good": 4,
            child.session_id: 4,
        }
        await bad.append(text_message("b4"))  # appending never reads old rows
    db = raw_connect(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()


async def _raises(read: Any) -> CorruptDataError:
    try:
        await read()
    except CorruptDataError as exc:
        return exc
    raise AssertionError("no CorruptDataError")


async def test_missing_media_blob_is_named(db_path: Path) -> None:
    image = ImageBlock(media_type="image/png", data=b"\x89PNG" + bytes(4000))
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("before"))
        await store.append(Message(role="user", content=[TextBlock(text="look"), image]))
    db = raw_connect(db_path)
    db.execute("DELETE FROM blobs")
    db.commit()
    db.close()
    async with connect(db_path) as conn:
        with pytest.raises(CorruptDataError, match=r"'s' position 1: media blob"):
            await SQLiteContextStore(conn, "s", project="p").get_history()


# --- databases this version must not touch ----------------------------------------------------


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
async def test_newer_schema_version_is_refused_untouched(db_path: Path, journal_mode: str) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
    db = raw_connect(db_path)
    db.execute(f"PRAGMA journal_mode = {journal_mode}")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = snapshot(db_path)

    for kwargs in ({}, {"readonly": True}):
        with pytest.raises(SchemaVersionError) as info:
            await connect(db_path, **kwargs)  # type: ignore[arg-type]
        message = str(info.value)
        assert f"version {SCHEMA_VERSION + 1}" in message
        assert f"the {SCHEMA_VERSION} this" in message
        assert str(db_path) in message
        if kwargs:  # a read-only SQLite connection cannot remove the -wal/-shm it made
            assert snapshot(db_path)[:2] == before[:2]
        else:
            assert snapshot(db_path) == before


async def test_newer_schema_version_is_refused_untouched_through_plain_aiosqlite(db_path: Path) -> None:
    # A connection the caller opened with aiosqlite itself: the store refuses the newer file
    # before switching its journal mode (which rewrites the header).
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
    db = raw_connect(db_path)
    db.execute("PRAGMA journal_mode = delete")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = snapshot(db_path)[0]  # the content hash

    async with aiosqlite.connect(db_path) as plain:
        with pytest.raises(SchemaVersionError, match=f"version {SCHEMA_VERSION + 1}") as info:
            await SQLiteContextStore(plain, "s").get_history()
    assert str(db_path) in str(info.value)
    assert snapshot(db_path)[0] == before


def _write_notes(path: Path) -> None:
    path.parent.mkdir(parents=True)
    path.write_bytes(b"these are my notes, not a database\n" * 200)


async def test_file_that_is_not_a_database(db_path: Path) -> None:
    _write_notes(db_path)
    before = snapshot(db_path)
    for kwargs in ({}, {"readonly": True}):
        with pytest.raises(CorruptDatabaseError) as info:
            await connect(db_path, **kwargs)  # type: ignore[arg-type]
        assert str(db_path) in str(info.value)
        assert snapshot(db_path) == before


# --- creating files ---------------------------------------------------------------------------


async def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "c" / "context.db"
    async with connect(db) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
    assert check_storage(db) == {"s": 1}


@pytest.mark.usefixtures("umask_022")
async def test_new_database_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "private.db"
    async with connect(db) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
        modes = {
            suffix: stat.S_IMODE(db.with_name(db.name + suffix).stat().st_mode)
            for suffix in ("", "-wal", "-shm")
        }
    assert modes == {"": 0o600, "-wal": 0o600, "-shm": 0o600}


async def test_existing_file_mode_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    async with connect(db):
        pass
    db.chmod(0o640)
    async with connect(db) as conn:
        await SQLiteContextStore(conn, "s", project="p").append(text_message("one"))
    assert stat.S_IMODE(db.stat().st_mode) == 0o640


async def test_folder_where_the_file_should_be(tmp_path: Path) -> None:
    db = tmp_path / "is_a_dir.db"
    db.mkdir()
    with pytest.raises(DatabaseOpenError, match=r"is_a_dir\.db"):
        await connect(db)


def _damage_pages(path: Path) -> None:
    """Overwrite every third page past the first tenth of the file with junk, as a bad disk would
    (whatever the table layout, the messages' b-tree is hit)."""
    pages = path.stat().st_size // 4096
    with path.open("r+b") as f:
        for page in range(max(1, pages // 10), pages, 3):
            f.seek(page * 4096)
            f.write(b"\xde\xad\xbe\xef" * 1024)


async def test_damaged_pages_are_a_named_error(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        for start in range(0, 3000, 500):
            await store.append_many(
                [text_message(f"message {i} " + "x" * 200) for i in range(start, start + 500)]
            )
    settle(db_path)
    _damage_pages(db_path)
    with pytest.raises(CorruptDatabaseError, match="damaged"):
        async with connect(db_path) as conn:
            await SQLiteContextStore(conn, "s", project="p").get_history()


DISK_FULL = Path(__file__).resolve().parents[1] / "procs" / "disk_full.py"


def test_disk_full_loses_nothing_and_recovers(tmp_path: Path) -> None:
    """A real full file system: a 1.5 MiB tmpfs (room for the schema, its WAL and a few batches;
    made larger as the schema grows), mounted in a private mount namespace."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("needs unshare(1) to mount a small file system privately")
    folder = tmp_path / "small"
    folder.mkdir()
    userns = [] if os.geteuid() == 0 else ["--map-root-user"]
    script = 'mount -t tmpfs -o size=1536k tmpfs "$1" || exit 77; exec "$2" "$3" "$1"'
    proc = subprocess.run(
        [unshare, *userns, "--mount", "sh", "-c", script, "sh", str(folder), sys.executable, str(DISK_FULL)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode == 77:
        pytest.skip(f"cannot mount a tmpfs here (needs root or user namespaces): {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"].startswith("DatabaseError: ")
    assert "disk is full" in out["error"]
    assert out["batches"] > 5
    # Every batch that returned is stored whole; the one that failed left nothing behind.
    assert out["stored"] == [f"m{i}.{j}" for i in range(out["batches"]) for j in range(3)]
    assert out["after"] == len(out["stored"]) + 3
    assert out["checked"] is True


async def test_corrupt_session_metadata_is_named_and_nothing_else_breaks(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(text_message("kept"))
        await store.set_metadata({"model": "m"})
    db = raw_connect(db_path)
    db.execute("UPDATE sessions SET metadata = '[1, 2' WHERE id = 's'")
    db.commit()
    db.close()
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        with pytest.raises(CorruptDataError, match=r"session 's': metadata is not a JSON object"):
            await store.get_metadata()
        with pytest.raises(CorruptDataError, match=r"session 's': metadata is not a JSON object"):
            await Database(conn, db_path).show("s")  # the command line's show and export read it too
        assert texts(await store.get_history()) == ["kept"]
        await store.set_metadata({"model": "n"})  # a new value repairs it
        assert await store.get_metadata() == {"model": "n"}


async def test_token_counts_that_are_not_ints_are_refused(db_path: Path) -> None:
    """A float or a string would be stored as it is (SQLite keeps any type) and read back
    differently by get_context_tokens and the listing: refused, naming the argument, and the
    stored totals stay as they were."""
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.set_context_tokens(5, 3)
        bad: list[tuple[str, Any, Any, type[Exception], str]] = [
            ("set", 1.5, 0, TypeError, r"input_tokens must be a whole number, not 1\.5 \(float\)"),
            ("add", 0, "3", TypeError, r"output_tokens must be a whole number, not '3' \(str\)"),
            ("add", True, 0, TypeError, r"input_tokens must be a whole number, not True \(bool\)"),
            ("add", float("nan"), 0, TypeError, "input_tokens must be a whole number"),
            ("set", -1, 0, ValueError, "input_tokens must be between 0 and"),
            ("add", 0, 1 << 63, ValueError, "output_tokens must be between"),
        ]
        for method, i, o, error, message in bad:
            call = store.set_context_tokens if method == "set" else store.add_context_tokens
            with pytest.raises(error, match=message):
                await call(i, o)
        assert await store.get_context_tokens() == (5, 3)
        info = await store.info()
        assert (info.input_tokens, info.output_tokens) == (5, 3)
        await store.add_context_tokens(-2, 1)  # a correction
        assert await store.get_context_tokens() == (3, 4)
        # Whole numbers of other types are what they say: usage parsed as 10.0, numpy-like ints.
        await store.add_context_tokens(10.0, _IndexOnly(2))  # type: ignore[arg-type]
        await store.set_context_tokens(*(await store.get_context_tokens()))
        assert await store.get_context_tokens() == (13, 6)
        info = await store.info()
        assert (type(info.input_tokens), info.input_tokens) == (int, 13)


class _IndexOnly:
    """An integer type that is not ``int`` (as numpy's are): it has ``__index__``."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_a_savepoint_that_cannot_open_is_not_reported_as_a_database_that_cannot() -> None:
    exc = translate_error(sqlean.OperationalError("cannot open savepoint - SQL statements in progress"))
    assert not isinstance(exc, DatabaseOpenError)
    assert isinstance(exc, DatabaseError) and "savepoint" in str(exc)
    opening = translate_error(sqlean.OperationalError("unable to open database file"), "/x/y.db")
    assert isinstance(opening, DatabaseOpenError) and "/x/y.db" in str(opening)


async def test_an_error_that_mentions_closed_is_not_a_closed_connection(db_path: Path) -> None:
    # run() used to turn any ValueError with "closed" in it into StoreClosedError: a raw query
    # quoting the word lost its real error (SearchQueryError is a ValueError).
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append(text_message("closed issues"))
        with pytest.raises(SearchQueryError, match="invalid FTS5 query"):
            await Database(conn, db_path).search('"closed issues', mode="keyword", raw=True)
        assert len(await Database(conn, db_path).search("closed", mode="keyword")) == 1
