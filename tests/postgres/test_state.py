"""save_state / load_state on the real PostgreSQL the tests start, mirroring tests/state/
test_saving.py: subagent histories as owned sessions, growth appended not rewritten, classes
loading each other's states, unknown fields kept, bad input writing nothing, one transaction,
and two savers of one session serialised on its row lock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.state import AgentContext, ResumableState, StateEncodeError
from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.database import PostgresDatabase, open_database
from axio_context_postgres.state import load_state, load_stored, save_state, subagent_session_id
from axio_context_postgres.tree import descendants, session_tree
from tests.support.cli_helpers import invoke, invoke_json


class MyState(ResumableState):
    custom_field: str = ""
    turns: int = 0


def history(n: int, start: int = 0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(start, start + n):
        out.append(
            {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": f"look for item {i}"}]}
        )
        out.append({"kind": "response", "parts": [{"part_kind": "text", "content": f"item {i} found"}]})
    return out


@pytest.fixture
async def db(fresh_pg_url: str) -> AsyncIterator[Pool]:
    """A pool on a database of this test's own (the tests compare whole tables)."""
    p = await connect(fresh_pg_url, min_size=1, max_size=4)
    try:
        yield p
    finally:
        await p.close()


async def rows(pool: Pool, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in await pool.fetch(sql, *args)]


def store(pool: Pool, session_id: str = "main", project: str = "p") -> PostgresContextStore:
    return PostgresContextStore(pool, session_id, project=project)


async def test_round_trip_with_subagents_as_sessions(db: Pool) -> None:
    main = store(db)
    await main.append(Message(role="user", content=[TextBlock(text="start")]))
    state = ResumableState(
        subagent_history={"explorer": history(3), "coder": history(1)},
        user_prompts=["start"],
        need_user_approve_tools=["shell"],
        deferred_tool_metadata={"call-9": {"tool": "shell", "args": {"cmd": "rm -rf build"}}},
        handoff_message="resume at step 2",
    )
    await save_state(main, state)
    loaded = await load_state(main)
    assert loaded == state
    assert loaded is not None and list(loaded.subagent_history) == ["explorer", "coder"]  # order kept
    child = store(db, subagent_session_id("main", "explorer"))
    assert len(await child.get_history()) == 6  # a session of its own, readable like any other
    assert await main.get_history() == [Message(role="user", content=[TextBlock(text="start")])]
    stored = await load_stored(main)
    assert stored is not None and stored.subagents == {"explorer": "explorer@main", "coder": "coder@main"}
    assert "subagent_history" not in stored.state
    assert stored.type == "axio_context.state.resumable.ResumableState"
    owned = await rows(
        db, "SELECT id, owner_id, agent_name FROM sessions WHERE owner_id IS NOT NULL ORDER BY id"
    )
    assert owned == [("coder@main", "main", "coder"), ("explorer@main", "main", "explorer")]


async def test_a_grown_history_is_appended_and_a_changed_one_rewritten(db: Pool) -> None:
    main = store(db)
    listing = "SELECT seg, position, created_at FROM messages ORDER BY seg, position"
    await save_state(main, ResumableState(subagent_history={"explorer": history(2)}))
    before = await rows(db, listing)
    await save_state(main, ResumableState(subagent_history={"explorer": history(3)}))
    after = await rows(db, listing)
    assert after[: len(before)] == before and len(after) == 6  # the first four rows untouched
    changed = history(3)
    changed[1] = {"kind": "response", "parts": [{"part_kind": "text", "content": "a different answer"}]}
    await save_state(main, ResumableState(subagent_history={"explorer": changed}))
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history == {"explorer": changed}
    await save_state(main, ResumableState(subagent_history={"explorer": history(1)}))  # shrunk
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(1)}
    # the rewritten histories' rows went with their segments: only the live two remain
    assert len(await rows(db, listing)) == 2


async def test_a_subagent_session_written_to_directly_is_rewritten_from_the_state(db: Pool) -> None:
    main = store(db)
    await save_state(main, ResumableState(subagent_history={"explorer": history(1)}))
    child = store(db, "explorer@main")
    await child.append(Message(role="user", content=[TextBlock(text="typed by hand")]))
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history["explorer"][-1] == {
        "kind": "request",
        "parts": [{"part_kind": "user-prompt", "content": "typed by hand"}],
    }
    await save_state(main, ResumableState(subagent_history={"explorer": history(2)}))
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(2)}


