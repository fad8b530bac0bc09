"""AxioAdvancedSession's turns table (``message_turns``, axio_context.turns_sql): a turn is written
in its append's transaction, a branch sees its parent's turns with no row copied (and keeps them
when the parent pops below the fork point or is deleted), a session written before the table
reads the same after, search escapes what the stored JSON escapes. Each test runs on SQLite and on
PostgreSQL."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from typing import Any

import asyncpg
import pytest

from axio_context.backends import backend_of
from axio_context.usage_limits import RunUsage
from axio_context_openai_agents import AxioAdvancedSession, AxioContextSession
from axio_context_openai_agents.session import ADAPTER
from axio_context_openai_agents.turns import BRANCHES_KEY, TURNS_KEY, USED_KEY, pack, stamp
from axio_context_postgres.embedded import EmbeddedServer
from tests.bridges.advanced_support import Result, turn
from tests.support.backends import Backend
from tests.support.postgres import new_database


async def _sql(backend: Backend, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` read straight from the database (``?``-free SQL both backends take)."""
    if backend.name == "sqlite":
        with sqlite3.connect(backend.where) as db:
            return [tuple(r) for r in db.execute(sql).fetchall()]
    conn = await asyncpg.connect(backend.where)
    try:
        return [tuple(r) for r in await conn.fetch(sql)]
    finally:
        await conn.close()


async def _contents(session: AxioAdvancedSession, branch: str | None = None) -> list[str]:
    return [t["content"] for t in await session.get_conversation_turns(branch)]


async def test_a_branch_sees_its_parents_turns_with_no_row_copied(backend_db: Backend) -> None:
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        for i in range(1, 5):
            await session.add_items(turn(i))
        assert await _sql(backend_db, "SELECT count(*) FROM message_turns") == [(4,)]
        await session.create_branch_from_turn(3, "b")
        assert await _sql(backend_db, "SELECT count(*) FROM message_turns") == [(4,)]  # nothing copied
        assert await _contents(session) == ["question 1", "question 2"]
        await session.add_items(turn(7))
        assert await _contents(session) == ["question 1", "question 2", "question 7"]
        assert [t["turn"] for t in await session.find_turns_by_content("question 7")] == [3]
        assert await _contents(session, "main") == [f"question {i}" for i in range(1, 5)]
        await session.create_branch_from_turn(3, "c")  # a branch of the branch, at its own turn
        assert await session.get_items() == turn(1) + turn(2)
        await session.switch_to_branch("b")
        with pytest.raises(
            ValueError, match=re.escape("Turn 4 does not contain a user message in branch 'b'")
        ):
            await session.create_branch_from_turn(4, "d")
        assert (await session.get_conversation_turns())[-1]["turn"] == 3
        assert await _sql(backend_db, "SELECT count(*) FROM message_turns") == [(5,)]
    finally:
        session.close()


async def test_a_forks_turns_outlive_its_parents_pop_and_delete(backend_db: Backend) -> None:
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        for i in range(1, 4):
            await session.add_items(turn(i))
        await session.create_branch_from_turn(3, "b")  # sees turns 1 and 2 of main
        await session.add_items(turn(8))
        await session.add_items(turn(9))
        await session.create_branch_from_turn(4, "c")  # sees main's 1 and 2 and b's 8
        await session.switch_to_branch("main")
        for _ in range(6):  # main empty: its rows below the forks' points go to the forks
            await session.pop_item()
        assert await session.get_conversation_turns() == []
        await session.delete_branch("b")  # c's parent: its rows (turn 8) go to c
        await session.switch_to_branch("c")
        assert await _contents(session) == ["question 1", "question 2", "question 8"]
        await session.add_items(turn(7))
        assert [t["turn"] for t in await session.find_turns_by_content("question 7")] == [4]
        name = await session.create_branch_from_turn(2)
        assert await session.get_items() == turn(1)
        assert name.startswith("branch_from_turn_2_")
        await session.switch_to_branch("main")
        await session.add_items(turn(5))
        assert [t["turn"] for t in await session.get_conversation_turns()] == [1]
    finally:
        session.close()


async def test_a_turn_goes_in_with_its_items_or_not_at_all(backend_db: Backend) -> None:
    """The turn row and the items are one transaction: a turn row the database refuses (a
    trigger here, as a full disk or a crash would) leaves no item behind."""
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        await session.add_items(turn(1))
        await _refusing(backend_db, True)
        with pytest.raises(Exception, match="refused"):
            await session.add_items(turn(2))
        assert await session.get_items() == turn(1)
        assert await _contents(session) == ["question 1"]
        await session.add_items([{"role": "assistant", "content": "no turn, no index row"}])
        assert len(await session.get_items()) == 3
    finally:
        session.close()
        await _refusing(backend_db, False)  # a PostgreSQL database is emptied, not dropped, after


