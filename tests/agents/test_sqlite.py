"""The SQLite history provider beyond the contract: the same sessions as every other reader,
pages that read only their rows, clear_run's marks across forks, reopen and search."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from axio_context.agents import AgentContext, ContextConfig, HistoryRetention, RunSessionError
from axio_context.errors import CorruptDataError
from axio_context.messages import Message
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.agents import SQLiteHistoryProvider, sqlite_config
from axio_context_sqlite.store.keys import key


def _turns(prefix: str, n: int) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"{prefix}{i}") for i in range(n)]


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m.content[0], "text", "?") for m in messages]


async def test_a_page_reads_only_its_rows(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        for i in range(0, 300, 50):
            await provider.append_many("a", _turns(f"b{i}-", 50), session_id="t")
        sid = (await conn.execute_fetchall("SELECT sid FROM agent_sessions"))[0][0]
        # Damage positions 0..63 (rows and their sealed chunk): only a read of them can notice.
        await conn.execute("DELETE FROM chunks WHERE id >= ? AND id < ?", (key(sid, 0), key(sid, 64)))
        await conn.execute(
            "UPDATE messages SET flags = 0, payload = x'c1' WHERE id >= ? AND id < ?",
            (key(sid, 0), key(sid, 64)),
        )
        await conn.commit()
        page = await provider.get_messages("a", session_id="t", limit=50, offset=200)
        assert _texts(page) == [f"b200-{i}" for i in range(50)]
        with pytest.raises(CorruptDataError):
            await provider.get_messages("a", session_id="t")


async def test_agent_history_is_an_ordinary_session(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("bot", text("user", "q"), session_id="t")
        await provider.append_many("bot", _turns("r", 2), session_id="t", run_id="r1")
        await provider.append("", text("user", "plain"), session_id="t")
        store = await provider.store("bot", "t")
        assert store.session_id == "t:bot"
        assert await provider.session_key("", "t") == "t"
        assert _texts(await store.get_history()) == ["q", "r0", "r1"]
        await provider.clear_run("bot", session_id="t", run_id="r1")
        assert _texts(await store.get_history()) == ["q"]
        assert _texts(await store.get_full_history()) == ["q"]
        # A plain store of the same session id is the same conversation.
        await SQLiteContextStore(conn, "t:bot", "p").append(text("assistant", "via store"))
        assert _texts(await provider.get_messages("bot", session_id="t")) == ["q", "via store"]


async def test_ids_that_do_not_fit_get_a_hashed_session(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("b", text("user", "1"), session_id="a:x")  # session "a:x:b"
        await provider.append("x:b", text("user", "2"), session_id="a")  # would also be "a:x:b"
        long = "t" * 256
        await provider.append("bot", text("user", "3"), session_id=long)
        keys = [await provider.session_key(*k) for k in (("b", "a:x"), ("x:b", "a"), ("bot", long))]
        assert keys[0] == "a:x:b" and keys[1].startswith("agent-") and keys[2].startswith("agent-")
        assert _texts(await provider.get_messages("x:b", session_id="a")) == ["2"]
        assert _texts(await provider.get_messages("bot", session_id=long)) == ["3"]


async def test_clear_run_and_forks(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("a", text("user", "keep"), session_id="t")
        await provider.append_many("a", _turns("run", 3), session_id="t", run_id="r")
        store = await provider.store("a", "t")
        before = await store.fork()
        await provider.clear_run("a", session_id="t", run_id="r")
        after = await store.fork()
        assert _texts(await before.get_history()) == ["keep", "run0", "run1", "run2"]
        assert _texts(await after.get_history()) == ["keep"]
        await after.append(text("user", "new"))
        assert _texts(await after.get_history()) == ["keep", "new"]
        # The parent's positions did not move: the next append is position 4 (the count leaves out
        # the three hidden ones).
        await provider.append("a", text("user", "next"), session_id="t")
        assert (await store.info()).message_count == 2
        assert _texts(await provider.get_messages("a", session_id="t")) == ["keep", "next"]


async def test_clear_and_pop_free_hidden_positions(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append_many("a", _turns("r", 2), session_id="t", run_id="r")
        await provider.clear_run("a", session_id="t", run_id="r")
        store = await provider.store("a", "t")
        await store.pop()
        await provider.append("a", text("user", "reused position 1"), session_id="t")
        assert _texts(await provider.get_messages("a", session_id="t")) == ["reused position 1"]
        await provider.clear("a", session_id="t")
        await provider.append("a", text("user", "fresh"), session_id="t")
        assert _texts(await provider.get_messages("a", session_id="t")) == ["fresh"]


async def test_runs_and_marks_survive_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append_many("a", _turns("r", 2), session_id="t", run_id="r1")
        await provider.append_many("a", _turns("s", 2), session_id="t", run_id="r2")
        await provider.clear_run("a", session_id="t", run_id="r1")
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        assert _texts(await provider.get_messages("a", session_id="t")) == ["s0", "s1"]
        assert await provider.get_run_ids("a", session_id="t") == ["r2", "r2"]
        with pytest.raises(RunSessionError, match="run_id 'r2' belongs to session 't'"):
            await provider.append("a", text("user", "x"), session_id="u", run_id="r2")
        assert await provider.count_messages("a", session_id="u") == 0


async def test_search_leaves_cleared_runs_out_and_filters_by_agent_and_run(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("a", text("user", "zebra outside"), session_id="t")
        await provider.append("a", text("user", "zebra in one"), session_id="t", run_id="one")
        await provider.append("a", text("user", "zebra in two"), session_id="t", run_id="two")
        await provider.append("b", text("user", "zebra of b"), session_id="t", run_id="one")
        await SQLiteContextStore(conn, "plain", "p").append(text("user", "zebra plain"))
    async with open_database(db) as database:

        async def found(**filters: str) -> set[str]:
            hits = await database.search("zebra", mode="keyword", k=20, **filters)  # type: ignore[arg-type]
            return {h.snippet for h in hits}

        assert len(await found()) == 5
        assert await found(agent_id="a") == {"zebra outside", "zebra in one", "zebra in two"}
        assert await found(run_id="one") == {"zebra in one", "zebra of b"}
        assert await found(agent_id="a", run_id="one") == {"zebra in one"}
        provider = SQLiteHistoryProvider(database.connection, project="p")
        await provider.clear_run("a", session_id="t", run_id="one")
        assert await found() == {"zebra outside", "zebra in two", "zebra of b", "zebra plain"}


async def test_sqlite_config_opens_the_default_database(tmp_path: Path) -> None:
    async with sqlite_config(retention=HistoryRetention.RUN) as config:  # AXIO_CONTEXT_DB: tmp_path
        ctx = AgentContext(config, "bot")
        await ctx.append("t", text("user", "kept"))
        async with ctx.run("t") as run:
            await run.append(text("assistant", "for this run only"))
            assert len(await run.get_prompt_window()) == 2
    config = await sqlite_config()
    try:
        assert _texts(await AgentContext(config, "bot").get_messages("t")) == ["kept"]
    finally:
        await config.close()


async def test_a_cancelled_run_clears_on_sqlite_from_another_task(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        config = ContextConfig(SQLiteHistoryProvider(conn, project="p"), retention=HistoryRetention.RUN)
        ctx = AgentContext(config, "bot")

        five = asyncio.Event()

        async def loop() -> None:
            async with ctx.run("t") as run:
                for i in range(1_000_000):
                    await run.append(text("user", "tick"))
                    if i == 4:
                        five.set()
                    await asyncio.sleep(0)

        task = asyncio.create_task(loop())
        await five.wait()
        assert await ctx.config.history.count_messages("bot", session_id="t") >= 5
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await ctx.get_messages("t") == []


async def test_vacuum_gives_back_the_space_of_cleared_runs(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("a", text("user", "keep"), session_id="t")
        for _ in range(80):  # past a sealed chunk's 64; random text does not compress
            await provider.append(
                "a", text("user", f"walrus {os.urandom(8_000).hex()}"), session_id="t", run_id="r"
            )
        await provider.append("a", text("user", "after"), session_id="t")
        await provider.append_many("a", _turns("f", 2), session_id="u", run_id="q")
        forked = await (await provider.store("a", "u")).fork()  # reads u's rows: they stay
        await provider.clear_run("a", session_id="t", run_id="r")
        await provider.clear_run("a", session_id="u", run_id="q")
    async with connect(tmp_path / "empty.db"):
        pass
    empty = (tmp_path / "empty.db").stat().st_size  # the schema alone: grows with every layer's tables
    async with open_database(db) as database:
        await database.vacuum(full=True)
        cleared = 80 * 8_000  # bytes of the cleared run, compressed
        assert db.stat().st_size < empty + cleared // 2
        assert list(await database.search("walrus", mode="keyword", k=5)) == []
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        assert _texts(await provider.get_messages("a", session_id="t")) == ["keep", "after"]
        assert (await (await provider.store("a", "t")).info()).message_count == 2  # 80 hidden
        stored = await conn.execute_fetchall(
            "SELECT (SELECT sum(length(payload)) FROM messages)"
            " + (SELECT coalesce(sum(length(payload)), 0) FROM chunks)"
        )
        assert stored[0][0] < 10_000
        assert _texts(await SQLiteContextStore(conn, forked.session_id, "p").get_history()) == ["f0", "f1"]


async def test_a_session_deleted_or_renamed_under_a_live_provider(tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="p")
        await provider.append("a", text("user", "one"), session_id="t")
        async with open_database(db) as database:  # another connection, as the CLI would be
            await database.rename("t:a", "renamed")
        await provider.append("a", text("user", "two"), session_id="t")
        assert _texts(await SQLiteContextStore(conn, "renamed", "p").get_history()) == ["one", "two"]
        async with open_database(db) as database:
            await database.delete(["renamed"])
        await provider.append("a", text("user", "three"), session_id="t", run_id="r")
        await provider.append("a", text("user", "four"), session_id="t")
        assert _texts(await provider.get_messages("a", session_id="t")) == ["three", "four"]
        assert await provider.get_run_ids("a", session_id="t") == ["r", ""]


async def test_an_agent_message_keeps_its_id_timestamp_and_metadata(tmp_path: Path) -> None:
    """A message with extras takes the transaction path, which stores them (the one-statement
    trigger path has no column for them)."""
    from datetime import UTC, datetime

    from axio_context.blocks import TextBlock
    from axio_context.messages import Message
    from axio_context_sqlite import connect
    from axio_context_sqlite.agents import SQLiteHistoryProvider

    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    m = Message(
        role="user", content=[TextBlock(text="hi")], id="m-1", timestamp=when, metadata={"k": [1, 2.5]}
    )
    async with connect(tmp_path / "x.db") as conn:
        provider = SQLiteHistoryProvider(conn)
        await provider.append("bot", m, session_id="t", run_id="r1")
        await provider.append(
            "bot", Message(role="assistant", content=[TextBlock(text="plain")]), session_id="t"
        )
        got = await provider.get_messages("bot", session_id="t")
    assert got[0] == m and got[0].metadata == {"k": [1, 2.5]}
    assert got[1].id is None and got[1].text == "plain"