async def test_a_save_racing_another_writer_still_writes_the_whole_history(db: Pool) -> None:
    """The messages past the last save are encoded before the transaction; when the session
    turns out to hold fewer (another writer cleared it in between), the rest is encoded then."""
    main = store(db)
    await save_state(main, ResumableState(subagent_history={"explorer": history(2)}))
    await store(db, "explorer@main").clear()  # what a second process's clear leaves
    await save_state(main, ResumableState(subagent_history={"explorer": history(5)}))
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(5)}


async def test_concurrent_savers_of_one_session_queue_on_its_row(db: Pool) -> None:
    """Eight saves of one session at once, each a longer history: every one lands whole (the
    owner's row lock serialises them), and the last state stored is one of them, complete."""
    main = store(db)
    states = [ResumableState(subagent_history={"explorer": history(n)}) for n in range(1, 9)]
    await asyncio.gather(*(save_state(main, s) for s in states))
    loaded = await load_state(main)
    assert loaded is not None
    [got] = loaded.subagent_history.values()
    assert got in [s.subagent_history["explorer"] for s in states]
    assert await rows(db, "SELECT count(*) FROM sessions WHERE owner_id = 'main'") == [(1,)]
    child = await db.fetchrow("SELECT seg, next_position FROM sessions WHERE id = 'explorer@main'")
    assert child is not None and child["next_position"] == len(got)


async def test_classes_load_each_others_states_and_unknown_fields_survive_saves(db: Pool) -> None:
    main = store(db)
    await save_state(main, MyState(custom_field="mine", turns=4, user_prompts=["a"]))
    base = await load_state(main, ResumableState)
    assert base is not None and base.unknown_fields == {"custom_field": "mine", "turns": 4}
    base.user_prompts.append("b")
    await save_state(main, base)
    await save_state(main, ResumableState(handoff_message="h"))  # knows nothing of MyState's fields
    mine = await load_state(main, MyState)
    assert mine is not None and (mine.custom_field, mine.turns, mine.handoff_message) == ("mine", 4, "h")
    other = store(db, "other")
    await save_state(other, ResumableState(user_prompts=["x"]))
    defaults = await load_state(other, MyState)
    assert defaults is not None and (defaults.custom_field, defaults.turns, defaults.user_prompts) == (
        "",
        0,
        ["x"],
    )


async def test_a_future_versions_state_is_kept_whole(db: Pool) -> None:
    main = store(db)
    future = {
        "user_prompts": ["a"],
        "plan_v2": {"steps": [{"id": 1, "done": False}] * 3},
        "budget": 12.5,
        "note": "nul \x00 kept",
    }
    await save_state(main, ResumableState.from_dict(future))
    loaded = await load_state(main)
    assert loaded is not None
    assert loaded.unknown_fields == {"plan_v2": future["plan_v2"], "budget": 12.5, "note": "nul \x00 kept"}
    await save_state(main, AgentContext().with_state(loaded).export_state())  # through a context
    [(raw,)] = await rows(db, "SELECT state FROM session_states")
    assert json.loads(raw)["plan_v2"] == future["plan_v2"] and json.loads(raw)["budget"] == 12.5


async def test_no_state_loads_as_none(db: Pool) -> None:
    nothing = store(db, "nothing")
    assert await load_state(nothing) is None
    assert await load_state(nothing, MyState) is None
    assert await load_stored(nothing) is None
    assert AgentContext().with_state(await load_state(nothing)).user_prompts == []


@pytest.mark.parametrize(
    ("history_", "named"),
    [
        (
            {"explorer": [{"kind": "request", "parts": [{"content": object()}]}]},
            r"subagent_history\['explorer'\]\[0\]",
        ),
        ({"explorer": [{"kind": "request"}, "not a dict"]}, r"subagent_history\['explorer'\]\[1\]"),
        ({"": []}, "non-empty string"),
        ({"ex\x00plorer": history(1)}, "NUL character"),
        ({"explorer": "not a list"}, r"subagent_history\['explorer'\] must be a list"),
    ],
)
async def test_content_that_cannot_be_encoded_is_named_and_nothing_is_written(
    db: Pool, history_: dict[str, Any], named: str
) -> None:
    main = store(db)
    good = ResumableState(subagent_history={"explorer": history(1)}, handoff_message="good")
    await save_state(main, good)

    async def snapshot() -> tuple[list[tuple[Any, ...]], ...]:
        return (
            await rows(db, "SELECT seg, position, payload FROM messages ORDER BY seg, position"),
            await rows(db, "SELECT * FROM session_states"),
            await rows(db, "SELECT id, next_position, owner_id FROM sessions ORDER BY sid"),
        )

    before = await snapshot()
    with pytest.raises(StateEncodeError, match=named):
        await save_state(main, ResumableState(subagent_history=history_, handoff_message="bad"))
    assert await snapshot() == before
    assert await load_state(main) == good


