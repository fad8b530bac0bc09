"""The command line on PostgreSQL (--db postgresql://... and AXIO_CONTEXT_DB), and copy both ways."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from axio_context.checkpoints import Checkpoint
from axio_context.testing import every_block_message, text
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.cli import cli


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


async def _fill_sqlite(path: Path) -> None:
    async with sqlite_connect(path) as conn:
        a = SQLiteContextStore(conn, "alpha", project="p1")
        await a.append_many(
            [text("user", "hello parser world"), text("assistant", "hi"), *every_block_message()]
        )
        await a.set_context_tokens(12, 34)
        await a.set_title("the alpha")
        await a.set_metadata({"k": [1, 2.5, "x"], "nan": float("nan")})
        await a.add_checkpoint(Checkpoint(position=1, summary=[text("user", "summary")], summarizer="s"))
        child = await a.fork()
        await child.append(text("user", "child only"))
        await a.append(text("user", "parent after fork"))
        b = SQLiteContextStore(conn, "beta", project="p2")
        await b.append(text("user", "second session"))
        # An agent's conversation with a cleared run (forks on either side of the clear) and a
        # second agent in the same thread: the copy keeps the agent links, leaves the run out.
        agents = SQLiteHistoryProvider(conn, project="p1")
        await agents.append("bot", text("user", "hello bot"), session_id="t1")
        await agents.append_many(
            "bot", [text("assistant", "cleared a"), text("user", "cleared b")], session_id="t1", run_id="r1"
        )
        await agents.append("bot", text("assistant", "kept"), session_id="t1", run_id="r2")
        await (await agents.store("bot", "t1")).fork()
        await agents.clear_run("bot", session_id="t1", run_id="r1")
        after = await (await agents.store("bot", "t1")).fork()
        await after.append(text("user", "after the clear"))
        await agents.append("helper", text("user", "helping"), session_id="t1", run_id="r2")


async def _fill_postgres(url: str) -> None:
    pool = await connect(url)
    try:
        s = PostgresContextStore(pool, "s1", project="proj")
        await s.append_many(
            [text("user", "tell me about lighthouses"), text("assistant", "they guide ships")]
        )
    finally:
        await pool.close()


def test_cli_reads_and_writes_postgres(fresh_pg_url: str) -> None:
    asyncio.run(_fill_postgres(fresh_pg_url))
    listed = json.loads(run("--db", fresh_pg_url, "list-sessions", "--json"))
    assert [r["session_id"] for r in listed] == ["s1"]
    assert listed[0]["message_count"] == 2
    shown = run("--db", fresh_pg_url, "show", "s1")
    assert "lighthouses" in shown
    hits = json.loads(run("--db", fresh_pg_url, "search", "lighthouses", "--mode", "keyword", "--json"))
    assert [(h["session_id"], h["position"]) for h in hits["hits"]] == [("s1", 0)]
    forked = run("--db", fresh_pg_url, "fork", "s1")
    assert forked.strip()
    assert len(json.loads(run("--db", fresh_pg_url, "list-sessions", "--json"))) == 2


def test_cli_env_var_url(fresh_pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AXIO_CONTEXT_DB", fresh_pg_url)
    assert json.loads(run("list-sessions", "--json")) == []


def test_copy_sqlite_to_postgres_and_back_is_lossless(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(_fill_sqlite(src))
    out = json.loads(run("copy", str(src), fresh_pg_url, "--json"))
    assert out["copied"] == 7
    again = json.loads(run("copy", str(src), fresh_pg_url, "--json"))  # idempotent
    # the sessions' figures as before; the layers' (copy_layers tests) copy nothing either
    assert {k: again[k] for k in ("copied", "already", "messages")} == {
        "copied": 0,
        "already": 7,
        "messages": 0,
    }
    assert all(r["copied"] == 0 for r in again["layers"].values())
    back = tmp_path / "back.db"
    assert json.loads(run("copy", fresh_pg_url, str(back), "--json"))["copied"] == 7
    for fmt in ("json", "jsonl", "markdown"):
        a = run("--db", str(src), "export", "--all", "-f", fmt)
        b = run("--db", fresh_pg_url, "export", "--all", "-f", fmt)
        c = run("--db", str(back), "export", "--all", "-f", fmt)
        assert a == b == c, fmt
    assert '"inherited":' in run("--db", fresh_pg_url, "export", "--all", "-f", "jsonl")
    for db in (fresh_pg_url, str(back)):
        bot = json.loads(run("--db", db, "list-sessions", "--agent", "bot", "--json"))
        assert [(r["session_id"], r["agent_id"], r["thread_id"]) for r in bot] == [("t1:bot", "bot", "t1")]
        shown = json.loads(run("--db", db, "show", "t1", "--agent", "helper", "--json"))
        assert [m["content"][0]["text"] for m in shown["messages"]] == ["helping"]
        bot_view = json.loads(run("--db", db, "show", "t1:bot", "--json"))
        assert [m["content"][0]["text"] for m in bot_view["messages"]] == ["hello bot", "kept"]


def test_copy_resumes_after_partial(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(_fill_sqlite(src))
    part = tmp_path / "part.jsonl"
    run("--db", str(src), "export", "beta", "-f", "jsonl", "-o", str(part))
    run("--db", fresh_pg_url, "import", str(part))  # as if a copy stopped after one session
    out = json.loads(run("copy", str(src), fresh_pg_url, "--json"))
    assert (out["copied"], out["already"]) == (6, 1)
    listed = {r["session_id"] for r in json.loads(run("--db", fresh_pg_url, "list-sessions", "--json"))}
    assert len(listed) == 7


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("postgresql://u@host:notaport/db", "does not parse"),
        ("postgresql://postgres@/nosuchdb?host={sock}", "does not exist"),
        ("postgresql://postgres@/postgres?host=/nonexistent-dir-axio", "cannot reach the server"),
    ],
)
def test_bad_urls_are_one_line(pg_server: EmbeddedServer, url: str, needle: str) -> None:
    result = CliRunner().invoke(cli, ["--db", url.format(sock=pg_server.socket_dir), "list-sessions"])
    assert result.exit_code == 1
    assert needle in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_sqlite_only_commands_say_so(fresh_pg_url: str) -> None:
    out = run("--db", fresh_pg_url, "vacuum", code=1)
    assert "SQLite" in out and len(out.strip().splitlines()) == 1


def test_info_describes_the_postgres_database(fresh_pg_url: str) -> None:
    out = json.loads(run("--db", fresh_pg_url, "info", "--json"))
    assert out["backend"] == "postgresql"
    assert out["schema_version"] == out["supported_schema_version"]
    assert out["vector_extension"] is True
    assert out["source"] == "--db"
