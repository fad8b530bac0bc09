"""Payload compression: new payloads are plain zstd from ``COMPRESS_MIN`` bytes and never name a
dictionary, on every path that writes them; rows and chunks earlier builds compressed with a
trained dictionary (or zlib) still read, beside new ones, on every path that reads them."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock
from axio_context.errors import CorruptDataError
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.store import packing
from axio_context_sqlite.store.packing import COMPRESS_MIN, DICT_SHIFT, FLAG_BLOBS, FLAG_SEALED, FLAG_ZSTD
from tests.support.legacy import dictionary_rows, use_dictionaries
from tests.support.sqlite_checks import check_storage, column, raw_connect, scalar
from tests.support.words import prose


def transcript(n: int, seed: int = 3) -> list[Message]:
    """Tool results of ~0.6-3 KB (compressed) and short texts (stored as they are)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2:
            result = ToolResultBlock(tool_use_id=f"c{seed}.{i}", content=prose(rng, rng.randint(90, 400)))
            out.append(Message(role="user", content=[result]))
        else:
            out.append(Message(role="assistant", content=[TextBlock(text=prose(rng, rng.randint(12, 40)))]))
    return out


def _payload_flags(path: Path) -> list[int]:
    """The flags of every stored payload: rows' (a sealed row has none) and chunks'."""
    return column(
        path, f"SELECT flags FROM messages WHERE NOT flags & {FLAG_SEALED} UNION ALL SELECT flags FROM chunks"
    )


async def test_new_payloads_never_name_a_dictionary_on_any_write_path(db_path: Path, tmp_path: Path) -> None:
    """Single appends (inline and on the worker), batches (sealing chunks), an agent's appends,
    an import, pops that unseal a chunk: hundreds of compressible payloads, and not one names a
    dictionary or trains one; each reads back."""
    messages = transcript(300)
    async with connect(db_path) as conn:
        single = SQLiteContextStore(conn, "single")
        for m in messages[:150]:
            await single.append(m)
        batch = SQLiteContextStore(conn, "batch")
        await batch.append_many(messages)  # seals its older blocks into chunks
        provider = SQLiteHistoryProvider(conn)
        for m in messages[:80]:
            await provider.append("agent", m, session_id="t")
        for _ in range(40):
            await batch.pop()  # down to 260: unseals the chunk of positions 192..255
        assert await single.get_history() == messages[:150]
        assert await batch.get_history() == messages[:260]
    out = tmp_path / "all.jsonl"
    async with open_database(db_path) as db:
        with out.open("wb") as f:
            await db.export(f.write, format="jsonl")
    imported = tmp_path / "imported.db"
    async with open_database(imported) as db:
        await db.import_file(out)
    assert scalar(db_path, "SELECT count(*) FROM chunks") > 0
    for path in (db_path, imported):
        flags = _payload_flags(path)
        assert sum(1 for f in flags if f & FLAG_ZSTD) > 50  # a chunk is one payload
        assert not [f for f in flags if f >> DICT_SHIFT], "a new payload names a dictionary"
        assert scalar(path, "SELECT count(*) FROM zstd_dicts") == 0
        check_storage(path)


async def test_payloads_below_compress_min_stay_as_they_are(db_path: Path) -> None:
    """zstd from COMPRESS_MIN bytes of MessagePack, and only when it makes them smaller: short
    texts and incompressible bytes are stored as they are; media blocks keep their blob flag."""
    rng = random.Random(2)
    short = Message(role="user", content=[TextBlock(text="x" * (COMPRESS_MIN - 40))])
    long = Message(role="user", content=[TextBlock(text="x" * COMPRESS_MIN)])
    noise = Message(
        role="user", content=[ImageBlock(media_type="image/png", data=rng.randbytes(700))]
    )  # inline
    image = Message(
        role="user", content=[ImageBlock(media_type="image/png", data=rng.randbytes(3000))]
    )  # a blob
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in (short, long, noise, image):
            await store.append(m)
        assert await store.get_history() == [short, long, noise, image]
    flags = column(db_path, "SELECT flags FROM messages ORDER BY id")
    sizes = column(db_path, "SELECT length(payload) FROM messages ORDER BY id")
    assert flags[0] == 0 and sizes[0] < COMPRESS_MIN
    assert flags[1] == FLAG_ZSTD and sizes[1] < 100
    assert flags[2] == 0 and sizes[2] > 700  # zstd would not make it smaller
    assert flags[3] == FLAG_BLOBS and sizes[3] < COMPRESS_MIN  # the bytes are in the blobs table


