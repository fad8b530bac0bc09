"""``pop`` of a plain last message (a chat app's retry of what it just appended) takes the short
path: seven statements, counted here, not the general path's twenty; whatever else holds
the position (a fork, a checkpoint, media, a folded keyword-index entry) takes the general path.
Either way the file stays sound and reads the same."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from axio_context.blocks import TextBlock
from axio_context.checkpoints import Checkpoint
from axio_context.messages import Message
from axio_context_sqlite import Connection, SQLiteContextStore
from axio_context_sqlite.store import indexing
from axio_context_sqlite.store.calls import run
from axio_context_sqlite.store.transactions import write_tx
from tests.support.sqlite_checks import check_storage, scalar, text_message, texts


def _fold(c: Any) -> None:
    with write_tx(c):
        indexing.flush_pending(c)


async def _counted_pop(conn: Connection, store: SQLiteContextStore) -> tuple[Message | None, int]:
    """The popped message and how many statements its transaction ran (BEGIN to COMMIT)."""
    raw: Any = conn._conn  # the driver's connection, traced while the worker is idle
    seen: list[str] = []
    raw.set_trace_callback(seen.append)
    try:
        popped = await store.pop()
    finally:
        raw.set_trace_callback(None)
    # FTS5's own statements are left out (``--`` traces, its config read once per connection)
    ran = [s for s in seen if not s.startswith("--") and "'main'." not in s]
    begin = next(i for i, s in enumerate(ran) if s.startswith("BEGIN"))
    return popped, len(ran) - begin


async def test_a_plain_last_message_pops_in_a_few_statements(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append_many([text_message(f"m{i}", "user" if i % 2 == 0 else "assistant") for i in range(5)])
    before = await store.estimated_view_tokens()
    last = Message(role="assistant", content=[TextBlock(text="retry me")], id="msg-9")
    await store.append(last)

    popped, statements = await _counted_pop(conn, store)
    assert popped == last  # the id kept beside the row comes back too
    assert statements <= 7  # BEGIN, the session row, the guarded DELETE, extras, queue, UPDATE, COMMIT
    assert texts(await store.get_history()) == [f"m{i}" for i in range(5)]
    assert await store.estimated_view_tokens() == before
    assert (await store.info()).message_count == 5
    assert check_storage(db_path) == {"s": 5}
    await store.append(text_message("again", "assistant"))
    assert texts(await store.get_history())[-1] == "again"
    assert check_storage(db_path) == {"s": 6}


async def test_popping_the_preview_message_clears_the_preview(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append(text_message("the first question"))
    popped, statements = await _counted_pop(conn, store)
    assert popped is not None and texts([popped]) == ["the first question"]
    assert statements <= 7  # BEGIN, the session row, the guarded DELETE, extras, queue, UPDATE, COMMIT
    assert scalar(db_path, "SELECT preview FROM sessions WHERE id = 's'") is None
    await store.append(text_message("another question"))
    assert (await store.info()).preview == "another question"


async def test_what_holds_the_last_position_takes_the_general_path(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append_many([text_message(f"m{i}") for i in range(4)])
    # folded into the keyword index: removing it needs its text, so the general path
    await run(conn, _fold)
    popped, statements = await _counted_pop(conn, store)
    assert popped is not None and texts([popped]) == ["m3"]
    assert statements > 12
    # a fork reading the last position keeps it
    await store.append(text_message("shared"))
    child = await store.fork()
    popped, _ = await _counted_pop(conn, store)
    assert popped is not None and texts([popped]) == ["shared"]
    assert texts(await child.get_history()) == ["m0", "m1", "m2", "shared"]
    # a checkpoint past the new end goes with the pop
    await store.append(text_message("covered"))
    await store.add_checkpoint(Checkpoint(position=4, summary=[text_message("summary")]))
    popped, _ = await _counted_pop(conn, store)
    assert popped is not None and texts([popped]) == ["covered"]
    assert await store.list_checkpoints() == []
    assert check_storage(db_path) == {"s": 3, child.session_id: 4}


async def test_a_pop_runs_on_the_event_loops_thread_when_the_worker_is_idle(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append_many([text_message(f"m{i}") for i in range(20)])  # a turn: inline too
    jobs = conn.jobs
    popped = await store.pop()
    assert popped is not None and texts([popped]) == ["m19"]
    assert conn.jobs == jobs  # no hop to the worker thread
    assert len(await store.get_history()) == 19


async def test_a_hidden_mark_a_run_tag_or_an_embedding_takes_the_general_path(
    conn: Connection, db_path: Path
) -> None:
    """The guard folded into the short path's DELETE: each other row holding the last position
    (a hidden mark, a run tag, an embedding; written here as those layers write them) keeps the
    short path from deleting it, and the general path pops it with that row."""
    store = SQLiteContextStore(conn, "s", project="p")
    await store.append_many([text_message(f"m{i}") for i in range(3)])
    sid = int(scalar(db_path, "SELECT sid FROM sessions WHERE id = 's'"))
    holders = (
        ("INSERT INTO hidden_messages (sid, position) VALUES (?, ?)", "hidden_messages"),
        ("INSERT INTO message_runs (id, run) VALUES (?, 1)", "message_runs"),
        ("INSERT INTO message_vectors (id, embedding) VALUES (?, x'00000000')", "message_vectors"),
    )
    for n, (insert, table) in enumerate(holders):
        last = 2 - n
        mid = (sid << 32) | last
        await conn.execute(insert, (sid, last) if table == "hidden_messages" else (mid,))
        await conn.commit()
        popped, statements = await _counted_pop(conn, store)
        assert popped is not None and texts([popped]) == [f"m{last}"]
        assert statements > 7  # not the short path
        assert int(scalar(db_path, f"SELECT count(*) FROM {table}")) == 0  # gone with it
        assert (await store.info()).message_count == last
    assert check_storage(db_path) == {"s": 0}
