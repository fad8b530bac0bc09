"""AutoCompactStore(into_fork=True): compaction continues the conversation in a child session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from axio_context import AutoCompactStore, MemoryContextStore, Message
from axio_context.compaction import SUMMARY_ACK
from axio_context.context import ContextStore
from axio_context.errors import CheckpointsUnsupportedError
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.cli.app import cli
from tests.compaction.test_auto import Minimal


def _turns(n: int) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(n)]


async def summarize(messages: list[Message], system_prompt: str, /) -> str:
    return f"summary of {len(messages)} messages"


async def _trip(auto: AutoCompactStore) -> None:
    await auto.add_context_tokens(auto.max_tokens + 1, 0)


async def _check_fork(auto: AutoCompactStore, parent: ContextStore, before: list[Message]) -> None:
    assert auto.session_id != parent.session_id
    assert auto.session_chain == [parent.session_id, auto.session_id]
    view = await auto.get_history()
    assert view[0] == text("user", "summary of 14 messages")
    assert view[1] == text("assistant", SUMMARY_ACK)
    assert view[2:] == before[-6:]
    # The parent keeps its whole transcript and its view, with no checkpoint.
    assert await parent.get_history() == before
    assert await auto.get_full_history() == before


async def test_memory_store_compacts_into_a_fork() -> None:
    parent = MemoryContextStore()
    await parent.append_many(_turns(20))
    forks: list[tuple[str, str]] = []
    auto = AutoCompactStore(
        parent, summarize, max_tokens=100, into_fork=True, on_fork=lambda a, b: forks.append((a, b))
    )
    await _trip(auto)
    await _check_fork(auto, parent, _turns(20))
    assert forks == [(parent.session_id, auto.session_id)]
    await auto.append(text("user", "next"))
    assert (await auto.get_history())[-1] == text("user", "next")
    assert len(await parent.get_history()) == 20


def test_sqlite_fork_is_listed_as_the_parents_child(tmp_path: Path) -> None:
    db = tmp_path / "c.db"

    async def make() -> str:
        async with connect(db) as conn:
            parent = SQLiteContextStore(conn, "chat", project="p")
            await parent.append_many(_turns(20))
            auto = AutoCompactStore(parent, summarize, max_tokens=100, into_fork=True)
            await _trip(auto)
            await _check_fork(auto, parent, _turns(20))
            assert await parent.list_checkpoints() == []
            return auto.session_id

    child = asyncio.run(make())
    result = CliRunner().invoke(cli, ["--db", str(db), "list-sessions", "--json"], catch_exceptions=False)
    rows = {r["session_id"]: r for r in json.loads(result.output)}
    assert rows[child]["parent_id"] == "chat" and rows[child]["fork_position"] == 20
    assert rows["chat"]["parent_id"] is None


async def test_appends_while_the_summary_is_written_are_kept(tmp_path: Path) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def slow(messages: list[Message], system_prompt: str, /) -> str:
        started.set()
        await release.wait()
        return "slow summary"

    async with connect(tmp_path / "c.db") as conn:
        parent = SQLiteContextStore(conn, "chat", project="p")
        await parent.append_many(_turns(20))
        auto = AutoCompactStore(parent, slow, max_tokens=100, into_fork=True)
        compaction = asyncio.create_task(auto.compact())
        await started.wait()
        await auto.append(text("user", "while summarizing"))
        release.set()
        assert await compaction
        await auto.append(text("user", "after"))
        view = await auto.get_history()
        assert view[0] == text("user", "slow summary")
        assert view[-2:] == [text("user", "while summarizing"), text("user", "after")]
        full = await auto.get_full_history()
        assert full == [*_turns(20), text("user", "while summarizing"), text("user", "after")]
        assert await parent.get_full_history() == [*_turns(20), text("user", "while summarizing")]


async def test_a_second_compaction_forks_again() -> None:
    parent = MemoryContextStore()
    auto = AutoCompactStore(parent, summarize, max_tokens=100, into_fork=True)
    await auto.append_many(_turns(20))
    await _trip(auto)
    await auto.append_many(_turns(20))
    await _trip(auto)
    assert len(auto.session_chain) == 3
    assert len(set(auto.session_chain)) == 3
    view = await auto.get_history()
    assert view[1] == text("assistant", SUMMARY_ACK)
    assert view[0].role == "user" and view[0].content[0].text.startswith("summary of")  # type: ignore[union-attr]
    assert await parent.get_history() == _turns(20)  # the first session keeps its own 20


def test_into_fork_needs_checkpoints() -> None:
    with pytest.raises(CheckpointsUnsupportedError, match="into_fork"):
        AutoCompactStore(Minimal(), summarize, into_fork=True)
