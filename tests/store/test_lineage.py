"""Forks, clears, pops, deletes and checkpoints in any order: SQLite matches the memory model.

Hypothesis drives random operation sequences over a growing tree of forks; after every step each
live session's view and full transcript must equal MemoryContextStore's, and at the end the
blob reference counts and the message rows must be exactly what the live sessions need.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from tempfile import TemporaryDirectory

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axio_context import Checkpoint, ImageBlock, MemoryContextStore, Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.store import chunks, indexing
from tests.support.sqlite_checks import check_storage

IMAGES = [bytes([i]) * 3000 for i in range(3)]

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 20), st.integers(1, 3), st.integers(-1, 2)),
        st.tuples(st.just("fork"), st.integers(0, 20)),
        st.tuples(st.just("pop"), st.integers(0, 20)),
        st.tuples(st.just("clear"), st.integers(0, 20)),
        st.tuples(st.just("delete"), st.integers(0, 20)),
        st.tuples(st.just("checkpoint"), st.integers(0, 20), st.floats(0, 1)),
    ),
    min_size=1,
    max_size=30,
)


def _msg(counter: int, image: int) -> Message:
    content: list = [TextBlock(text=f"m{counter}")]
    if image >= 0:
        content.append(ImageBlock(media_type="image/png", data=IMAGES[image]))
    return Message(role="user" if counter % 2 else "assistant", content=content)


async def _run(path: Path, steps: list[tuple]) -> None:  # type: ignore[type-arg]
    async with connect(path) as conn:
        pairs: list[tuple[SQLiteContextStore, MemoryContextStore]] = [
            (SQLiteContextStore(conn, "root", project="p"), MemoryContextStore())
        ]
        counter = 0
        for step in steps:
            if not pairs:
                break
            real, model = pairs[step[1] % len(pairs)]
            kind = step[0]
            if kind == "append":
                batch = []
                for _ in range(step[2]):
                    counter += 1
                    batch.append(_msg(counter, step[3]))
                if len(batch) == 1:  # the one-statement path
                    await real.append(batch[0])
                else:
                    await real.append_many(batch)
                await model.append_many(batch)
            elif kind == "fork":
                pairs.append((await real.fork(), await model.fork()))
            elif kind == "pop":
                assert await real.pop() == await model.pop()
            elif kind == "clear":
                await real.clear()
                await model.clear()
            elif kind == "delete":
                await real.delete_session()
                pairs.remove((real, model))
            elif kind == "checkpoint":
                full = await model.get_full_history()
                position = int(step[2] * len(full))
                cp = Checkpoint(
                    position=position, summary=[Message(role="user", content=[TextBlock(text="s")])]
                )
                await real.add_checkpoint(cp)
                await model.add_checkpoint(cp)
            for r, m in pairs:
                assert await r.get_full_history() == await m.get_full_history(), step
                assert await r.get_history() == await m.get_history(), step
                assert await r.estimated_view_tokens() == await m.estimated_view_tokens()
                assert [c.position for c in await r.list_checkpoints()] == [
                    c.position for c in await m.list_checkpoints()
                ]
    check_storage(path)  # rows, blob refs, keyword index (or its queue), integrity


@pytest.mark.parametrize(
    ("flush_at", "chunk", "tail"),
    [(64, 32, 32), (2, 32, 32), (2, 2, 1)],
    ids=["fts-batched", "fts-flushed-often", "sealed-in-pairs"],
)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=ops)
def test_random_lineage_operations_match_the_model(
    steps: list[tuple],  # type: ignore[type-arg]
    flush_at: int,
    chunk: int,
    tail: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``sealed-in-pairs``: every fold seals blocks of 2 messages but the newest one, so pops,
    forks, clears and deletes keep cutting through chunks."""
    monkeypatch.setattr(indexing, "FLUSH_AT", flush_at)
    monkeypatch.setattr(chunks, "CHUNK", chunk)
    monkeypatch.setattr(chunks, "SEAL_TAIL", tail)
    with TemporaryDirectory() as tmp:
        asyncio.run(_run(Path(tmp) / "lineage.db", steps))


async def test_loading_reads_every_media_blob_in_one_query(tmp_path: Path) -> None:
    # 60 screenshot messages (three distinct images) split across a fork's two lineage segments:
    # the load is one messages query per segment and one blobs query, with every image restored.
    async with connect(tmp_path / "media.db") as conn:
        parent = SQLiteContextStore(conn, "parent", project="p")
        await parent.append_many([_msg(i, i % 3) for i in range(30)])
        child = await parent.fork()
        await child.append_many([_msg(i, (i + 1) % 3) for i in range(30, 60)])
        await child.append(_msg(60, -1))

        statements: list[str] = []
        raw = conn._conn
        await conn._execute(raw.set_trace_callback, statements.append)
        try:
            history = await child.get_history()
        finally:
            await conn._execute(raw.set_trace_callback, None)

    expected = [_msg(i, i % 3) for i in range(30)] + [_msg(i, (i + 1) % 3) for i in range(30, 60)]
    assert history == [*expected, _msg(60, -1)]
    reads = [s for s in statements if "FROM messages" in s or "FROM blobs" in s]
    assert sum("FROM messages" in s for s in reads) == 2, reads
    assert sum("FROM blobs" in s for s in reads) == 1, reads


async def test_forks_of_a_deleted_or_replaced_session_stand_alone(tmp_path: Path) -> None:
    """A deleted session's forks keep their messages and lose their lineage: a new session that
    takes the id later does not adopt them. Replacing a session by import detaches its forks
    the same way (they forked the old one), while a fork in the imported file keeps its parent."""
    from axio_context_sqlite import Database

    path = tmp_path / "forks.db"
    msgs = [Message(role="user", content=[TextBlock(text=f"m{i}")]) for i in range(6)]
    async with connect(path) as conn:
        db = Database(conn, path)
        chat = SQLiteContextStore(conn, "chat-1", project="p")
        await chat.append_many(msgs[:4])
        fork = await chat.fork()
        assert [f.session_id for f in await chat.list_forks()] == [fork.session_id]
        info = await fork.info()
        assert (info.parent_id, info.fork_position) == ("chat-1", 4)

        assert await chat.delete_session()
        info = await fork.info()
        assert (info.parent_id, info.fork_position) == (None, None)
        assert await fork.get_history() == msgs[:4]
        again = SQLiteContextStore(conn, "chat-1", project="p")
        await again.append(msgs[5])
        assert await again.list_forks() == []

        # import --replace: an export of "other" and its fork "kept" (4 messages); then "other"
        # grows to 6 and gets a second fork "late", which the replacement leaves standing alone.
        other = SQLiteContextStore(conn, "other", project="p")
        await other.append_many(msgs[:4])
        await db.fork("other", "kept")
        out = tmp_path / "other.json"
        parts: list[str | bytes] = []
        await db.export(parts.append, format="json", session_ids=["other", "kept"])
        out.write_bytes(b"".join(p.encode() if isinstance(p, str) else p for p in parts))
        await other.append_many(msgs[4:])
        late = await other.fork()
        await db.import_file(out, replace=True)
        assert await other.get_history() == msgs[:4]
        assert [f.session_id for f in await other.list_forks()] == ["kept"]
        info = await late.info()
        assert (info.parent_id, info.fork_position) == (None, None)
        assert await late.get_history() == msgs
    check_storage(path)
