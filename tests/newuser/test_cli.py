"""What a new user hit on the command line (issue 31) and what ``clear_run`` left in counts (issue
30, item 15), on a SQLite file and on the real PostgreSQL server (``backend_db``): listings go by
last activity, hidden messages are not counted, a fork's inherited tokens are counted once."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from click.testing import CliRunner

from axio_context import Message, TextBlock
from axio_context.testing import text
from axio_context_sqlite import Connection
from axio_context_sqlite.cli import cli
from tests.support.backends import Backend


def run(backend: Backend, build: Callable[[Backend], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with backend.open():
            return await build(backend)

    return asyncio.run(go())


def invoke(backend: Backend, *args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(cli, ["--db", backend.where, *args], input=input, catch_exceptions=False)
    return result


def as_json(backend: Backend, *args: str) -> Any:
    result = invoke(backend, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def provider(backend: Backend) -> Any:
    if isinstance(backend.handle, Connection):
        from axio_context_sqlite.agents import SQLiteHistoryProvider

        return SQLiteHistoryProvider(backend.handle, project="p")
    from axio_context_postgres.agents import PostgresHistoryProvider

    return PostgresHistoryProvider(backend.handle, project="p")


# -- newest first is last activity ------------------------------------------------------------------


async def _old_then_new_then_old_again(backend: Backend) -> None:
    await backend.store("old", project="p").append(text("user", "an older session"))
    await asyncio.sleep(0.01)
    await backend.store("new", project="p").append(text("user", "a newer one"))
    await asyncio.sleep(0.01)
    await backend.store("old", project="p").append(text("user", "back to the old one"))


def test_list_sessions_show_and_tree_go_by_last_activity(backend_db: Backend) -> None:
    run(backend_db, _old_then_new_then_old_again)
    ids = [s["session_id"] for s in as_json(backend_db, "list-sessions", "--json")]
    assert ids == ["old", "new"]
    created = [s["session_id"] for s in as_json(backend_db, "list-sessions", "--json", "--sort", "created")]
    assert created == ["new", "old"]
    tree = [s["session_id"] for s in as_json(backend_db, "list-sessions", "--tree", "--json")]
    assert tree == ["old", "new"]
    assert as_json(backend_db, "show", "--json")["session"]["id"] == "old"
    assert [s["session_id"] for s in as_json(backend_db, "list-sessions", "-n", "1", "--json")] == ["old"]


def test_pages_by_activity_follow_each_other(backend_db: Backend) -> None:
    async def build(backend: Backend) -> list[list[str]]:
        for i in range(5):
            await backend.store(f"s{i}", project="p").append(text("user", f"session {i}"))
            await asyncio.sleep(0.002)
        await backend.store("s0", project="p").append(text("user", "s0 again"))
        from axio_context.backends import open_database

        async with open_database(backend.where) as db:
            pages, cursor = [], None
            while True:
                page = await db.list_sessions(limit=2, cursor=cursor, sort="updated")
                pages.append([s.session_id for s in page.sessions])
                if (cursor := page.next_cursor) is None:
                    return pages

    assert run(backend_db, build) == [["s0", "s4"], ["s3", "s2"], ["s1"]]


def test_the_browser_lists_by_last_activity(backend_db: Backend) -> None:
    async def build(backend: Backend) -> tuple[list[str], list[str], str]:
        await _old_then_new_then_old_again(backend)
        from axio_context.backends import open_database

        async with open_database(backend.where) as db:
            browser = db.browser()
            by_activity = await browser.session_tree(limit=10, sort="updated")
            by_creation = await browser.session_tree(limit=10)
            return (
                [r.info.session_id for r in by_activity.rows],
                [r.info.session_id for r in by_creation.rows],
                await browser.latest("updated"),
            )

    assert run(backend_db, build) == (["old", "new"], ["new", "old"], "old")


def test_list_sessions_by_activity_in_a_real_process(backend_db: Backend) -> None:
    run(backend_db, _old_then_new_then_old_again)
    out = subprocess.run(
        [sys.executable, "-m", "axio_context_sqlite", "--db", backend_db.where, "list-sessions", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 0, out.stderr
    assert [s["session_id"] for s in json.loads(out.stdout)] == ["old", "new"]


# -- what clear_run hid is not counted ---------------------------------------------------------------


def user(words: str) -> Message:
    return Message(role="user", content=[TextBlock(text=words)])


async def _cleared_run(backend: Backend) -> str:
    p = provider(backend)
    await p.append_many(
        "support",
        [user("My invoice is wrong"), text("assistant", "Let me check")],
        session_id="t1",
        run_id="r1",
    )
    await p.append("support", user("keep me"), session_id="t1", run_id="r2")
    await p.clear_run("support", session_id="t1", run_id="r1")
    return str(await p.session_key("support", "t1"))


def test_a_cleared_run_is_not_counted_in_listings_stats_or_forks(backend_db: Backend) -> None:
    name = run(backend_db, _cleared_run)
    [listed] = as_json(backend_db, "list-sessions", "--json")
    assert listed["session_id"] == name and listed["message_count"] == 1
    [node] = as_json(backend_db, "list-sessions", "--tree", "--json")
    assert node["message_count"] == 1
    assert as_json(backend_db, "stats", "--json")["messages"] == 1
    fork = invoke(backend_db, "fork", name, "--json")
    assert fork.exit_code == 0, fork.output
    assert json.loads(fork.output)["message_count"] == 1
    counts = {s["session_id"]: s["message_count"] for s in as_json(backend_db, "list-sessions", "--json")}
    assert set(counts.values()) == {1} and len(counts) == 2
    assert as_json(backend_db, "stats", "--json")["messages"] == 2

    async def browse(backend: Backend) -> list[int]:
        from axio_context.backends import open_database

        async with open_database(backend.where) as db:
            page = await db.browser().session_tree(limit=10)
            return [r.info.message_count for r in page.rows]

    assert run(backend_db, browse) == [1, 1]


def test_search_does_not_find_a_cleared_run(backend_db: Backend) -> None:
    run(backend_db, _cleared_run)
    found = as_json(backend_db, "search", "invoice", "--mode", "keyword", "--json")
    assert found["hits"] == []
    kept = as_json(backend_db, "search", "keep", "--mode", "keyword", "--json")
    assert len(kept["hits"]) == 1


# -- a fork's tokens are counted once ---------------------------------------------------------------


def test_stats_counts_a_forks_inherited_tokens_once(backend_db: Backend) -> None:
    async def build(backend: Backend) -> None:
        store = backend.store("parent", project="p")
        await store.append(text("user", "hello"))
        await store.set_context_tokens(3_000, 100)
        await store.fork()
        child = await store.fork()
        await child.add_context_tokens(500, 10)

    run(backend_db, build)
    stats = as_json(backend_db, "stats", "--json")
    assert (stats["input_tokens"], stats["output_tokens"]) == (3_500, 110)
    # each session still says what it holds, as axio's fork copies the totals
    listed = {s["session_id"]: s["input_tokens"] for s in as_json(backend_db, "list-sessions", "--json")}
    assert sorted(listed.values()) == [3_000, 3_000, 3_500]


# -- the command line's own words ---------------------------------------------------------------------


def test_check_is_listed_once_and_doctors_help_says_what_it_is() -> None:
    listing = CliRunner().invoke(cli, ["--help"]).output
    assert "  check " in listing and "  doctor " not in listing
    assert "(alias: doctor)" in CliRunner().invoke(cli, ["check", "--help"]).output
    doctor = CliRunner().invoke(cli, ["doctor", "--help"]).output
    assert "Another name of check." in doctor and "alias: doctor" not in doctor


def test_a_mistyped_command_suggests_the_one_it_abbreviates() -> None:
    result = CliRunner().invoke(cli, ["lst"])
    assert result.exit_code == 2
    assert "Did you mean 'list-sessions'?" in result.output
    assert "'stats'" in CliRunner().invoke(cli, ["stast"]).output
    real = subprocess.run(
        [sys.executable, "-m", "axio_context_sqlite", "lst"], capture_output=True, text=True, timeout=120
    )
    assert real.returncode == 2 and "Did you mean 'list-sessions'?" in real.stderr


def test_no_two_stats_rows_share_a_label(backend_db: Backend) -> None:
    async def build(backend: Backend) -> None:
        await backend.store("s", project="p").append(text("user", "hello"))

    run(backend_db, build)
    result = invoke(backend_db, "stats")
    assert result.exit_code == 0, result.output
    head = result.stdout.split("\n\n")[0].splitlines()
    labels = [line.split()[0] for line in head if line.strip()]
    assert len(labels) == len(set(labels)), labels
    assert any(line.startswith("embeddings ") and "message embedding(s)" in line for line in head)


def test_answering_no_to_prune_or_rm_is_not_an_error(backend_db: Backend) -> None:
    async def build(backend: Backend) -> None:
        await backend.store("s", project="p").append(text("user", "hello"))

    run(backend_db, build)
    for args in (["rm", "s"], ["prune", "--keep", "0"]):
        result = invoke(backend_db, *args, input="n\n")
        assert result.exit_code == 0, result.output
        assert "Aborted" not in result.output and "nothing deleted" in result.output
    assert [s["session_id"] for s in as_json(backend_db, "list-sessions", "--json")] == ["s"]


def test_answering_no_to_rm_in_a_real_process(backend_db: Backend) -> None:
    async def build(backend: Backend) -> None:
        await backend.store("s", project="p").append(text("user", "hello"))

    run(backend_db, build)
    real = subprocess.run(
        [sys.executable, "-m", "axio_context_sqlite", "--db", backend_db.where, "rm", "s"],
        input="n\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 0, real.stderr
    assert "nothing deleted" in real.stderr and "Aborted" not in real.stderr


def test_show_counts_what_a_cleared_run_left_and_says_how_many_it_hid(backend_db: Backend) -> None:
    name = run(backend_db, _cleared_run)
    shown = invoke(backend_db, "show", name)
    assert shown.exit_code == 0, shown.output
    assert "- messages: 1 (2 hidden by a cleared run);" in shown.stdout
    doc = as_json(backend_db, "show", name, "--json")
    assert doc["hidden"] == 2 and len(doc["messages"]) == 1