async def test_rows_of_earlier_dictionaries_read_beside_new_ones(db_path: Path) -> None:
    """Rows and chunks compressed with two dictionaries and with zlib (as earlier builds left
    them) read back on a fresh connection; appending, forking, popping into a chunk and sealing
    the rows into new chunks keep every history exact, and what they write names no dictionary."""
    messages = transcript(400, seed=5)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "old").append_many(messages[:300])
        for m in messages[:70]:
            await SQLiteContextStore(conn, "unsealed").append(m)
    named = use_dictionaries(db_path, dictionaries=2, zlib_rows=5)
    assert named > 100 and set(column(db_path, "SELECT id FROM zstd_dicts")) == {1, 2}
    assert scalar(db_path, f"SELECT count(*) FROM chunks WHERE flags >> {DICT_SHIFT}") > 0
    check_storage(db_path)
    async with connect(db_path) as conn:
        old = SQLiteContextStore(conn, "old")
        assert await old.get_history() == messages[:300]
        unsealed = SQLiteContextStore(conn, "unsealed")
        assert await unsealed.get_history() == messages[:70]
        fork = await old.fork()
        for m in messages[300:]:
            await old.append(m)
        for _ in range(50):
            await old.pop()
        await unsealed.append_many(messages[70:200])  # seals its old rows into a new chunk
        assert await old.get_history() == messages[:350]
        assert await fork.get_history() == messages[:300]
        assert await unsealed.get_history() == messages[:200]
        page = await old.get_full_history()
        assert page == messages[:350]
    newest = column(
        db_path, "SELECT flags FROM messages WHERE id >> 32 = (SELECT sid FROM sessions WHERE id = 'old')"
    )
    assert not [f for f in newest[300:] if f >> DICT_SHIFT]
    async with connect(db_path) as conn:  # a connection that never wrote: loads each dictionary
        assert await SQLiteContextStore(conn, "unsealed").get_history() == messages[:200]
        assert await SQLiteContextStore(conn, fork.session_id).get_history() == messages[:300]
    check_storage(db_path)


async def test_a_missing_dictionary_is_named_and_other_sessions_still_read(db_path: Path) -> None:
    messages = transcript(200)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    use_dictionaries(db_path)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "plain").append(messages[1])  # a new row: plain zstd
    db = raw_connect(db_path)
    with db:
        db.execute("DELETE FROM zstd_dicts")
    db.close()
    async with connect(db_path) as conn:
        with pytest.raises(CorruptDataError, match=r"session 's'.* positions? \d+.*dictionary 1 is missing"):
            await SQLiteContextStore(conn, "s").get_history()
        assert await SQLiteContextStore(conn, "plain").get_history() == [messages[1]]


async def test_a_damaged_dictionary_is_named(db_path: Path) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(transcript(200))
    use_dictionaries(db_path)
    db = raw_connect(db_path)
    with db:
        db.execute("UPDATE zstd_dicts SET data = zeroblob(100)")
    db.close()
    async with connect(db_path) as conn:
        with pytest.raises(CorruptDataError, match=r"dictionary 1 is damaged"):
            await SQLiteContextStore(conn, "s").get_history()


async def test_stats_count_the_dictionaries_left(db_path: Path) -> None:
    messages = transcript(200)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    async with open_database(db_path) as db:
        assert (await db.stats()).dictionaries == 0
    use_dictionaries(db_path, dictionaries=2)
    async with open_database(db_path) as db:
        stats = await db.stats()
    assert stats.dictionaries == 2
    assert stats.payload_bytes == scalar(
        db_path,
        "SELECT SUM(length(payload)) + (SELECT COALESCE(SUM(length(payload)), 0) FROM chunks) FROM messages",
    )
    assert dictionary_rows(db_path) > 0


def test_pack_never_names_a_dictionary() -> None:
    """The one encoder: plain zstd from COMPRESS_MIN, the bytes as they are below it."""
    rng = random.Random(4)
    for size in (0, 1, COMPRESS_MIN - 1, COMPRESS_MIN, 4 * COMPRESS_MIN, 100_000):
        raw = prose(rng, size // 5 + 1).encode()[:size]
        flags, packed = packing.pack(raw)
        assert flags in (0, FLAG_ZSTD)
        assert (flags == FLAG_ZSTD) == (len(raw) >= COMPRESS_MIN and len(packed) < len(raw))
        assert packing.inflate(flags, packed) == raw
