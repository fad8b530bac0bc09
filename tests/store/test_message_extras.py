"""Message id/timestamp/metadata, the tail read and provider-block text on the SQLite store:
sealed chunks, copy-on-write forks, pops, stored bytes, export/import and search."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlean

from axio_context import Message, ProviderBlock, TextBlock
from axio_context.codec import encode_content
from axio_context.errors import CorruptDataError
from axio_context.testing import text
from axio_context.testing.tails import with_extras
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from axio_context_sqlite.database import open_database


def _count(path: Path, sql: str) -> int:
    # sqlean, the store's own SQLite: two SQLite libraries in one process do not see each
    # other's locks, and a reader on the other one may see a stale snapshot.
    raw = sqlean.connect(str(path))
    try:
        return int(raw.execute(sql).fetchone()[0])
    finally:
        raw.close()


async def test_extras_survive_sealing_forks_clear_and_pop(db_path: Path, conn: Connection) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    sent = [with_extras(i) if i % 2 else text("user", f"plain {i}") for i in range(200)]
    await store.append_many(sent)  # a batch this big folds the index and seals full chunks
    assert _count(db_path, "SELECT count(*) FROM chunks") >= 2
    assert _count(db_path, "SELECT count(*) FROM message_extras") == 100
    assert await store.get_history() == sent
    child = await store.fork()
    await child.append(with_extras(999))
    await store.clear()  # the child's inherited rows are copied to it, extras included
    assert await child.get_history() == [*sent, with_extras(999)]
    assert await child.pop() == with_extras(999)
    assert _count(db_path, "SELECT count(*) FROM message_extras") == 100  # the child's copies
    await child.delete_session()
    assert _count(db_path, "SELECT count(*) FROM message_extras") == 0


async def test_a_message_without_extras_is_stored_as_before(db_path: Path, conn: Connection) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    plain = Message(role="user", content=[TextBlock(text="hello")])
    await store.append(plain)
    with sqlean.connect(str(db_path)) as raw:
        [(payload,)] = raw.execute("SELECT payload FROM messages").fetchall()
        assert payload == encode_content(plain.content)  # the bytes of every earlier version
        assert raw.execute("SELECT count(*) FROM message_extras").fetchone()[0] == 0


async def test_tail_read_reads_only_the_tail(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        for i in range(20):  # one by one: unsealed rows, each its own payload
            await store.append(text("user", f"m{i}"))
    with sqlean.connect(str(db_path)) as raw:  # damage the first message only
        raw.execute("UPDATE messages SET payload = x'c1c1c1' WHERE id = (SELECT min(id) FROM messages)")
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        assert [m.text for m in await store.get_history(limit=3)] == ["m17", "m18", "m19"]
        with pytest.raises(CorruptDataError):
            await store.get_history()


async def test_export_import_keeps_extras(tmp_path: Path) -> None:
    sent = [with_extras(0), text("user", "plain"), with_extras(1)]
    for fmt in ("json", "jsonl"):
        src, dst, out = tmp_path / f"a-{fmt}.db", tmp_path / f"b-{fmt}.db", tmp_path / f"x.{fmt}"
        async with connect(src) as conn:
            await SQLiteContextStore(conn, "s", project="p").append_many(sent)
        async with open_database(src) as db:
            with out.open("wb") as f:
                await db.export(f.write, format=fmt)
        exported = out.read_text()
        assert '"id":"msg_0"' in exported and '"metadata":{' in exported
        assert exported.count('"id":') == 3 if fmt == "jsonl" else True  # plain message: no id key
        async with open_database(dst) as db:
            await db.import_file(out)
        async with connect(dst) as conn:
            assert await SQLiteContextStore(conn, "s", project="p").get_history() == sent


async def test_provider_blocks_are_searchable_by_their_text(db_path: Path) -> None:
    image = "data:image/png;base64," + "iVBORw0KGgo" * 10_000
    item = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "the quokka photograph"},
            {"type": "input_image", "image_url": image, "detail": "auto"},
        ],
    }
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "lookup_weather",
        "arguments": '{"city": "Oslo"}',
    }
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        await store.append(
            Message(role="user", content=[ProviderBlock(provider="openai", kind="message", data=item)])
        )
        await store.append(
            Message(
                role="assistant", content=[ProviderBlock(provider="openai", kind="function_call", data=call)]
            )
        )
        tokens = await store.estimated_view_tokens()
        assert tokens < 2 * 1_600  # an image and a few words, not 110 KB of base64
    async with open_database(db_path) as db:
        assert [h.position for h in await db.search("quokka", mode="keyword")] == [0]
        assert [h.position for h in await db.search("Oslo", mode="keyword")] == [1]
        assert [h.position for h in await db.search("iVBORw0KGgo", mode="keyword")] == []
    async with connect(db_path) as conn:  # removing them feeds the index the same text
        await SQLiteContextStore(conn, "s", project="p").clear()
    with sqlean.connect(str(db_path)) as raw:
        raw.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 0)")
