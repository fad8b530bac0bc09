"""save_state / load_state on a real SQLite file: subagent histories as owned sessions, growth
appended not rewritten, classes loading each other's states, unknown fields kept, bad input
writing nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sqlean

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.state import AgentContext, ResumableState, StateEncodeError
from axio_context_sqlite import Connection, Database, SQLiteContextStore, open_database
from axio_context_sqlite.state import (
    descendants,
    load_state,
    load_stored,
    save_state,
    session_tree,
    subagent_session_id,
)


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


def rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlean.connect(str(path)) as db:
        return list(db.execute(sql, args))


async def test_round_trip_with_subagents_as_sessions(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    await store.append(Message(role="user", content=[TextBlock(text="start")]))
    state = ResumableState(
        subagent_history={"explorer": history(3), "coder": history(1)},
        user_prompts=["start"],
        need_user_approve_tools=["shell"],
        deferred_tool_metadata={"call-9": {"tool": "shell", "args": {"cmd": "rm -rf build"}}},
        handoff_message="resume at step 2",
    )
    await save_state(store, state)
    loaded = await load_state(store)
    assert loaded == state
    assert list(loaded.subagent_history) == ["explorer", "coder"]  # pai's order kept
    child = SQLiteContextStore(conn, subagent_session_id("main", "explorer"), project="p")
    assert len(await child.get_history()) == 6  # a session of its own, readable like any other
    assert await store.get_history() == [Message(role="user", content=[TextBlock(text="start")])]
    stored = await load_stored(store)
    assert stored is not None and stored.subagents == {"explorer": "explorer@main", "coder": "coder@main"}
    assert "subagent_history" not in stored.state


async def test_a_grown_history_is_appended_and_a_changed_one_rewritten(
    conn: Connection, db_path: Path
) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, ResumableState(subagent_history={"explorer": history(2)}))
    before = rows(db_path, "SELECT id, created_at FROM messages ORDER BY id")
    await save_state(store, ResumableState(subagent_history={"explorer": history(3)}))
    after = rows(db_path, "SELECT id, created_at FROM messages ORDER BY id")
    assert after[: len(before)] == before and len(after) == 6  # the first four rows untouched
    changed = history(3)
    changed[1] = {"kind": "response", "parts": [{"part_kind": "text", "content": "a different answer"}]}
    await save_state(store, ResumableState(subagent_history={"explorer": changed}))
    loaded = await load_state(store)
    assert loaded is not None and loaded.subagent_history == {"explorer": changed}
    await save_state(store, ResumableState(subagent_history={"explorer": history(1)}))  # shrunk
    loaded = await load_state(store)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(1)}


async def test_a_subagent_session_written_to_directly_is_rewritten_from_the_state(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, ResumableState(subagent_history={"explorer": history(1)}))
    child = SQLiteContextStore(conn, "explorer@main", project="p")
    await child.append(Message(role="user", content=[TextBlock(text="typed by hand")]))
    assert (await load_state(store)).subagent_history["explorer"][-1] == {  # type: ignore[union-attr]
        "kind": "request",
        "parts": [{"part_kind": "user-prompt", "content": "typed by hand"}],
    }
    await save_state(store, ResumableState(subagent_history={"explorer": history(2)}))
    assert (await load_state(store)).subagent_history == {"explorer": history(2)}  # type: ignore[union-attr]


async def test_a_save_racing_another_writer_still_writes_the_whole_history(
    conn: Connection, db_path: Path
) -> None:
    """The messages past the last save are encoded before the transaction; when the session
    turns out to hold fewer (another process cleared it in between), the rest is encoded then."""
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, ResumableState(subagent_history={"explorer": history(2)}))
    with sqlean.connect(str(db_path)) as raw:  # what a second process's clear leaves: no rows
        raw.execute("DELETE FROM messages")
        raw.execute("UPDATE sessions SET next_position = 0, est_tokens = 0 WHERE id = 'explorer@main'")
    await save_state(store, ResumableState(subagent_history={"explorer": history(5)}))
    loaded = await load_state(store)
    assert loaded is not None and loaded.subagent_history == {"explorer": history(5)}


async def test_classes_load_each_others_states_and_unknown_fields_survive_saves(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, MyState(custom_field="mine", turns=4, user_prompts=["a"]))
    base = await load_state(store, ResumableState)
    assert base is not None and base.unknown_fields == {"custom_field": "mine", "turns": 4}
    base.user_prompts.append("b")
    await save_state(store, base)
    fresh_base = ResumableState(handoff_message="h")  # knows nothing of MyState's fields
    await save_state(store, fresh_base)
    mine = await load_state(store, MyState)
    assert mine is not None and (mine.custom_field, mine.turns, mine.handoff_message) == ("mine", 4, "h")
    other = SQLiteContextStore(conn, "other", project="p")
    await save_state(other, ResumableState(user_prompts=["x"]))
    defaults = await load_state(other, MyState)
    assert defaults is not None and (defaults.custom_field, defaults.turns, defaults.user_prompts) == (
        "",
        0,
        ["x"],
    )


async def test_a_future_versions_state_is_kept_whole(conn: Connection, db_path: Path) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    future = {"user_prompts": ["a"], "plan_v2": {"steps": [{"id": 1, "done": False}] * 3}, "budget": 12.5}
    await save_state(store, ResumableState.from_dict(future))
    loaded = await load_state(store)
    assert loaded is not None and loaded.unknown_fields == {"plan_v2": future["plan_v2"], "budget": 12.5}
    await save_state(store, AgentContext().with_state(loaded).export_state())  # through a context
    [(raw,)] = rows(db_path, "SELECT state FROM session_states")
    assert json.loads(raw)["plan_v2"] == future["plan_v2"] and json.loads(raw)["budget"] == 12.5


async def test_no_state_loads_as_none(conn: Connection) -> None:
    store = SQLiteContextStore(conn, "nothing", project="p")
    assert await load_state(store) is None
    assert await load_state(store, MyState) is None
    assert AgentContext().with_state(await load_state(store)).user_prompts == []


@pytest.mark.parametrize(
    ("history_", "named"),
    [
        (
            {"explorer": [{"kind": "request", "parts": [{"content": object()}]}]},
            r"subagent_history\['explorer'\]\[0\]",
        ),
        ({"explorer": [{"kind": "request"}, "not a dict"]}, r"subagent_history\['explorer'\]\[1\]"),
        ({"": []}, "non-empty string"),
    ],
)
async def test_content_that_cannot_be_encoded_is_named_and_nothing_is_written(
    conn: Connection, db_path: Path, history_: dict[str, Any], named: str
) -> None:
    store = SQLiteContextStore(conn, "main", project="p")
    good = ResumableState(subagent_history={"explorer": history(1)}, handoff_message="good")
    await save_state(store, good)
    before = (
        rows(db_path, "SELECT * FROM messages ORDER BY id"),
        rows(db_path, "SELECT * FROM session_states"),
    )
    with pytest.raises(StateEncodeError, match=named):
        await save_state(store, ResumableState(subagent_history=history_, handoff_message="bad"))
    after = rows(db_path, "SELECT * FROM messages ORDER BY id"), rows(db_path, "SELECT * FROM session_states")
    assert after == before
    assert await load_state(store) == good


async def test_save_is_one_transaction(conn: Connection, db_path: Path) -> None:
    """A failure half-way (the second subagent's id is taken by a session that is not its, and
    the fallback uuid id is made to fail too) rolls the first subagent's session back with it."""
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, ResumableState(handoff_message="first"))
    with sqlean.connect(str(db_path)) as raw:  # make any new session with this owner fail
        raw.execute(
            "CREATE TRIGGER fail_second AFTER UPDATE OF owner_id ON sessions WHEN NEW.agent_name = 'second'"
            " BEGIN SELECT RAISE(ABORT, 'injected'); END"
        )
    with pytest.raises(Exception, match="injected"):
        await save_state(store, ResumableState(subagent_history={"first": history(2), "second": history(1)}))
    assert rows(db_path, "SELECT id FROM sessions ORDER BY sid") == [("main",)]
    assert (await load_state(store)) == ResumableState(handoff_message="first")