async def _refusing(backend: Backend, on: bool) -> None:
    """Make the database refuse every new turn row (``on``), or stop it."""
    if backend.name == "sqlite":
        with sqlite3.connect(backend.where) as db:
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON message_turns"
                " BEGIN SELECT RAISE(ABORT, 'refused'); END"
                if on
                else "DROP TRIGGER refuse"
            )
        return
    conn = await asyncpg.connect(backend.where)
    try:
        await conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
            " $$ BEGIN RAISE EXCEPTION 'refused'; END $$;"
            " CREATE TRIGGER refuse BEFORE INSERT ON message_turns FOR EACH ROW EXECUTE FUNCTION refuse()"
            if on
            else "DROP TRIGGER refuse ON message_turns; DROP FUNCTION refuse()"
        )
    finally:
        await conn.close()


async def test_search_matches_what_the_stored_json_escapes(backend_db: Backend) -> None:
    texts = ['say "hi" at 100% of _x_', "a back\\slash", "ümlaut и 中文", "plain"]
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        for text in texts:
            await session.add_items([{"role": "user", "content": text}])
        await session.add_items([{"role": "user", "content": [{"type": "input_text", "text": "Parts HI"}]}])

        async def found(term: str) -> list[int]:
            return [t["turn"] for t in await session.find_turns_by_content(term)]

        assert await found('"hi"') == [1]
        assert await found("100%") == [1]
        assert await found("_x_") == [1]
        assert await found("%") == [1]
        assert await found("\\") == [2]
        assert await found("ümlaut") == [3]
        assert await found("中文") == [3]
        assert await found("hi") == [1, 5]  # ASCII case ignored, parts' text searched
        assert await found("type") == []  # the parts' JSON keys are not their text
        assert await found("ÜMLAUT") == []  # as openai-agents: only ASCII case is ignored
    finally:
        session.close()


async def test_a_session_written_before_the_turns_table_reads_the_same(backend_db: Backend) -> None:
    """As the code before the table wrote it: turns ``[position, ms]`` packed in each session's
    metadata, a branch a fork with its own copy of the turns before it, usage records whose run
    id names a turn's position and time. Opened now, it reads the same and loses the metadata key."""
    made = [1_700_000_000_000 + 1000 * i for i in range(3)]
    plain = AxioContextSession("adv", backend_db.where)
    for i in (1, 2, 3):
        await plain.add_items(turn(i))
    plain.close()
    async with backend_db.open() as handle:
        backend = backend_of(handle)
        main = backend.context_store(handle, "adv")
        turns = [[2 * i, made[i]] for i in range(3)]
        log = backend.conversation_log(handle, adapter=ADAPTER, project=None, token_counter=None)
        await log.fork_at("adv", 4, "old-branch")
        branch = backend.context_store(handle, "old-branch")
        await branch.set_metadata({**await branch.get_metadata(), TURNS_KEY: pack(turns[:2])})  # type: ignore[attr-defined]
        await main.set_metadata(  # type: ignore[attr-defined]
            {
                **await main.get_metadata(),  # type: ignore[attr-defined]
                TURNS_KEY: pack(turns),
                BRANCHES_KEY: {"old": {"session": "old-branch", "created_at": "2026-01-01 00:00:00"}},
                USED_KEY: ["old"],
            }
        )
        recorder = backend.usage_recorder(handle)
        for i, (position, ms) in enumerate(turns):
            run = f"adv/turn/{position}.{ms}"  # what the code before named a turn's usage by
            await recorder.record(RunUsage(requests=1, input_tokens=10 * i), session_id="adv", run=run)
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        got = await session.get_conversation_turns()
        assert [(t["turn"], t["content"], t["timestamp"]) for t in got] == [
            (i + 1, f"question {i + 1}", stamp(made[i])) for i in range(3)
        ]
        usage = await session.get_turn_usage()
        assert isinstance(usage, list)
        assert [(u["user_turn_number"], u["input_tokens"]) for u in usage] == [(1, 0), (2, 10), (3, 20)]
        branches = {b["branch_id"]: b["user_turns"] for b in await session.list_branches()}
        assert branches == {"main": 3, "old": 2}
        assert await _contents(session, "old") == ["question 1", "question 2"]
        await session.switch_to_branch("old")
        await session.add_items(turn(4))
        assert [t["turn"] for t in await session.find_turns_by_content("question 4")] == [3]
        with pytest.raises(
            ValueError, match=re.escape("Branch ID 'old' has already been used. Choose a new branch ID.")
        ):
            await session.create_branch_from_turn(1, "old")
    finally:
        session.close()
    async with backend_db.open() as handle:
        for sid in ("adv", "old-branch"):
            store = backend_of(handle).context_store(handle, sid)
            assert TURNS_KEY not in await store.get_metadata()  # type: ignore[attr-defined]
    again = AxioAdvancedSession("adv", backend_db.where)  # read again: the table alone
    try:
        assert await again.get_conversation_turns() == got
        assert await again.get_turn_usage() == usage
    finally:
        again.close()


