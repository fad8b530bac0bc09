"""Zstandard dictionaries: trained from the database's own payloads, stored in it, used by every
connection that reads it, and never at the cost of an append."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import zstandard

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock
from axio_context.errors import CorruptDataError
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import packing as storage
from axio_context_sqlite.store.calls import run
from axio_context_sqlite.store.packing import DICT_SHIFT, FLAG_ZSTD, TRAIN_AT
from tests.support.sqlite_checks import check_storage, column, raw_connect, scalar
from tests.support.words import prose


def transcript(n: int, seed: int = 3) -> list[Message]:
    """Tool results of ~0.6-3 KB (compressed alone) and short texts (compressed with a dictionary)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2:
            out.append(
                Message(
                    role="user",
                    content=[ToolResultBlock(tool_use_id=f"c{i}", content=prose(rng, rng.randint(90, 400)))],
                )
            )
        else:
            out.append(Message(role="assistant", content=[TextBlock(text=prose(rng, rng.randint(12, 40)))]))
    return out


def _on_disk(path: Path) -> bytes:
    """The database file and its WAL, as bytes."""
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _dict_ids(path: Path) -> list[int]:
    return column(path, "SELECT id FROM zstd_dicts ORDER BY id")


def _flags(path: Path) -> list[int]:
    return column(path, "SELECT flags FROM messages ORDER BY id")


def _payload_flags(path: Path) -> list[int]:
    """The flags of every stored payload: rows' (a sealed row has none) and chunks'."""
    return column(
        path,
        f"SELECT flags FROM messages WHERE NOT flags & {storage.FLAG_SEALED}"
        " UNION ALL SELECT flags FROM chunks",
    )


def _payload_bytes(path: Path) -> int:
    """Bytes of every stored payload, rows' and chunks'."""
    return scalar(
        path,
        "SELECT SUM(length(payload)) + (SELECT COALESCE(SUM(length(payload)), 0) FROM chunks) FROM messages",
    )


@contextmanager
def _refusing_dictionaries(path: Path, reason: str) -> Iterator[None]:
    """While inside, storing a compression dictionary fails with ``reason`` (a trigger another
    connection adds, and drops on the way out)."""
    db = raw_connect(path)
    try:
        with db:
            db.execute(
                "CREATE TRIGGER no_dicts BEFORE INSERT ON zstd_dicts"
                f" BEGIN SELECT RAISE(ABORT, '{reason}'); END"
            )
        yield
        with db:
            db.execute("DROP TRIGGER no_dicts")
    finally:
        db.close()


async def test_first_dictionary_is_trained_once_enough_payloads_are_compressed(db_path: Path) -> None:
    messages = transcript(2 * TRAIN_AT + 40)
    compressible = [i for i, m in enumerate(messages) if i % 2]  # every tool result is >= 512 bytes
    due = compressible[TRAIN_AT - 1]  # the append that stores the TRAIN_AT-th compressed payload
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in messages[:due]:
            await store.append(m)
        assert _dict_ids(db_path) == []
        await store.append(messages[due])
        assert _dict_ids(db_path) == [1]
        for m in messages[due + 1 :]:
            await store.append(m)
        assert await store.get_history() == messages
    flags = _flags(db_path)
    assert all(f >> DICT_SHIFT == 0 for f in flags[: due + 1])
    after = flags[due + 1 :]
    # every later payload of 64 bytes or more is compressed with dictionary 1, short texts too
    assert after and all(f == FLAG_ZSTD | 1 << DICT_SHIFT for f in after)
    async with connect(db_path) as conn:  # a new connection reads it, and compresses with it
        store = SQLiteContextStore(conn, "s")
        assert await store.get_history() == messages
        await store.append(messages[1])
    assert _flags(db_path)[-1] == FLAG_ZSTD | 1 << DICT_SHIFT
    check_storage(db_path)


