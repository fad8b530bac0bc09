"""Sealed chunks: a session's older messages, CHUNK at a time, in one compressed payload.

Real files, real FTS5: what sealing writes, and that every way of reading or removing messages
sees through it (load, pop, fork, clear, delete, keyword search, embeddings, export,
recompress), with damaged chunks named in errors.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from axio_context import ImageBlock, Message, TextBlock, UnknownBlock
from axio_context.embeddings import HashingEmbedder
from axio_context.errors import CorruptDataError
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import packing
from axio_context_sqlite.store import packing as storage
from axio_context_sqlite.store.chunks import CHUNK, SEAL_TAIL
from tests.store.test_compression import transcript
from tests.support.legacy import use_dictionaries
from tests.support.sqlite_checks import check_storage, column, raw_connect, scalar

IMAGE = bytes(range(256)) * 8  # stored once, as a blob
#: A session this long has its first two blocks sealed by a batch, and a few messages past the
#: unsealed tail.
TWO = 2 * CHUNK + SEAL_TAIL + 4
SECOND = (1 << 32) + CHUNK  # the key of the first stored session's second chunk


def _with_image(messages: list[Message], at: int) -> list[Message]:
    out = list(messages)
    out[at] = Message(
        role="user",
        content=[TextBlock(text="the screenshot"), ImageBlock(media_type="image/png", data=IMAGE)],
    )
    return out


def _chunk_positions(path: Path, sid: int = 1) -> list[int]:
    return [i & 0xFFFFFFFF for i in column(path, f"SELECT id FROM chunks WHERE id >> 32 = {sid} ORDER BY id")]


def _sealed(path: Path) -> int:
    return int(scalar(path, f"SELECT COUNT(*) FROM messages WHERE flags & {storage.FLAG_SEALED}"))


async def test_a_batch_seals_its_complete_blocks_but_the_newest(db_path: Path) -> None:
    messages = _with_image(transcript(200), 40)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    # the blocks wholly before the newest SEAL_TAIL messages are sealed, the rest stay rows
    assert _chunk_positions(db_path) == list(range(0, 200 - SEAL_TAIL - CHUNK + 1, CHUNK))
    assert _sealed(db_path) == CHUNK * len(_chunk_positions(db_path))
    assert scalar(db_path, "SELECT COUNT(*) FROM messages WHERE flags & 8 AND length(payload) > 0") == 0
    # the image row keeps its media flag, so its blob stays referenced
    assert scalar(db_path, "SELECT flags FROM messages WHERE id = (1 << 32) + 40") & storage.FLAG_BLOBS
    check_storage(db_path)
    async with connect(db_path) as conn:  # after reopening, through the chunks
        store = SQLiteContextStore(conn, "s")
        assert await store.get_history() == messages
        assert await store.get_full_history() == messages


async def test_single_appends_are_sealed_before_the_keyword_index_folds_them(db_path: Path) -> None:
    messages = transcript(TWO)
    messages[2] = Message(role="user", content=[TextBlock(text="a kumquat in the logs")])
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in messages:
            await store.append(m)
        # every 64th append checks: the first block is sealed while its messages wait in the
        # keyword index's queue (the second, once a check comes after its tail passed)
        assert _chunk_positions(db_path) in ([0], [0, CHUNK])
        assert scalar(db_path, "SELECT COUNT(*) FROM fts_pending") == TWO  # none folded yet
        [hit] = await Database(conn, db_path).search("kumquat", mode="keyword")
        assert hit.position == 2  # the search folded the queue, reading the sealed rows
        assert _chunk_positions(db_path) == [0, CHUNK]
        assert await store.get_history() == messages
    check_storage(db_path)


async def test_sealed_messages_still_queued_pop_clear_and_fork_cleanly(db_path: Path) -> None:
    messages = transcript(4 * CHUNK)
    messages[5] = Message(role="user", content=[TextBlock(text="a kumquat in the logs")])
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        for m in messages:
            await store.append(m)
        assert _sealed(db_path) >= CHUNK  # sealed, and not yet in the keyword index
        assert scalar(db_path, "SELECT COUNT(*) FROM fts_pending") == len(messages)
        child = await store.fork()
        for _ in range(2 * CHUNK + 3):  # into the sealed blocks: they are unsealed first
            await store.pop()
        assert await store.get_history() == messages[: 2 * CHUNK - 3]
        check_storage(db_path)
        await store.clear()
        assert await child.get_history() == messages
        [hit] = await Database(conn, db_path).search("kumquat", mode="keyword")
        assert (hit.session_id, hit.position) == (child.session_id, 5)
    check_storage(db_path)


async def test_popping_into_a_sealed_block_unseals_it(db_path: Path) -> None:
    messages = transcript(TWO)
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append_many(messages)
        assert _chunk_positions(db_path) == [0, CHUNK]
        for expected in reversed(messages[CHUNK + 8 :]):
            assert await store.pop() == expected
        # popping the second block's last position cut its chunk: its rows hold their payloads again
        assert _chunk_positions(db_path) == [0]
        assert _sealed(db_path) == CHUNK
        check_storage(db_path)
        assert await store.get_history() == messages[: CHUNK + 8]
        await store.append_many(messages[CHUNK + 8 :])  # the same positions again
        assert await store.get_history() == messages
    check_storage(db_path)


@pytest.mark.parametrize("how", ["clear", "delete", "pop"])
async def test_forks_keep_sealed_messages_their_parent_gives_up(db_path: Path, how: str) -> None:
    messages = _with_image(transcript(3 * CHUNK + SEAL_TAIL + 2), 70)
    async with connect(db_path) as conn:
        parent = SQLiteContextStore(conn, "parent")
        await parent.append_many(messages)
        assert _chunk_positions(db_path) == [0, CHUNK, 2 * CHUNK]
        child = await parent.fork()
        if how == "clear":
            await parent.clear()
        elif how == "delete":
            await parent.delete_session()
        else:
            for _ in range(len(messages) - 30):
                await parent.pop()
        # The child copied what it inherits. A whole chunk is copied as it is (its rows' copies
        # stay sealed); popping one message at a time cuts the chunks, so those copies are rows.
        child_sid = scalar(db_path, f"SELECT sid FROM sessions WHERE id = '{child.session_id}'")
        assert _chunk_positions(db_path, child_sid) == ([] if how == "pop" else [0, CHUNK, 2 * CHUNK])
        assert await child.get_history() == messages
        assert await child.pop() == messages[-1]
        await child.append(messages[0])
        assert await child.get_history() == [*messages[:-1], messages[0]]
        if how == "pop":
            assert await parent.get_history() == messages[:30]
    check_storage(db_path)  # blob refs, index entries and rows of both


async def test_keyword_search_finds_sealed_messages_and_forgets_deleted_ones(db_path: Path) -> None:
    messages = transcript(TWO)
    messages[3] = Message(role="user", content=[TextBlock(text="where is the zanzibarite config")])
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        await store.append_many(messages)
        assert _chunk_positions(db_path) == [0, CHUNK]
        db = Database(conn, db_path)
        [hit] = await db.search("zanzibarite", mode="keyword")
        assert (hit.session_id, hit.position) == ("s", 3)
        assert "zanzibarite" in hit.snippet
        await store.delete_session()
        assert await db.search("zanzibarite", mode="keyword") == []
    assert scalar(db_path, "SELECT COUNT(*) FROM chunks") == 0
    check_storage(db_path)  # FTS5's integrity check: the deleted entries went with the right text


async def test_embeddings_of_sealed_messages(db_path: Path) -> None:
    messages = transcript(TWO)
    embedder = HashingEmbedder(64)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
        assert _chunk_positions(db_path) == [0, CHUNK]
        db = Database(conn, db_path)
        report = await db.reindex(embedder)
        assert report.embedded == len(messages)
        hits = await db.similar("s", 5, k=3)
        assert hits and all(h.position != 5 for h in hits)
    check_storage(db_path)


async def test_export_reads_sealed_messages_with_their_times(db_path: Path, tmp_path: Path) -> None:
    messages = transcript(TWO)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    written: list[bytes] = []
    async with open_database(db_path) as db:
        await db.export(written.append, format="jsonl")
    copy, out = tmp_path / "copy.db", tmp_path / "s.jsonl"
    out.write_bytes(b"".join(written))
    async with open_database(copy) as db:
        await db.import_file(out)
    async with connect(copy) as conn:
        assert await SQLiteContextStore(conn, "s").get_history() == messages
    # every message's time came through the export, sealed ones included
    times = "SELECT created_at FROM messages ORDER BY id"
    assert column(copy, times) == column(db_path, times)
    assert _sealed(db_path) > 0
    check_storage(copy)


async def test_recompress_rewrites_dictionary_chunks_as_plain_zstd(db_path: Path) -> None:
    """Chunks an earlier build compressed with a dictionary become plain zstd chunks holding the
    same messages; unsealed rows are rewritten beside them."""
    messages = transcript(200)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    named = use_dictionaries(db_path)
    chunk_ids = column(db_path, "SELECT id FROM chunks ORDER BY id")
    assert chunk_ids and set(column(db_path, f"SELECT flags >> {storage.DICT_SHIFT} FROM chunks")) == {1}
    async with open_database(db_path) as db:
        report = await db.recompress()
    assert report.rows == named and report.dictionaries_removed == 1
    assert column(db_path, "SELECT flags FROM chunks") == [storage.FLAG_ZSTD] * len(chunk_ids)
    assert column(db_path, "SELECT id FROM chunks ORDER BY id") == chunk_ids
    assert column(db_path, "SELECT id FROM zstd_dicts") == []
    async with connect(db_path) as conn:
        assert await SQLiteContextStore(conn, "s").get_history() == messages
    check_storage(db_path)


@pytest.mark.parametrize("damage", ["garbage", "missing", "short"])
async def test_a_damaged_chunk_is_named_and_nothing_else_is_hurt(db_path: Path, damage: str) -> None:
    messages = transcript(TWO)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
        await SQLiteContextStore(conn, "other").append_many(messages)
    db = raw_connect(db_path)
    with db:
        if damage == "garbage":
            db.execute(f"UPDATE chunks SET payload = x'00112233' WHERE id = {SECOND}")
        elif damage == "missing":
            db.execute(f"DELETE FROM chunks WHERE id = {SECOND}")
        else:
            entries = packing.decode_chunk(
                *db.execute(f"SELECT flags, payload FROM chunks WHERE id = {SECOND}").fetchone()
            )
            flags, payload = packing.encode_chunk([(r, f, bytes(p)) for r, f, p in entries[:-1]])
            db.execute(f"UPDATE chunks SET flags = ?, payload = ? WHERE id = {SECOND}", (flags, payload))
    db.close()
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        with pytest.raises(CorruptDataError, match="'s'"):
            await store.get_history()
        assert await SQLiteContextStore(conn, "other").get_history() == messages
        assert await store.pop() == messages[-1]  # the newest rows are still rows


async def test_a_block_type_from_a_newer_version_survives_sealing(db_path: Path) -> None:
    """The whole-chunk decode takes only known block types; an unknown one takes the codec's
    slower rules for its chunk, and comes back exactly as it was stored."""
    messages = transcript(TWO)
    hologram = UnknownBlock({"type": "hologram", "frames": [1, 2, 3], "label": "a newer block"})
    messages[7] = Message(role="assistant", content=[TextBlock(text="look"), hologram])
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
        assert _chunk_positions(db_path) == [0, CHUNK]
        assert await SQLiteContextStore(conn, "s").get_history() == messages
    check_storage(db_path)


async def test_a_damaged_message_inside_a_chunk_is_named_by_position(db_path: Path) -> None:
    messages = transcript(TWO)
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append_many(messages)
    db = raw_connect(db_path)
    with db:
        storage.bind(db)
        row = db.execute(f"SELECT flags, payload FROM chunks WHERE id = {SECOND}").fetchone()
        entries = [(r, f, bytes(p)) for r, f, p in packing.decode_chunk(*row)]
        entries[5] = (entries[5][0], 0, msgspec.msgpack.encode([1, 2, 3]))  # not content blocks
        flags, payload = packing.encode_chunk(entries)
        db.execute(f"UPDATE chunks SET flags = ?, payload = ? WHERE id = {SECOND}", (flags, payload))
        storage.unbind()
    db.close()
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s")
        with pytest.raises(CorruptDataError, match=f"'s' position {CHUNK + 5}"):
            await store.get_history()
        assert await store.pop() == messages[-1]
