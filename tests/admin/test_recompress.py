"""``vacuum --recompress``: the way off the Zstandard dictionaries earlier builds trained. It
rewrites the rows and chunks compressed with one (or with zlib) as plain zstd, deletes the
dictionaries nothing names, and changes no content; runs beside writers and each other."""

from __future__ import annotations

import asyncio
import json
import random
import re
import threading
from pathlib import Path

from click.testing import CliRunner, Result

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock
from axio_context_sqlite import SCHEMA_VERSION, Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.cli import cli
from axio_context_sqlite.store.packing import DICT_SHIFT, FLAG_BLOBS, FLAG_ZLIB, FLAG_ZSTD
from tests.fixtures.make_fixture import load
from tests.support.legacy import dictionary_rows, use_dictionaries
from tests.support.sqlite_checks import check_storage, column, raw_connect, scalar
from tests.support.words import prose

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WAIT: float = 60.0


def _messages(seed: int, n: int) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 3 == 2:
            result = ToolResultBlock(tool_use_id=f"c{seed}.{i}", content=prose(rng, rng.randint(90, 300)))
            out.append(Message(role="user", content=[result]))
        else:
            out.append(Message(role="assistant", content=[TextBlock(text=prose(rng, rng.randint(12, 40)))]))
    return out


async def _export(path: Path) -> bytes:
    """Every session of the file as JSON lines (the full transcripts, forks and checkpoints)."""
    out: list[bytes] = []
    async with open_database(path) as db:
        await db.export(out.append, format="jsonl")
    return b"".join(out)


def _on_disk(path: Path) -> bytes:
    """The database file and its WAL, as bytes."""
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _newest_fixture(tmp_path: Path) -> Path:
    """A copy of the newest committed fixture written by a build that trained dictionaries (later
    builds train none, so their fixtures hold no dictionary rows)."""
    trained = [p for p in FIXTURES.glob("schema_v*.sql") if 'INSERT INTO "zstd_dicts"' in p.read_text()]
    newest = max(trained, key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    path = tmp_path / "fixture.db"
    load(newest.read_text(), path)
    return path


async def test_recompress_takes_a_fixture_database_off_its_dictionaries(tmp_path: Path) -> None:
    """The newest fixture (rows and a chunk compressed with dictionary 1): after
    ``vacuum --recompress`` no row or chunk names a dictionary, the table is empty, every export
    is byte for byte what it was, and the file passes the storage checks and takes new writes."""
    path = _newest_fixture(tmp_path)
    named = dictionary_rows(path)
    assert named > 100 and scalar(path, "SELECT count(*) FROM zstd_dicts") == 1
    assert scalar(path, f"SELECT count(*) FROM chunks WHERE flags >> {DICT_SHIFT}") > 0
    before = await _export(path)  # opening it upgrades it to the current version
    assert scalar(path, "PRAGMA user_version") == SCHEMA_VERSION
    result = await asyncio.to_thread(_invoke, "--db", str(path), "vacuum", "--recompress", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)["recompress"]
    assert (
        report["rows"] == named and report["dictionaries_removed"] == 1 and report["dictionaries_left"] == 0
    )
    assert report["bytes_after"] > 0
    assert dictionary_rows(path) == 0 and scalar(path, "SELECT count(*) FROM zstd_dicts") == 0
    assert await _export(path) == before
    check_storage(path)
    async with open_database(path) as db:
        assert (await db.stats()).dictionaries == 0
        again = await db.recompress()  # nothing left to do
    assert (again.rows, again.dictionaries_removed) == (0, 0)
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "beta-long", project="beta")
        history = await store.get_full_history()
        await store.append(_messages(1, 3)[2])
        assert await store.get_full_history() == [*history, _messages(1, 3)[2]]
    check_storage(path)


async def test_recompress_rewrites_zlib_and_two_dictionaries_keeping_blob_flags(db_path: Path) -> None:
    image = Message(
        role="user",
        content=[
            TextBlock(text="and this screenshot " * 30),
            ImageBlock(media_type="image/png", data=bytes(range(256)) * 8),  # a blob: FLAG_BLOBS
        ],
    )
    messages = [*_messages(7, 400), image]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
        for m in messages[:90]:
            await SQLiteContextStore(conn, "t").append(m)
        fork = await SQLiteContextStore(conn, "s").fork()
    named = use_dictionaries(db_path, dictionaries=2, zlib_rows=4)
    assert scalar(db_path, f"SELECT count(*) FROM messages WHERE flags & {FLAG_ZLIB}") == 4
    blobs_before = column(db_path, f"SELECT id FROM messages WHERE flags & {FLAG_BLOBS} ORDER BY id")
    before = await _export(db_path)
    seen: list[tuple[int, int]] = []
    async with open_database(db_path) as db:
        report = await db.recompress(lambda done, total: seen.append((done, total)))
    assert report.rows == named + 4 and report.dictionaries_removed == 2
    assert seen and seen[-1] == (named + 4, named + 4)
    flags = column(db_path, "SELECT flags FROM messages UNION ALL SELECT flags FROM chunks")
    assert not [f for f in flags if f >> DICT_SHIFT or f & FLAG_ZLIB]
    assert any(f & FLAG_ZSTD for f in flags)
    assert column(db_path, f"SELECT id FROM messages WHERE flags & {FLAG_BLOBS} ORDER BY id") == blobs_before
    assert await _export(db_path) == before
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, fork.session_id).get_history() == messages
    check_storage(db_path)