async def test_dictionary_payloads_are_smaller_than_plain_zstd(db_path: Path) -> None:
    messages = transcript(6 * TRAIN_AT)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages[: 2 * TRAIN_AT])
        store = SQLiteContextStore(conn, "t")
        for m in messages[2 * TRAIN_AT :]:
            await store.append(m)
    db = raw_connect(db_path)
    try:
        storage.bind(db)
        with_dict = plain = 0
        plain_zstd = zstandard.ZstdCompressor(level=storage.ZSTD_LEVEL)
        for flags, payload in db.execute("SELECT flags, payload FROM messages WHERE flags >> 8"):
            raw = storage.inflate(flags, payload)
            with_dict += len(payload)
            plain += min(len(raw), len(plain_zstd.compress(raw)))
    finally:
        storage.unbind()
        db.close()
    assert with_dict < 0.85 * plain, (with_dict, plain)


async def test_connections_share_one_dictionary(db_path: Path) -> None:
    """A connection that has not seen the database's dictionary adopts it instead of training its own."""
    messages = transcript(2 * TRAIN_AT + 20)
    async with connect(db_path) as a, connect(db_path) as b:
        sa, sb = SQLiteContextStore(a, "a"), SQLiteContextStore(b, "b")
        await sa.append(messages[1])  # a has counted the stored payloads: 1
        for m in messages:
            await sb.append(m)  # b trains dictionary 1
        assert _dict_ids(db_path) == [1]
        for m in messages[: 2 * TRAIN_AT]:
            await sa.append(m)  # a reaches the count, finds dictionary 1 and adopts it
        assert _dict_ids(db_path) == [1]
        await sa.append(messages[3])
        assert await sa.get_history() == [messages[1], *messages[: 2 * TRAIN_AT], messages[3]]
        assert await sb.get_history() == messages
    assert _flags(db_path)[-1] == FLAG_ZSTD | 1 << DICT_SHIFT
    check_storage(db_path)


async def test_rows_of_an_older_dictionary_stay_readable(db_path: Path) -> None:
    messages = transcript(3 * TRAIN_AT)
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in messages[: 2 * TRAIN_AT + 20]:
            await store.append(m)
        assert conn.dicts is not None
        assert await run(conn, lambda _c: conn.dicts.train(replace=True)) == 2  # type: ignore[union-attr]
        for m in messages[2 * TRAIN_AT + 20 :]:
            await store.append(m)
    used = {f >> DICT_SHIFT for f in _flags(db_path)}
    assert {1, 2} <= used
    async with connect(db_path) as conn:  # current is 2; dictionary 1 is loaded when a row needs it
        assert conn.dicts is not None and conn.dicts.current is not None
        assert conn.dicts.current[0] == 2
        assert await SQLiteContextStore(conn, "s").get_history() == messages
    check_storage(db_path)


async def test_a_missing_dictionary_is_named_and_other_sessions_still_read(db_path: Path) -> None:
    messages = transcript(2 * TRAIN_AT + 10)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "plain").append(messages[0])  # before the dictionary
        for m in messages:
            await SQLiteContextStore(conn, "s").append(m)
    db = raw_connect(db_path)
    with db:
        db.execute("DELETE FROM zstd_dicts")
    db.close()
    async with connect(db_path) as conn:
        with pytest.raises(CorruptDataError, match=r"session 's' position \d+.*dictionary 1 is missing"):
            await SQLiteContextStore(conn, "s").get_history()
        assert await SQLiteContextStore(conn, "plain").get_history() == [messages[0]]


async def test_a_failed_training_never_fails_the_append(db_path: Path) -> None:
    """The append is committed before training; a training that fails is retried later."""
    messages = transcript(4 * TRAIN_AT + 10)
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        with _refusing_dictionaries(db_path, "disk full"):
            for m in messages[: 2 * TRAIN_AT + 10]:
                await store.append(m)  # training fails at the TRAIN_AT-th compressed payload
            assert _dict_ids(db_path) == []
        for m in messages[2 * TRAIN_AT + 10 :]:
            await store.append(m)  # TRAIN_AT compressed payloads later it is tried again
        assert _dict_ids(db_path) == [1]
        assert await store.get_history() == messages
    check_storage(db_path)