async def test_a_state_field_that_cannot_be_encoded_is_named(db: Pool) -> None:
    main = store(db)
    with pytest.raises(StateEncodeError, match=r"ResumableState\.tasks"):
        await save_state(main, ResumableState(tasks={"t": {"bad": object()}}))
    assert await rows(db, "SELECT count(*) FROM sessions") == [(0,)]
    with pytest.raises(TypeError, match="ResumableState"):
        await save_state(main, {"user_prompts": []})  # type: ignore[arg-type]


async def test_save_is_one_transaction(db: Pool) -> None:
    """A failure half-way (creating the second subagent's session: a trigger refuses it)
    rolls the first subagent's session back with it."""
    main = store(db)
    await save_state(main, ResumableState(handoff_message="first"))
    await db.execute(
        "CREATE FUNCTION fail_second() RETURNS trigger LANGUAGE plpgsql AS $$"
        " BEGIN RAISE EXCEPTION 'injected'; END $$;"
        " CREATE TRIGGER fail_second AFTER INSERT ON sessions FOR EACH ROW"
        " WHEN (NEW.agent_name = 'second') EXECUTE FUNCTION fail_second();"
    )
    with pytest.raises(Exception, match="injected"):
        await save_state(main, ResumableState(subagent_history={"first": history(2), "second": history(1)}))
    assert await rows(db, "SELECT id FROM sessions ORDER BY sid") == [("main",)]
    assert await rows(db, "SELECT count(*) FROM messages") == [(0,)]
    assert (await load_state(main)) == ResumableState(handoff_message="first")


async def test_owner_rename_and_delete(fresh_pg_url: str) -> None:
    async with open_database(fresh_pg_url) as database:
        assert isinstance(database, PostgresDatabase)
        main = store(database.pool)
        await save_state(main, ResumableState(subagent_history={"explorer": history(1)}))
        await database.rename("main", "renamed")
        renamed = store(database.pool, "renamed")
        loaded = await load_state(renamed)
        assert loaded is not None and loaded.subagent_history == {"explorer": history(1)}
        assert await database.latest() == "renamed"  # never the subagent's session, though as new
        await database.delete(["renamed"])
        assert await load_state(renamed) is None  # the state went with its session
        # nothing else is lost: the subagent's history stays, a session like any other
        assert [s.session_id for s in (await database.list_sessions()).sessions] == ["explorer@main"]
        assert len(await store(database.pool, "explorer@main").get_history()) == 2


async def test_a_taken_readable_id_falls_back_to_a_fresh_one(db: Pool) -> None:
    squatter = store(db, "explorer@main")
    await squatter.append(Message(role="user", content=[TextBlock(text="unrelated")]))
    main = store(db)
    await save_state(main, ResumableState(subagent_history={"explorer": history(1)}))
    stored = await load_stored(main)
    assert stored is not None and stored.subagents["explorer"] != "explorer@main"
    assert len(await squatter.get_history()) == 1
    loaded = await load_state(main)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(1)}


async def test_search_and_show_reach_subagent_sessions(fresh_pg_url: str) -> None:
    async with open_database(fresh_pg_url) as database:
        main = store(database.pool)
        hist = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "where is the zebra"}]}]
        await save_state(main, ResumableState(subagent_history={"explorer": hist}))
        hits = await database.search("zebra", mode="keyword")
        assert [(h.session_id, h.position) for h in hits.hits] == [("explorer@main", 0)]
        view = await database.show("explorer@main")
        assert "zebra" in view.messages[0].content[0].text  # type: ignore[union-attr]


