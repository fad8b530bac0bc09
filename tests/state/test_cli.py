"""The command line over subagent sessions: ``list-sessions --tree`` (table, ``--json``, ``--nl``),
``export --children``, ``state``, and show/search reaching subagent sessions."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.state import save_state
from tests.support.cli_helpers import invoke, invoke_json

HIST = [
    {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "locate the zebra config"}]},
    {"kind": "response", "parts": [{"part_kind": "text", "content": "zebra lives in etc"}]},
]


async def _build(path: Path) -> str:
    async with connect(path) as conn:
        main = SQLiteContextStore(conn, "main", project="p")
        await main.append(Message(role="user", content=[TextBlock(text="hello there")]))
        await save_state(main, ResumableState(subagent_history={"explorer": HIST}, handoff_message="go on"))
        fork = await main.fork()
        await SQLiteContextStore(conn, "alone", project="p").append(
            Message(role="user", content=[TextBlock(text="solo")])
        )
        return fork.session_id


def build(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "state.db"
    return path, asyncio.run(_build(path))


def test_tree_json_nests_subagents_and_forks(tmp_path: Path) -> None:
    path, fork = build(tmp_path)
    tree = invoke_json("--db", path, "list-sessions", "--tree", "--json")
    assert [(n["session_id"], n["kind"]) for n in tree] == [("alone", "session"), ("main", "session")]
    main = tree[1]
    assert [(c["session_id"], c["kind"], c["agent_name"]) for c in main["children"]] == [
        ("explorer@main", "subagent", "explorer"),
        (fork, "fork", None),
    ]
    assert main["children"][0]["message_count"] == 2
    flat = invoke_json("--db", path, "list-sessions", "--json")  # without --tree: every session
    assert {s["session_id"] for s in flat} == {"alone", "main", "explorer@main", fork}


def test_tree_nl_and_table(tmp_path: Path) -> None:
    path, fork = build(tmp_path)
    lines = [
        json.loads(x) for x in invoke("--db", path, "list-sessions", "--tree", "--nl").stdout.splitlines()
    ]
    assert [(x["session_id"], x["depth"], x["under"]) for x in lines] == [
        ("alone", 0, None),
        ("main", 0, None),
        ("explorer@main", 1, "main"),
        (fork, 1, "main"),
    ]
    table = invoke("--db", path, "list-sessions", "--tree").stdout.splitlines()
    assert table[0].startswith("ID")
    assert [line.split("  ")[0] for line in table[1:3]] == ["alone", "main"]
    assert table[3].startswith("  [explorer] explorer@main")
    assert table[4].startswith("  [fork] ")
    assert (
        invoke_json("--db", path, "list-sessions", "--tree", "-n", "1", "--json")[0]["session_id"] == "alone"
    )


def test_export_children(tmp_path: Path) -> None:
    path, fork = build(tmp_path)
    out = tmp_path / "out.json"
    invoke("--db", path, "export", "main", "--children", "-o", out)
    exported: Any = json.loads(out.read_text())
    ids = [s["id"] for s in exported["sessions"]]
    assert ids[0] == "main" and set(ids) == {"main", "explorer@main", fork}
    alone = json.loads(invoke("--db", path, "export", "main").stdout)
    assert [s["id"] for s in alone["sessions"]] == ["main"]


def test_show_search_and_state(tmp_path: Path) -> None:
    path, _ = build(tmp_path)
    shown = invoke_json("--db", path, "show", "explorer@main", "--json")
    assert shown["messages"][0]["content"][0]["text"] == "locate the zebra config"
    hits = invoke_json("--db", path, "search", "zebra", "--json")
    assert {h["session_id"] for h in hits["hits"]} == {"explorer@main"}
    state = invoke_json("--db", path, "state", "main", "--json")
    assert state["subagents"] == {"explorer": "explorer@main"}
    assert state["state"]["handoff_message"] == "go on"
    assert state["type"] == "axio_context.state.resumable.ResumableState"
    text = invoke("--db", path, "state", "main").stdout
    assert "subagent explorer: session explorer@main" in text and "handoff_message: go on" in text


def test_state_errors_are_one_line(tmp_path: Path) -> None:
    path, _ = build(tmp_path)
    missing = invoke("--db", path, "state", "alone", ok=False)
    assert (
        missing.exit_code == 1
        and missing.stderr.strip() == "Error: no agent state is saved with session 'alone'"
    )
    unknown = invoke("--db", path, "state", "nope", ok=False)
    assert unknown.exit_code == 1 and "nope" in unknown.stderr and "Traceback" not in unknown.output
    pg = invoke(
        "--db", "postgresql://postgres@/db?host=/nonexistent-axio", "list-sessions", "--tree", ok=False
    )
    assert pg.exit_code == 1 and len(pg.stderr.strip().splitlines()) == 1 and "Traceback" not in pg.output


def test_export_and_import_keep_subagent_and_agent_links(tmp_path: Path) -> None:
    """An export carries a subagent session's owner and name, and an agent conversation's agent
    and thread; importing it (as it is, with --new-ids, or with --replace) links them again."""
    from axio_context_sqlite.agents import SQLiteHistoryProvider

    path, _ = build(tmp_path)

    async def agent_turn() -> None:
        async with connect(path) as conn:
            await SQLiteHistoryProvider(conn).append(
                "support", Message(role="user", content=[TextBlock(text="hi")]), session_id="ticket-9"
            )

    asyncio.run(agent_turn())
    out = tmp_path / "all.json"
    invoke("--db", path, "export", "--all", "-o", out)
    headers = {s["id"]: s for s in json.loads(out.read_text())["sessions"]}
    assert (headers["explorer@main"]["owner_id"], headers["explorer@main"]["agent_name"]) == (
        "main",
        "explorer",
    )
    agent_session = next(i for i, h in headers.items() if h["agent_id"] == "support")
    assert headers[agent_session]["thread_id"] == "ticket-9"

    def tree_of(db: Path) -> list[tuple[str, str, list[tuple[str, str]]]]:
        tree = invoke_json("--db", db, "list-sessions", "--tree", "--json")
        return sorted(
            (n["session_id"], n["kind"], [(c["kind"], c.get("agent_name")) for c in n["children"]])
            for n in tree
        )

    for args in ([], ["--replace"]):
        copy = tmp_path / f"copy{len(args)}.db"
        invoke("--db", copy, "import", out)
        if args:
            invoke("--db", copy, "import", out, *args)
        assert tree_of(copy) == tree_of(path)
        shown = invoke_json("--db", copy, "show", "ticket-9", "--agent", "support", "--json")
        assert shown["messages"][0]["content"][0]["text"] == "hi"
    renamed = tmp_path / "renamed.db"
    invoke("--db", renamed, "import", out, "--new-ids")
    tree = invoke_json("--db", renamed, "list-sessions", "--tree", "--json")
    owners = [n for n in tree if any(c["kind"] == "subagent" for c in n["children"])]
    assert len(owners) == 1 and owners[0]["session_id"] != "main"  # the copy's owner, by its new id
