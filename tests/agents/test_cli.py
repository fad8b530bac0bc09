"""--agent and --run on list-sessions, show, search and export; agent and run shown where set."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.cli.agent_filters import tag_filters
from axio_context_sqlite.cli.app import cli


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "agents.db"

    async def fill() -> None:
        async with connect(path) as conn:
            provider = SQLiteHistoryProvider(conn, project="/p")
            await provider.append("bot", text("user", "hello walrus"), session_id="t1")
            await provider.append("bot", text("assistant", "walrus run one"), session_id="t1", run_id="r1")
            await provider.append("bot", text("assistant", "walrus run two"), session_id="t1", run_id="r2")
            await provider.append("bot", text("user", "walrus gone"), session_id="t1", run_id="r3")
            await provider.clear_run("bot", session_id="t1", run_id="r3")
            await provider.append("helper", text("user", "walrus helper"), session_id="t1", run_id="r1")
            await SQLiteContextStore(conn, "plain", "/p").append(text("user", "walrus plain"))

    asyncio.run(fill())
    return path


def _run(db: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_list_sessions_filters_and_shows_the_agent(db: Path) -> None:
    every = {r["session_id"]: r for r in json.loads(_run(db, "list-sessions", "--json"))}
    assert set(every) == {"t1:bot", "t1:helper", "plain"}
    assert every["t1:bot"]["agent_id"] == "bot" and every["t1:bot"]["thread_id"] == "t1"
    assert "agent_id" not in every["plain"]
    bot = json.loads(_run(db, "list-sessions", "--agent", "bot", "--json"))
    assert [r["session_id"] for r in bot] == ["t1:bot"]
    run = json.loads(_run(db, "list-sessions", "--run", "r1", "--json"))
    assert sorted(r["session_id"] for r in run) == ["t1:bot", "t1:helper"]
    table = _run(db, "list-sessions")
    assert "AGENT" in table and "helper" in table
    assert "no session matches" in _run(db, "list-sessions", "--agent", "nobody")


def test_show_an_agents_conversation_with_its_runs(db: Path) -> None:
    doc = json.loads(_run(db, "show", "t1", "--agent", "bot", "--json"))
    assert doc["agent_id"] == "bot" and doc["thread_id"] == "t1"
    rows = [(m["position"], m.get("run_id"), m["content"][0]["text"]) for m in doc["messages"]]
    assert rows == [(0, None, "hello walrus"), (1, "r1", "walrus run one"), (2, "r2", "walrus run two")]
    only = json.loads(_run(db, "show", "t1:bot", "--run", "r2", "--json"))
    assert [(m["position"], m["run_id"]) for m in only["messages"]] == [(2, "r2")]
    people = _run(db, "show", "t1", "--agent", "bot", "--no-pager")
    assert "agent 'bot'" in people and "run r1" in people and "walrus gone" not in people


def test_show_refuses_what_it_cannot_find(db: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db), "show", "t1", "--agent", "nobody"])
    assert result.exit_code != 0 and "agent 'nobody' has no session in thread 't1'" in result.output
    assert "Traceback" not in result.output
    result = CliRunner().invoke(cli, ["--db", str(db), "show", "--agent", "bot"])
    assert result.exit_code == 2 and "--agent needs the SESSION" in result.output


def test_search_by_agent_and_run(db: Path) -> None:
    def texts(*args: str) -> set[str]:
        out = json.loads(_run(db, "search", "walrus", "--mode", "keyword", "--json", *args))
        return {h["snippet"] for h in out["hits"]}

    assert "walrus gone" not in texts()
    assert texts("--agent", "bot") == {"hello walrus", "walrus run one", "walrus run two"}
    assert texts("--run", "r1") == {"walrus run one", "walrus helper"}


def test_export_by_agent_leaves_cleared_runs_out(db: Path, tmp_path: Path) -> None:
    out = tmp_path / "bot.json"
    result = CliRunner().invoke(cli, ["--db", str(db), "export", "--agent", "bot", "-o", str(out)])
    assert result.exit_code == 0 and "exported 1 session(s), 3 message(s)" in result.output
    doc = json.loads(out.read_text())
    sessions = doc["sessions"] if isinstance(doc, dict) else doc
    assert [s["id"] for s in sessions] == ["t1:bot"]
    exported = [m["content"][0]["text"] for m in sessions[0]["messages"]]
    assert exported == ["hello walrus", "walrus run one", "walrus run two"]
    result = CliRunner().invoke(cli, ["--db", str(db), "export", "plain", "--agent", "bot"])
    assert result.exit_code == 2 and "not both" in result.output


def test_a_backend_without_agent_tags_refuses_the_filters() -> None:
    assert tag_filters(object(), None, None) == {}
    with pytest.raises(click.UsageError) as refused:
        tag_filters(object(), "bot", None)
    # one line, and true: both built-in backends keep agent tags, so it names no backend
    assert refused.value.message == "--agent and --run need a database that keeps agent tags"


def test_the_installed_command(db: Path) -> None:
    exe = Path(sys.executable).parent / "axio-context"
    done = subprocess.run(
        [str(exe), "--db", str(db), "list-sessions", "--agent", "helper", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
        check=True,
    )
    assert [r["session_id"] for r in json.loads(done.stdout)] == ["t1:helper"]