async def test_a_plain_sessions_turns_are_found_in_its_history(backend_db: Backend) -> None:
    plain = AxioContextSession("adv", backend_db.where)
    for i in (1, 2):
        await plain.add_items(turn(i))
    plain.close()
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        assert await _contents(session) == ["question 1", "question 2"]
        await session.add_items(turn(3))
        await session.store_run_usage(Result(5))  # type: ignore[arg-type]
        assert [u["user_turn_number"] for u in await session.get_turn_usage()] == [3]  # type: ignore[index]
        assert await session.get_turn_usage(3) != {}
        assert await session.get_turn_usage(9) == {}
    finally:
        session.close()


async def test_turn_rows_go_with_their_sessions(backend_db: Backend) -> None:
    session = AxioAdvancedSession("adv", backend_db.where)
    try:
        for i in (1, 2):
            await session.add_items(turn(i))
        await session.create_branch_from_turn(2, "b")
        await session.add_items(turn(3))
        await session.clear_session()
        assert await _sql(backend_db, "SELECT count(*) FROM message_turns") == [(0,)]
        assert await session.get_conversation_turns() == []
    finally:
        session.close()


@pytest.fixture
def sealed_url(pg_server: EmbeddedServer) -> str:
    return new_database(pg_server, "axio_turns_sealed")


async def test_a_turns_content_is_sealed_on_an_encrypted_postgresql_database(
    sealed_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a key, PostgreSQL holds a turn's content sealed (as the items), and search still
    finds the turn (the sealed rows are checked after they are opened)."""
    url = sealed_url
    monkeypatch.setenv("AXIO_CONTEXT_KEY", bytes(range(32)).hex())
    session = AxioAdvancedSession("adv", url)
    try:
        await session.add_items([{"role": "user", "content": "PLANTEDzebra in the lighthouse"}])
        await session.add_items(turn(2))
        assert [t["turn"] for t in await session.find_turns_by_content("zebra")] == [1]
        assert await _contents(session) == ["PLANTEDzebra in the lighthouse", "question 2"]
    finally:
        session.close()
    conn = await asyncpg.connect(url)
    try:
        stored = [r[0] for r in await conn.fetch("SELECT content FROM message_turns ORDER BY position")]
    finally:
        await conn.close()
    assert len(stored) == 2
    assert not any("PLANTED" in s or "question" in s for s in stored)


async def test_turns_appended_at_once_by_two_objects_are_numbered_in_order(backend_db: Backend) -> None:
    first = AxioAdvancedSession("adv", backend_db.where)
    second = AxioAdvancedSession("adv", backend_db.where)
    try:
        await first.add_items(turn(0))
        await asyncio.gather(*(s.add_items(turn(i)) for i in range(1, 9) for s in (first, second)))
        turns = await second.get_conversation_turns()
        assert [t["turn"] for t in turns] == list(range(1, 18))
        items: list[Any] = await first.get_items()
        users = [item["content"] for item in items if item.get("role") == "user"]
        assert [t["content"] for t in turns] == users
    finally:
        first.close()
        second.close()


async def test_a_turn_popped_elsewhere_is_gone_and_its_position_reused_cleanly(backend_db: Backend) -> None:
    """A user message popped through the plain session (which knows nothing of turns) is no
    turn any more, and the non-user item appended at its position next starts none."""
    session = AxioAdvancedSession("adv", backend_db.where)
    plain = AxioContextSession("adv", backend_db.where)
    try:
        await session.add_items(turn(1))
        await session.add_items([{"role": "user", "content": "question 2"}])
        assert await plain.pop_item() == {"role": "user", "content": "question 2"}
        assert await _contents(session) == ["question 1"]
        await session.add_items([{"role": "assistant", "content": "more"}])
        assert await _contents(session) == ["question 1"]
        await session.add_items(turn(3))
        assert [t["turn"] for t in await session.get_conversation_turns()] == [1, 2]
    finally:
        plain.close()
        session.close()