async def test_tree_places_subagents_and_forks_at_any_depth(conn: Connection) -> None:
    main = SQLiteContextStore(conn, "main", project="p")
    await main.append(Message(role="user", content=[TextBlock(text="hi")]))
    await save_state(main, ResumableState(subagent_history={"planner": history(1)}))
    planner = SQLiteContextStore(conn, "planner@main", project="p")
    await save_state(planner, ResumableState(subagent_history={"worker": history(1)}))  # nested
    fork = await main.fork()
    fork_of_planner = await planner.fork()
    await SQLiteContextStore(conn, "lonely", project="q").append(Message(role="user", content=[]))
    tree = await session_tree(conn)
    assert [n.info.session_id for n in tree] == ["lonely", "main"]
    top = tree[1]
    assert [(c.info.session_id, c.kind, c.agent_name) for c in top.children] == [
        ("planner@main", "subagent", "planner"),
        (fork.session_id, "fork", None),
    ]
    planner_node = top.children[0]
    assert [(c.info.session_id, c.kind) for c in planner_node.children] == [
        ("worker@planner@main", "subagent"),
        (fork_of_planner.session_id, "fork"),
    ]
    assert [n.info.session_id for n in await session_tree(conn, "q")] == ["lonely"]
    assert [n.info.session_id for n in await session_tree(conn, limit=1)] == ["lonely"]
    assert set(await descendants(conn, ["main"])) == {
        "planner@main",
        "worker@planner@main",
        fork.session_id,
        fork_of_planner.session_id,
    }
    with pytest.raises(ValueError, match="limit"):
        await session_tree(conn, limit=0)


