"""AxioAdvancedSession beyond openai-agents' own tests (those run in test_upstream_advanced.py):
branches are forks sharing the earlier items, bad input is one line with nothing changed, usage
per turn comes from the usage records. Each test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from axio_context.backends import backend_of, connect
from axio_context_openai_agents import AxioAdvancedSession
from tests.bridges.advanced_support import Result, turn
from tests.support.backends import Backend


async def _three_turns(where: str) -> AxioAdvancedSession:
    session = AxioAdvancedSession("adv", where)
    for i in (1, 2, 3):
        await session.add_items(turn(i))
        await session.store_run_usage(Result(10 * i))  # type: ignore[arg-type]
    return session


async def test_a_branch_is_a_fork_sharing_the_earlier_items(backend_db: Backend) -> None:
    session = await _three_turns(backend_db.where)
    try:
        name = await session.create_branch_from_turn(2, "retry")
        assert await session.get_items() == turn(1)
        await session.add_items(turn(9))
        assert await session.get_items() == turn(1) + turn(9)
        assert await session.get_items(branch_id="main") == turn(1) + turn(2) + turn(3)
        assert [t["content"] for t in await session.get_conversation_turns()] == ["question 1", "question 9"]
        branches = {
            b["branch_id"]: (b["message_count"], b["user_turns"], b["is_current"])
            for b in await session.list_branches()
        }
        assert branches == {"main": (6, 3, False), name: (4, 2, True)}
        assert await session.get_turn_usage(branch_id="main") == [
            {
                "user_turn_number": n,
                "requests": 1,
                "input_tokens": 10 * n,
                "output_tokens": 2,
                "total_tokens": 10 * n + 2,
                "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            }
            for n in (1, 2, 3)
        ]
        assert await session.get_turn_usage() == []  # the branch's own turns have none yet
        usage = await session.get_session_usage()
        assert usage == {
            "requests": 3,
            "input_tokens": 60,
            "output_tokens": 6,
            "total_tokens": 66,
            "total_turns": 3,
        }
    finally:
        session.close()
    conn = await connect(backend_db.where)  # the branch is a session of the database, with a parent
    try:
        forks = await backend_of(conn).context_store(conn, "adv").list_forks()  # type: ignore[attr-defined]
        assert [f.message_count for f in forks] == [4]
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda s: s.create_branch_from_turn(4, "x"),
            "^Turn 4 does not contain a user message in branch 'main'$",
        ),
        (lambda s: s.create_branch_from_turn(0), "^Turn 0 does not contain a user message"),
        (lambda s: s.create_branch_from_turn(1, "taken"), "^Branch ID 'taken' has already been used"),
        (lambda s: s.create_branch_from_turn(1, "gone"), "^Branch ID 'gone' has already been used"),
        (lambda s: s.create_branch_from_turn(1, "main"), "^Branch ID 'main' has already been used"),
        (lambda s: s.create_branch_from_content("nowhere"), "^No user turns found containing 'nowhere'$"),
        (lambda s: s.switch_to_branch("nope"), "^Branch 'nope' does not exist$"),
        (lambda s: s.delete_branch("main"), "^Cannot delete the 'main' branch$"),
    ],
)
async def test_bad_input_is_one_line_and_changes_nothing(
    backend_db: Backend, make: Any, message: str
) -> None:
    session = await _three_turns(backend_db.where)
    try:
        await session.create_branch_from_turn(2, "gone")
        await session.delete_branch("gone", force=True)
        await session.create_branch_from_turn(3, "taken")
        await session.switch_to_branch("main")
        before = (await session.list_branches(), await session.get_items(), await session.get_turn_usage())
        with pytest.raises(ValueError, match=message) as raised:
            await make(session)
        assert "\n" not in str(raised.value)
        assert session._current_branch_id == "main"
        assert (
            await session.list_branches(),
            await session.get_items(),
            await session.get_turn_usage(),
        ) == before
    finally:
        session.close()


async def test_popping_a_turn_drops_its_usage_and_a_new_turn_starts_clean(backend_db: Backend) -> None:
    session = await _three_turns(backend_db.where)
    try:
        await session.pop_item()
        await session.pop_item()  # turn 3's user message: the turn is gone
        assert [r["user_turn_number"] for r in await session.get_turn_usage()] == [1, 2]  # type: ignore[index]
        await session.add_items(turn(4))
        assert await session.get_turn_usage(3) == {}
        await session.clear_session()
        assert await session.get_items() == [] and await session.get_session_usage() is None
        assert await session.list_branches() == []
    finally:
        session.close()
