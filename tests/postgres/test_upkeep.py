"""stats and prune on PostgreSQL (the commands SQLite has, on a postgresql:// URL), and the
commands that stay SQLite's (vacuum, backup, checkpoint, check) refused in one line."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from axio_context.testing import text
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.agents import PostgresHistoryProvider
from axio_context_postgres.database import open_database
from axio_context_sqlite.cli import cli


def run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


async def _fill(url: str) -> None:
    pool = await connect(url)
    try:
        for i in range(4):
            s = PostgresContextStore(pool, f"s{i}", project="/a" if i < 3 else "/b")
            await s.append_many([text("user", f"question {i}"), text("assistant", "answer " * 50)])
            await s.set_context_tokens(10 * i, 2**62)  # sums past 2**63 stay exact
        old = PostgresContextStore(pool, "s0", project="/a")
        await old.fork()  # a fork of the oldest: its rows stay while the fork lives
        # s0 and s1 were last updated a day ago
        await pool.execute("UPDATE sessions SET updated_at = updated_at - 86400000 WHERE id IN ('s0', 's1')")
        provider = PostgresHistoryProvider(pool, project="/a")
        await provider.append("bot", text("user", "kept"), session_id="t")
        await provider.append("bot", text("user", "cleared " * 100), session_id="t", run_id="r")
        await provider.clear_run("bot", session_id="t", run_id="r")
    finally:
        await pool.close()


def test_stats_on_postgres(fresh_pg_url: str) -> None:
    asyncio.run(_fill(fresh_pg_url))
    s = json.loads(run("--db", fresh_pg_url, "stats", "--json"))
    assert s["backend"] == "postgresql" and s["database"] == fresh_pg_url
    assert (s["sessions"], s["messages"], s["stored_messages"]) == (6, 11, 10)  # the cleared one not
    # the fork copies s0's totals (axio's fork does) and stats counts them once
    assert s["output_tokens"] == 4 * 2**62 and s["input_tokens"] == 60
    assert s["hidden_messages"] == 1
    sizes = {t["table"]: t["bytes"] for t in s["tables"]}
    assert sizes["messages"] > 8192 and "sessions" in sizes and "hidden_messages" in sizes
    assert s["database_bytes"] >= sum(sizes.values())
    assert {p["project"]: p["sessions"] for p in s["by_project"]} == {"/a": 5, "/b": 1}
    people = run("--db", fresh_pg_url, "stats")
    assert "PostgreSQL" in people and "messages" in people and "TABLE" in people


def test_prune_on_postgres_deletes_old_sessions_frees_segments_and_purges(fresh_pg_url: str) -> None:
    asyncio.run(_fill(fresh_pg_url))
    dry = json.loads(run("--db", fresh_pg_url, "prune", "--before", "1h", "--dry-run", "--json"))
    assert sorted(r["session_id"] for r in dry) == ["s0", "s1"]
    done = json.loads(run("--db", fresh_pg_url, "prune", "--before", "1h", "--yes", "--json"))
    assert sorted(r["session_id"] for r in done) == ["s0", "s1"]

    async def check() -> None:
        async with open_database(fresh_pg_url) as db:
            left = {i.session_id for i in (await db.list_sessions()).sessions}
            assert "s0" not in left and "s1" not in left and len(left) == 4
            [fork] = [i for i in left if i not in ("s2", "s3", "t:bot")]
            # the fork of s0 still reads s0's rows; s1's segment and rows are gone
            assert [m.text for m in await PostgresContextStore(db.pool, fork).get_history()] == [
                "question 0",
                "answer " * 50,
            ]
            owners = {r[0] for r in await db.pool.fetch("SELECT owner FROM segments")}
            assert "s1" not in owners
            # the cleared run's row was emptied by the prune's purge
            body = await db.pool.fetchval("SELECT max(length(body)) FROM messages WHERE body LIKE 'cleared%'")
            assert body is None
            kept = await db.prune(keep=1, project="/b")
            assert kept == []
            with pytest.raises(ValueError, match="prune needs a date"):
                await db.prune()
            cutoff = datetime.now(UTC) + timedelta(days=1)
            listed = await db.prune(before=cutoff, project="/b", dry_run=True)
            assert [i.session_id for i in listed] == ["s3"]

    asyncio.run(check())


@pytest.mark.parametrize("command", [["vacuum"], ["backup", "x.db"], ["check"]])
def test_file_commands_still_say_they_are_sqlites(fresh_pg_url: str, command: list[str]) -> None:
    out = run("--db", fresh_pg_url, *command, code=1)
    assert "SQLite" in out and "Traceback" not in out and len(out.strip().splitlines()) == 1