async def test_tree_places_subagents_and_forks_at_any_depth(db: Pool) -> None:
    main = store(db)
    await main.append(Message(role="user", content=[TextBlock(text="hi")]))
    await save_state(main, ResumableState(subagent_history={"planner": history(1)}))
    planner = store(db, "planner@main")
    await save_state(planner, ResumableState(subagent_history={"worker": history(1)}))  # nested
    fork = await main.fork()
    fork_of_planner = await planner.fork()
    await store(db, "lonely", project="q").append(Message(role="user", content=[]))
    tree = await session_tree(db)
    assert [n.info.session_id for n in tree] == ["lonely", "main"]
    top = tree[1]
    assert [(c.info.session_id, c.kind, c.agent_name) for c in top.children] == [
        ("planner@main", "subagent", "planner"),
        (fork.session_id, "fork", None),
    ]
    planner_node = top.children[0]
    assert planner_node.info.message_count == 2
    assert [(c.info.session_id, c.kind) for c in planner_node.children] == [
        ("worker@planner@main", "subagent"),
        (fork_of_planner.session_id, "fork"),
    ]
    assert [n.info.session_id for n in await session_tree(db, "q")] == ["lonely"]
    assert [n.info.session_id for n in await session_tree(db, limit=1)] == ["lonely"]
    assert set(await descendants(db, ["main"])) == {
        "planner@main",
        "worker@planner@main",
        fork.session_id,
        fork_of_planner.session_id,
    }
    with pytest.raises(ValueError, match="limit"):
        await session_tree(db, limit=0)


def test_cli_state_and_tree_on_postgres(fresh_pg_url: str) -> None:
    """``state`` and ``list-sessions --tree`` read a PostgreSQL database as they read SQLite."""

    async def fill() -> str:
        pool = await connect(fresh_pg_url, min_size=1, max_size=2)
        try:
            main = store(pool)
            await main.append(Message(role="user", content=[TextBlock(text="hello there")]))
            await save_state(
                main, ResumableState(subagent_history={"explorer": history(1)}, handoff_message="go on")
            )
            return (await main.fork()).session_id
        finally:
            await pool.close()

    fork = asyncio.run(fill())
    state = invoke_json("--db", fresh_pg_url, "state", "main", "--json")
    assert (
        state["subagents"] == {"explorer": "explorer@main"} and state["state"]["handoff_message"] == "go on"
    )
    assert "subagent explorer: session explorer@main" in invoke("--db", fresh_pg_url, "state", "main").stdout
    tree = invoke_json("--db", fresh_pg_url, "list-sessions", "--tree", "--json")
    assert [(n["session_id"], n["kind"]) for n in tree] == [("main", "session")]
    assert [(c["session_id"], c["kind"], c["agent_name"]) for c in tree[0]["children"]] == [
        ("explorer@main", "subagent", "explorer"),
        (fork, "fork", None),
    ]
    table = invoke("--db", fresh_pg_url, "list-sessions", "--tree").stdout
    assert "[explorer] explorer@main" in table
    missing = invoke("--db", fresh_pg_url, "state", fork, ok=False)
    assert (
        missing.exit_code == 1
        and missing.stderr.strip() == f"Error: no agent state is saved with session {fork!r}"
    )


def test_copy_keeps_subagent_links_both_ways(fresh_pg_url: str, tmp_path: Path) -> None:
    """``copy`` SQLite -> PostgreSQL -> SQLite: subagent sessions keep their owner and name (the
    exports of all three are byte-identical), and the tree on PostgreSQL nests them."""
    from axio_context_sqlite import SQLiteContextStore
    from axio_context_sqlite import connect as sqlite_connect
    from axio_context_sqlite.state import save_state as sqlite_save_state

    src = tmp_path / "src.db"

    async def fill() -> None:
        async with sqlite_connect(src) as conn:
            main = SQLiteContextStore(conn, "main", project="p")
            await main.append(Message(role="user", content=[TextBlock(text="hello")]))
            await sqlite_save_state(main, ResumableState(subagent_history={"explorer": history(2)}))

    asyncio.run(fill())
    assert invoke_json("copy", src, fresh_pg_url, "--json")["copied"] == 2
    back = tmp_path / "back.db"
    assert invoke_json("copy", fresh_pg_url, back, "--json")["copied"] == 2
    exports = [
        invoke("--db", db, "export", "--all", "-f", "jsonl").stdout for db in (src, fresh_pg_url, back)
    ]
    assert exports[0] == exports[1] == exports[2] and '"owner_id":"main"' in exports[1]
    tree = invoke_json("--db", fresh_pg_url, "list-sessions", "--tree", "--json")
    assert [(c["session_id"], c["kind"]) for c in tree[0]["children"]] == [("explorer@main", "subagent")]
    children = invoke("--db", fresh_pg_url, "export", "main", "--children", "-f", "jsonl").stdout
    assert children == exports[1]  # main and, under it, its subagent's session: everything here