async def test_bulk_imports_train_too(db_path: Path, tmp_path: Path) -> None:
    messages = transcript(2 * TRAIN_AT + 10)
    src = tmp_path / "src.db"
    async with connect(src) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    out = tmp_path / "s.jsonl"
    async with open_database(src) as db:
        with out.open("wb") as f:
            await db.export(f.write, format="jsonl")
    async with open_database(db_path) as db:
        await db.import_file(out)
        stats = await db.stats()
    assert _dict_ids(db_path) == [1]
    assert stats.dictionaries == 1
    assert stats.payload_bytes == _payload_bytes(db_path)
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "s").get_history() == messages
    check_storage(db_path)


async def _stored_without_dictionary(db_path: Path, messages: list[Message]) -> None:
    """Store ``messages`` the way a database from before dictionaries holds them."""
    async with connect(db_path) as conn:
        with _refusing_dictionaries(db_path, "not yet"):
            await SQLiteContextStore(conn, "old").append_many(messages)


async def test_recompress_rewrites_every_payload_with_a_new_dictionary(db_path: Path) -> None:
    image = Message(
        role="user",
        content=[
            TextBlock(text="and this screenshot " * 30),
            ImageBlock(media_type="image/png", data=bytes(range(256)) * 8),
        ],
    )
    messages = [*transcript(3 * TRAIN_AT), image]
    await _stored_without_dictionary(db_path, messages)
    assert _dict_ids(db_path) == [] and not any(f >> DICT_SHIFT for f in _flags(db_path))
    assert scalar(db_path, "SELECT COUNT(*) FROM chunks") > 0  # the batch sealed older messages
    before = _payload_bytes(db_path)
    async with connect(db_path) as conn:
        fork = await SQLiteContextStore(conn, "old").fork()
    async with open_database(db_path) as db:
        report = await db.recompress()
    assert report.dictionary == 1 and _dict_ids(db_path) == [1]
    after = _payload_bytes(db_path)
    assert report.bytes_before - report.bytes_after == before - after > 0.15 * before
    flags = _payload_flags(db_path)
    assert report.rows == sum(1 for f in flags if f >> DICT_SHIFT == 1) > TRAIN_AT // 2
    assert _flags(db_path)[-1] & storage.FLAG_BLOBS  # the image row kept its blob reference
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "old").get_history() == messages
        assert await SQLiteContextStore(conn, fork.session_id).get_history() == messages
    check_storage(db_path)


async def test_appends_of_a_connection_whose_dictionary_was_deleted_compress_again(
    db_path: Path, tmp_path: Path
) -> None:
    """recompress deletes the dictionaries no row uses; a connection still compressing with one
    finds it gone when it writes (the append trigger checks, a batch checks in its transaction)
    and stores its payloads compressed with the newest one instead."""
    messages = transcript(3 * TRAIN_AT)
    split = 2 * TRAIN_AT + 10
    out = tmp_path / "s.json"
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in messages[:split]:
            await store.append(m)  # trains dictionary 1, which this connection keeps using
        assert conn.dicts is not None
        stale = conn.dicts.current
        async with open_database(db_path) as db:
            report = await db.recompress()
        assert (report.dictionary, report.dictionaries_removed) == (2, 1)
        assert _dict_ids(db_path) == [2]
        rest = messages[split:]
        await store.append(rest[0])  # one statement
        await store.append_many(rest[1:6])  # one transaction
        conn.dicts.current = stale  # unaware again: a small batch, inline, checks in its transaction
        await store.append_many(rest[6:9])
        for m in rest[9:]:
            await store.append(m)
        assert await store.get_history() == messages
        chunks: list[bytes] = []
        async with open_database(db_path) as db:
            await db.export(chunks.append, format="json", session_ids=["s"])
        out.write_bytes(b"".join(chunks))
        assert conn.dicts.current is not None and conn.dicts.current[0] == 2  # the appends reloaded
        conn.dicts.current = stale  # as if it had not seen the recompress: now an import
        await Database(conn, db_path).import_file(out, new_ids=True)
    assert {f >> DICT_SHIFT for f in _payload_flags(db_path)} == {2}
    check_storage(db_path)