async def test_a_damaged_row_keeps_its_dictionary(db_path: Path) -> None:
    """A row that does not decode stays as it is (reading it names it), and so does the
    dictionary it names; every other row is rewritten."""
    async with connect(db_path) as conn:
        for m in _messages(2, 200):
            await SQLiteContextStore(conn, "s").append(m)
        await SQLiteContextStore(conn, "other").append_many(_messages(3, 150))
    named = use_dictionaries(db_path, dictionaries=2)
    db = raw_connect(db_path)
    with db:
        damaged = db.execute(
            f"SELECT id, flags >> {DICT_SHIFT} FROM messages WHERE flags >> {DICT_SHIFT} ORDER BY id LIMIT 1"
        ).fetchone()
        db.execute("UPDATE messages SET payload = x'00112233' WHERE id = ?", (damaged[0],))
    db.close()
    async with open_database(db_path) as db:
        report = await db.recompress()
    assert (report.rows, report.dictionaries_removed, report.dictionaries_left) == (named - 1, 1, 1)
    assert column(db_path, "SELECT id FROM zstd_dicts") == [damaged[1]]
    assert dictionary_rows(db_path) == 1
    result = await asyncio.to_thread(_invoke, "--db", str(db_path), "vacuum", "--recompress")
    assert result.exit_code == 0, result.output
    assert (
        result.output.splitlines()[0]
        == "recompressed 0 payload(s): 0 B -> 0 B; 0 dictionary(ies) deleted; 1 kept for damaged rows"
    )


async def test_recompress_forgets_deleted_sessions(db_path: Path) -> None:
    """A dictionary holds fragments of what it was trained on, and the keyword index keeps a
    deleted message's terms until its segments merge: after deleting a session and
    ``vacuum --recompress``, nothing of it is left in the file."""
    secret = "zqxwvsecrettokenvalue"
    rng = random.Random(9)
    private = [
        Message(
            role="user", content=[ToolResultBlock(tool_use_id=f"k{i}", content=f"{secret} {prose(rng, 120)}")]
        )
        for i in range(80)
    ]
    kept = _messages(4, 150)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "private").append_many(private)
        await SQLiteContextStore(conn, "kept").append_many(kept)
    use_dictionaries(db_path)  # trained on the private session's payloads too
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "private").delete_session()
    assert secret.encode() in bytes(scalar(db_path, "SELECT data FROM zstd_dicts"))
    async with open_database(db_path) as db:
        await db.recompress()
        await db.vacuum(full=True)
    assert b"zqxwvsecret" not in _on_disk(db_path)  # nor its stem in the keyword index
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "kept").get_history() == kept
    check_storage(db_path)


async def test_recompress_beside_writers_and_another_run(db_path: Path) -> None:
    """A run paused between its batches (no lock held) while another connection appends, forks,
    pops and deletes on the same sessions, and a second run goes whole: both finish, nothing
    names a dictionary, no dictionary is left, and every history is exact."""
    expected = {f"s{i}": _messages(10 + i, 700) for i in range(2)}
    async with connect(db_path) as conn:
        for session_id, messages in expected.items():
            for m in messages[:600]:
                await SQLiteContextStore(conn, session_id).append(m)
    assert use_dictionaries(db_path) > 100
    assert scalar(db_path, f"SELECT count(*) FROM chunks WHERE flags >> {DICT_SHIFT}") > 0  # a second batch
    paused, resume = threading.Event(), threading.Event()
    calls = [0]

    def progress(done: int, total: int) -> None:
        calls[0] += 1
        if calls[0] == 1:
            paused.set()
            assert resume.wait(WAIT), "never resumed"

    async with connect(db_path) as a_conn, connect(db_path) as b_conn:
        a_run = asyncio.create_task(Database(a_conn, db_path).recompress(progress))
        try:
            assert await asyncio.to_thread(paused.wait, WAIT), "the run never paused"
            for session_id, messages in list(expected.items()):
                store = SQLiteContextStore(b_conn, session_id)
                fork = await store.fork()
                for m in messages[600:]:
                    await store.append(m)
                await store.pop()
                expected[session_id] = messages[:-1]
                expected[fork.session_id] = messages[:600]
            b_report = await Database(b_conn, db_path).recompress()
        finally:
            resume.set()
        a_report = await a_run
    assert a_report.dictionaries_left == b_report.dictionaries_left == 0
    assert a_report.dictionaries_removed + b_report.dictionaries_removed == 1
    assert dictionary_rows(db_path) == 0 and scalar(db_path, "SELECT count(*) FROM zstd_dicts") == 0
    async with connect(db_path) as conn:
        for session_id, messages in expected.items():
            assert await SQLiteContextStore(conn, session_id).get_history() == messages, session_id
    check_storage(db_path)
