"""Cleared runs and agent tags on PostgreSQL, as on SQLite: one scenario on both backends and
every reader compared (store reads, show, listing, search, export), the purge, and --agent /
--run on a postgresql:// URL."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.checkpoints import Checkpoint
from axio_context.context import ContextStore
from axio_context.messages import Message
from axio_context.testing import text
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.agents import PostgresHistoryProvider
from axio_context_postgres.database import open_database as open_postgres
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.cli import cli
from axio_context_sqlite.database import open_database as open_sqlite

Backend = tuple[Any, Callable[[str], ContextStore], Any]


@asynccontextmanager
async def sqlite_backend(path: Path) -> AsyncIterator[Backend]:
    async with sqlite_connect(path) as conn, open_sqlite(path) as db:
        yield SQLiteHistoryProvider(conn, project="/p"), lambda i: SQLiteContextStore(conn, i, "/p"), db


@asynccontextmanager
async def postgres_backend(url: str) -> AsyncIterator[Backend]:
    pool = await connect(url)
    try:
        async with open_postgres(url) as db:
            provider = PostgresHistoryProvider(pool, project="/p")
            yield provider, lambda i: PostgresContextStore(pool, i, "/p"), db
    finally:
        await pool.close()


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m.content[0], "text", "?") if m.content else "" for m in messages]


async def fill(backend: Backend) -> None:
    """An agent conversation with a run cleared between two forks, a checkpoint over it, a second
    agent in the same thread, and a plain session."""
    provider, store, db = backend
    await provider.append("bot", text("user", "hello walrus"), session_id="t1")
    await provider.append("bot", text("assistant", "walrus run one"), session_id="t1", run_id="r1")
    gone = [text("user", "walrus gone"), text("assistant", "walrus gone too")]
    await provider.append_many("bot", gone, session_id="t1", run_id="r3")
    await provider.append("bot", text("assistant", "walrus run two"), session_id="t1", run_id="r2")
    await db.fork("t1:bot", "before")  # sees the run for good
    await provider.clear_run("bot", session_id="t1", run_id="r3")
    await db.fork("t1:bot", "after")  # inherits the marks
    await store("after").append(text("user", "walrus after fork"))
    await store("t1:bot").add_checkpoint(Checkpoint(position=3, summary=[text("user", "summary")]))
    await provider.append("helper", text("user", "walrus helper"), session_id="t1", run_id="r1")
    await store("plain").append(text("user", "walrus plain"))


async def readers(backend: Backend) -> dict[str, Any]:
    """What every reader returns, times left out (they differ between two runs)."""
    provider, store, db = backend
    out: dict[str, Any] = {}
    for sid in ("t1:bot", "before", "after", "t1:helper", "plain"):
        s = store(sid)
        out[sid] = {
            "view": _texts(await s.get_history()),
            "full": _texts(await s.get_full_history()),
            "tail": _texts(await s.get_history(limit=2)),
        }
        view = await db.show(sid, full=True)
        out[sid]["show"] = (view.positions, view.runs, view.agent_id, view.thread_id)
    out["provider"] = _texts(await provider.get_messages("bot", session_id="t1"))
    out["count"] = await provider.count_messages("bot", session_id="t1")
    out["listing"] = sorted((i.session_id, i.message_count) for i in (await db.list_sessions()).sessions)
    for tags in ({}, {"agent_id": "bot"}, {"run_id": "r1"}, {"run_id": "r3"}):
        page = await db.list_sessions(**tags)
        out[f"listing {tags}"] = sorted(i.session_id for i in page.sessions)
        hits = await db.search("walrus", mode="keyword", k=50, **tags)
        out[f"search {tags}"] = sorted((h.session_id, h.position, h.snippet) for h in hits)
    only = await db.show("t1:bot", full=True, run_id="r2")
    out["show r2"] = (only.positions, [m.content for m in only.messages])
    chunks: list[bytes] = []
    summary = await db.export(chunks.append, format="json")
    doc = json.loads(b"".join(chunks))
    for s in doc["sessions"]:
        del s["created_at"], s["updated_at"]
        for m in s["messages"]:
            del m["created_at"]
        for cp in s["checkpoints"]:
            del cp["created_at"]
    out["export"] = doc
    out["exported"] = (summary.sessions, summary.messages)
    return out


def test_postgres_readers_leave_cleared_runs_out_as_sqlite_does(fresh_pg_url: str, tmp_path: Path) -> None:
    async def both() -> tuple[dict[str, Any], dict[str, Any]]:
        async with sqlite_backend(tmp_path / "a.db") as lite:
            await fill(lite)
            a = await readers(lite)
        async with postgres_backend(fresh_pg_url) as pg:
            await fill(pg)
            b = await readers(pg)
        return a, b

    lite, pg = asyncio.run(both())
    assert lite["t1:bot"]["full"] == ["hello walrus", "walrus run one", "walrus run two"]
    assert lite["t1:bot"]["view"] == ["summary", "walrus run two"]
    assert lite["before"]["full"][2:4] == ["walrus gone", "walrus gone too"]
    assert lite["after"]["full"] == ["hello walrus", "walrus run one", "walrus run two", "walrus after fork"]
    assert "walrus gone" not in str(lite["search {}"])
    assert lite["t1:bot"]["show"] == ([0, 1, 4], ["", "r1", "r2"], "bot", "t1")
    exported = {s["id"]: s for s in lite["export"]["sessions"]}
    assert exported["t1:bot"]["message_count"] == 3  # numbered as if the run never was
    assert exported["t1:bot"]["checkpoints"][0]["position"] == 2
    assert exported["t1:bot"]["agent_id"] == "bot" and exported["t1:bot"]["thread_id"] == "t1"
    for key in lite:
        assert pg[key] == lite[key], key


async def _purge_scenario(url: str) -> None:
    pool = await connect(url)
    try:
        provider = PostgresHistoryProvider(pool, project="/p")
        await provider.append("a", text("user", "keep"), session_id="t")
        await provider.append_many(
            "a", [text("user", f"walrus {i} " + "x" * 2000) for i in range(5)], session_id="t", run_id="r"
        )
        await provider.append("a", text("user", "after"), session_id="t")
        fork_me = [text("user", "walrus f0"), text("user", "f1")]
        await provider.append_many("a", fork_me, session_id="u", run_id="q")
        forked = await (await provider.store("a", "u")).fork()  # reads u's rows: they stay
        await provider.clear_run("a", session_id="t", run_id="r")
        await provider.clear_run("a", session_id="u", run_id="q")
        async with open_postgres(url) as db:
            assert await db.purge_hidden() == 5
            assert await db.purge_hidden() == 0  # done once
            assert list(await db.search("walrus", mode="keyword", k=10)) == []
            body = await pool.fetchval("SELECT sum(length(body) + length(payload)) FROM messages m")
            assert body < 2000
        assert _texts(await provider.get_messages("a", session_id="t")) == ["keep", "after"]
        assert await provider.count_messages("a", session_id="t") == 2
        assert (await (await provider.store("a", "t")).info()).message_count == 2  # 5 hidden, as on SQLite
        assert _texts(await forked.get_history()) == ["walrus f0", "f1"]
        await provider.append("a", text("user", "more"), session_id="t", run_id="r")
        assert await provider.get_run_ids("a", session_id="t") == ["", "", "r"]
    finally:
        await pool.close()


def test_purge_empties_the_rows_only_a_cleared_run_held(fresh_pg_url: str) -> None:
    asyncio.run(_purge_scenario(fresh_pg_url))


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture(scope="module")
def agents_url(pg_url: str) -> str:
    async def go() -> None:
        async with postgres_backend(pg_url) as pg:
            await fill(pg)

    asyncio.run(go())
    return pg_url


def test_list_sessions_by_agent_and_run(agents_url: str) -> None:
    every = {r["session_id"]: r for r in json.loads(run("--db", agents_url, "list-sessions", "--json"))}
    assert every["t1:bot"]["agent_id"] == "bot" and every["t1:bot"]["thread_id"] == "t1"
    assert "agent_id" not in every["plain"]
    bot = json.loads(run("--db", agents_url, "list-sessions", "--agent", "bot", "--json"))
    assert [r["session_id"] for r in bot] == ["t1:bot"]
    r1 = json.loads(run("--db", agents_url, "list-sessions", "--run", "r1", "--json"))
    assert sorted(r["session_id"] for r in r1) == ["t1:bot", "t1:helper"]
    assert "no session matches" in run("--db", agents_url, "list-sessions", "--agent", "nobody")


def test_show_an_agents_conversation_with_its_runs(agents_url: str) -> None:
    doc = json.loads(run("--db", agents_url, "show", "t1", "--agent", "bot", "--full", "--json"))
    assert doc["agent_id"] == "bot" and doc["thread_id"] == "t1"
    rows = [(m["position"], m.get("run_id"), m["content"][0]["text"]) for m in doc["messages"]]
    assert rows == [(0, None, "hello walrus"), (1, "r1", "walrus run one"), (4, "r2", "walrus run two")]
    only = json.loads(run("--db", agents_url, "show", "t1:bot", "--run", "r1", "--json", "--full"))
    assert [(m["position"], m["run_id"]) for m in only["messages"]] == [(1, "r1")]
    result = CliRunner().invoke(cli, ["--db", agents_url, "show", "t1", "--agent", "nobody"])
    assert result.exit_code == 1 and "agent 'nobody' has no session in thread 't1'" in result.output
    assert "Traceback" not in result.output


def test_search_and_export_by_agent_and_run(agents_url: str, tmp_path: Path) -> None:
    def texts(*args: str) -> set[str]:
        out = json.loads(run("--db", agents_url, "search", "walrus", "--mode", "keyword", "--json", *args))
        return {h["snippet"] for h in out["hits"]}

    assert not any("gone" in t for t in texts())
    assert texts("--agent", "bot") == {"hello walrus", "walrus run one", "walrus run two"}
    assert texts("--run", "r1") == {"walrus run one", "walrus helper"}
    out = tmp_path / "bot.json"
    result = CliRunner().invoke(cli, ["--db", agents_url, "export", "--agent", "bot", "-o", str(out)])
    assert result.exit_code == 0 and "exported 1 session(s), 3 message(s)" in result.output
    [session] = json.loads(out.read_text())["sessions"]
    assert [m["content"][0]["text"] for m in session["messages"]] == [
        "hello walrus",
        "walrus run one",
        "walrus run two",
    ]