async def test_owner_rename_and_delete(db_path: Path) -> None:
    async with open_database(db_path, create=True) as db:
        assert isinstance(db, Database)
        store = SQLiteContextStore(db.connection, "main", project="p")
        await save_state(store, ResumableState(subagent_history={"explorer": history(1)}))
        await db.rename("main", "renamed")
        renamed = SQLiteContextStore(db.connection, "renamed", project="p")
        loaded = await load_state(renamed)
        assert loaded is not None and loaded.subagent_history == {"explorer": history(1)}
        assert await db.latest() == "renamed"  # never the subagent's session, though it is as new
        await db.delete(["renamed"])
        assert await load_state(renamed) is None  # the state went with its session
        # nothing else is lost: the subagent's history stays, now a root of the tree
        assert [n.info.session_id for n in await session_tree(db.connection)] == ["explorer@main"]


async def test_a_taken_readable_id_falls_back_to_a_fresh_one(conn: Connection) -> None:
    squatter = SQLiteContextStore(conn, "explorer@main", project="p")
    await squatter.append(Message(role="user", content=[TextBlock(text="unrelated")]))
    store = SQLiteContextStore(conn, "main", project="p")
    await save_state(store, ResumableState(subagent_history={"explorer": history(1)}))
    stored = await load_stored(store)
    assert stored is not None and stored.subagents["explorer"] != "explorer@main"
    assert len(await squatter.get_history()) == 1
    assert (await load_state(store)).subagent_history == {"explorer": history(1)}  # type: ignore[union-attr]


async def test_search_reaches_subagent_sessions(db_path: Path) -> None:
    async with open_database(db_path, create=True) as db:
        assert isinstance(db, Database)
        store = SQLiteContextStore(db.connection, "main", project="p")
        hist = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "where is the zebra"}]}]
        await save_state(store, ResumableState(subagent_history={"explorer": hist}))
        hits = await db.search("zebra", mode="keyword")
        assert [(h.session_id, h.position) for h in hits.hits] == [("explorer@main", 0)]
        view = await db.show("explorer@main")
        assert "zebra" in view.messages[0].content[0].text  # type: ignore[union-attr]