async def test_seals_unseals_and_fork_copies_never_use_a_deleted_dictionary(db_path: Path) -> None:
    """Sealing (a fold), unsealing (a pop into a chunk) and the copies a deleted parent leaves
    its fork compress too: on a connection whose current dictionary another one's recompress
    deleted, they adopt the newest, or what they write would decode nowhere else."""
    s_msgs, p_msgs = transcript(350, seed=5), transcript(200, seed=6)
    async with connect(db_path) as a:
        s_a = SQLiteContextStore(a, "s", project="p")
        for m in s_msgs[:200]:
            await s_a.append(m)  # trains dictionary 1
        b = await connect(db_path)  # dictionary 1 is its current one
        assert b.dicts is not None and b.dicts.current is not None and b.dicts.current[0] == 1
        report = await Database(a, db_path).recompress()
        assert (report.dictionary, report.dictionaries_removed) == (2, 1)
        for m in s_msgs[200:]:
            await s_a.append(m)  # queued for the keyword index: b's fold will seal them
        parent = SQLiteContextStore(a, "parent", project="p")
        await parent.append_many(p_msgs[:100])
        fork = await parent.fork()  # inherits positions 0..99: a chunk boundary cuts at 64
        for m in p_msgs[100:]:
            await parent.append(m)
        stale = b.dicts.current
        assert stale[0] == 1  # b has not noticed

        await Database(b, db_path).search("anything", mode="keyword")  # b folds the queue, sealing
        assert b.dicts.current[0] == 2
        b.dicts.current = stale  # unaware again, for each of the other two paths
        s_b = SQLiteContextStore(b, "s", project="p")
        for _ in range(100):
            await s_b.pop()  # down to 250: unseals the chunk of positions 192..255
        b.dicts.current = stale
        await SQLiteContextStore(b, "parent", project="p").delete_session()  # copies 64..99
        await b.close()
    assert scalar(db_path, "SELECT count(*) FROM chunks") >= 4
    assert {f >> DICT_SHIFT for f in _payload_flags(db_path)} <= {0, 2}
    async with connect(db_path) as fresh:  # only dictionary 2 exists for it
        assert await SQLiteContextStore(fresh, "s", project="p").get_history() == s_msgs[:250]
        assert await SQLiteContextStore(fresh, fork.session_id, project="p").get_history() == p_msgs[:100]
    check_storage(db_path)


async def test_recompress_forgets_deleted_sessions(db_path: Path) -> None:
    """A dictionary holds fragments of what it was trained on, and the keyword index keeps a
    deleted message's terms until its segments merge: after deleting a session and
    ``vacuum --recompress``, nothing of it is left in the file."""
    secret = "zqxwvsecrettokenvalue"
    rng = random.Random(9)
    secrets_ = [
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id=f"k{i}", content=f"{secret} {prose(rng, 120)}")],
        )
        for i in range(TRAIN_AT + 10)
    ]
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "private").append_many(secrets_)  # trains dictionary 1 on them
        kept = SQLiteContextStore(conn, "kept")
        for m in transcript(2 * TRAIN_AT + 10):
            await kept.append(m)
        await SQLiteContextStore(conn, "private").delete_session()
    assert secret.encode() in bytes(scalar(db_path, "SELECT data FROM zstd_dicts WHERE id = 1"))
    async with open_database(db_path) as db:
        await db.recompress()
        await db.vacuum(full=True)
    assert b"zqxwvsecret" not in _on_disk(db_path)  # nor its stem in the keyword index
    assert _dict_ids(db_path) == [2]
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "kept").get_history() == transcript(2 * TRAIN_AT + 10)
    check_storage(db_path)


async def test_recompress_with_too_little_to_learn_from_changes_nothing(db_path: Path) -> None:
    messages = transcript(20)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    rows = scalar(db_path, "SELECT group_concat(hex(payload)) FROM messages")
    async with open_database(db_path) as db:
        report = await db.recompress()
    assert (report.dictionary, report.rows) == (None, 0)
    assert scalar(db_path, "SELECT group_concat(hex(payload)) FROM messages") == rows
    assert _dict_ids(db_path) == []
