"""Fork cost, counted in rows rather than timed: a fork of a 10,000-message session copies no
message row, and clear/pop/delete on a forked session copy only the rows a fork inherits from
what is being removed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from axio_context_sqlite import Connection, SQLiteContextStore
from tests.support.sqlite_checks import check_storage, message_row_count, raw_connect, text_message, texts

N = 10_000


def rows_by_session(path: Path) -> Counter[str]:
    """How many message rows each session owns (its own range of the messages table)."""
    db = raw_connect(path)
    try:
        ids = dict(db.execute("SELECT sid, id FROM sessions").fetchall())
        return Counter(ids[mid >> 32] for (mid,) in db.execute("SELECT id FROM messages"))
    finally:
        db.close()


async def _long_session(conn: Connection, session_id: str, n: int = N) -> SQLiteContextStore:
    store = SQLiteContextStore(conn, session_id, project="p")
    for start in range(0, n, 2000):
        await store.append_many([text_message(f"m{i}") for i in range(start, min(n, start + 2000))])
    return store


async def test_fork_copies_no_message_rows(conn: Connection, db_path: Path) -> None:
    root = await _long_session(conn, "root")
    before = message_row_count(db_path)
    assert before == N

    child = await root.fork()
    grandchild = await child.fork()
    assert message_row_count(db_path) == before
    assert (await grandchild.info()).message_count == N

    await child.append(text_message("child's own"))
    await grandchild.append(text_message("grandchild's own"))
    assert rows_by_session(db_path) == {"root": N, child.session_id: 1, grandchild.session_id: 1}
    history = texts(await grandchild.get_history())
    assert history[:3] == ["m0", "m1", "m2"]
    assert history[-2:] == [f"m{N - 1}", "grandchild's own"]
    assert len(history) == N + 1
    assert texts(await root.get_history())[-1] == f"m{N - 1}"


async def test_pop_on_a_forked_parent_copies_only_the_popped_row(conn: Connection, db_path: Path) -> None:
    parent = await _long_session(conn, "parent")
    child = await parent.fork()  # inherits all N messages

    popped = await parent.pop()
    assert popped is not None and popped.text == f"m{N - 1}"
    # The parent's row at N-1 is gone; the child needed exactly that one copied, nothing more.
    assert rows_by_session(db_path) == {"parent": N - 1, child.session_id: 1}
    assert texts(await child.get_history()) == [f"m{i}" for i in range(N)]
    assert len(await parent.get_history()) == N - 1

    await parent.pop()  # again a row the child inherits: one more copied
    await parent.append(text_message("retry"))
    assert rows_by_session(db_path) == {"parent": N - 1, child.session_id: 2}
    assert texts(await child.get_history())[-2:] == [f"m{N - 2}", f"m{N - 1}"]
    assert texts(await parent.get_history())[-2:] == [f"m{N - 3}", "retry"]
    check_storage(db_path)


async def test_pop_past_a_fork_point_copies_nothing(conn: Connection, db_path: Path) -> None:
    parent = await _long_session(conn, "parent")
    await parent.pop()
    early = await parent.fork()  # at N - 1
    await parent.append(text_message("later"))

    await parent.pop()  # removes "later", which no fork inherits
    assert rows_by_session(db_path) == {"parent": N - 1}
    assert len(await early.get_history()) == N - 1
    check_storage(db_path)


async def test_clear_on_a_forked_parent_copies_what_the_fork_inherits(
    conn: Connection, db_path: Path
) -> None:
    parent = await _long_session(conn, "parent")
    half = await SQLiteContextStore(conn, "parent", project="p").fork()
    await parent.append(text_message("after the fork"))
    # A fork that inherits only a prefix: pop down to 5,000 first, then fork.
    small_parent = await _long_session(conn, "small", 5_000)
    small_fork = await small_parent.fork()
    await small_parent.append_many([text_message(f"x{i}") for i in range(100)])
    counts = rows_by_session(db_path)

    await small_parent.clear()
    after = rows_by_session(db_path)
    assert after[small_fork.session_id] == 5_000  # exactly its inherited prefix
    assert "small" not in after
    assert after["parent"] == counts["parent"]  # nothing else moved
    assert after[half.session_id] == 0
    assert len(await small_fork.get_history()) == 5_000
    assert await small_parent.get_history() == []

    await parent.clear()
    after = rows_by_session(db_path)
    assert after[half.session_id] == N  # it inherited N of the parent's N + 1 rows
    assert "parent" not in after
    assert texts(await half.get_history())[-1] == f"m{N - 1}"
    check_storage(db_path)


async def test_delete_of_a_middle_session_copies_only_its_own_inherited_rows(
    conn: Connection, db_path: Path
) -> None:
    root = await _long_session(conn, "root")
    middle = await root.fork()
    await middle.append_many([text_message(f"mid{i}") for i in range(5)])
    leaf = await middle.fork()  # inherits N rows from root and 5 from middle
    await leaf.append(text_message("leaf"))
    before = message_row_count(db_path)

    assert await middle.delete_session()
    after = rows_by_session(db_path)
    # The 5 rows the leaf inherited from the deleted session were copied; root's N stay shared.
    assert after == {"root": N, leaf.session_id: 6}
    assert message_row_count(db_path) == before - 5 + 5
    history = texts(await leaf.get_history())
    assert len(history) == N + 6
    assert history[N:] == [f"mid{i}" for i in range(5)] + ["leaf"]
    check_storage(db_path)
