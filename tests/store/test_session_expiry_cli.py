"""Expired sessions on the command line (CliRunner), on SQLite and PostgreSQL: not listed, shown,
searched or exported before any sweep; ``stats`` counts them and ``prune --expired`` deletes
them, a fork keeping its rows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context.backends.registry import open_database
from axio_context_postgres import PostgresContextStore
from axio_context_sqlite import SQLiteContextStore
from tests.support.backends import Backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)
from tests.support.cli_helpers import invoke, invoke_json


async def fill(db: Backend) -> str:
    """A session that expires, a fork of it without a TTL and a session kept; the fork's id."""
    async with db.open():
        kept = db.store("kept", project="p")
        await kept.append(Message(role="user", content=[TextBlock(text="a kiwi to keep")]))
        old = db.store("old-session", project="p")
        await old.append(Message(role="user", content=[TextBlock(text="the kiwi plan")]))
        fork = await old.fork()
        brief: Any = (
            SQLiteContextStore(db.handle, "old-session", project="p", ttl=0.01)
            if db.name == "sqlite"
            else PostgresContextStore(db.handle, "old-session", project="p", ttl=0.01)
        )
        await brief.set_title("going")
    await asyncio.sleep(0.3)
    return fork.session_id


def test_expired_sessions_on_the_command_line(backend_db: Backend) -> None:  # noqa: F811
    fork = asyncio.run(fill(backend_db))
    db = backend_db.where
    listed = invoke_json("--db", db, "list-sessions", "--json")
    assert {s["session_id"] for s in listed} == {"kept", fork}
    shown = invoke("--db", db, "show", "old-session", ok=False)
    assert shown.exit_code != 0
    assert "Traceback" not in shown.output
    assert len(shown.stderr.strip().splitlines()) == 1
    hits = invoke_json("--db", db, "search", "kiwi", "--mode", "keyword", "--json")
    assert "old-session" not in json.dumps(hits)
    exported = json.loads(invoke("--db", db, "export").stdout)
    ids = {s["id"] for s in exported["sessions"]}
    assert "old-session" not in ids and fork in ids
    assert invoke_json("--db", db, "stats", "--json")["expired"]["sessions"] == 1
    dry = invoke("--db", db, "prune", "--expired", "--dry-run")
    assert dry.stderr.strip() == "1 expired item(s) would be deleted (sessions 1)"
    assert invoke_json("--db", db, "prune", "--expired", "--yes", "--json")["sessions"] == 1
    assert invoke("--db", db, "prune", "--expired", "--yes").stderr.strip() == "nothing expired"
    forked = invoke_json("--db", db, "show", fork, "--json")
    assert "the kiwi plan" in json.dumps(forked)  # the fork keeps the expired parent's rows


async def _ttls(where: str, ids: list[str]) -> list[tuple[str, int, int]]:
    async with open_database(where) as db:
        sessions = db.memory_stores().expiry().sessions
        assert sessions is not None
        return await sessions.ttls(ids)


def test_copy_carries_ttls_and_leaves_expired_sessions_behind(
    backend_db: Backend,  # noqa: F811
    tmp_path: Path,
) -> None:
    fork = asyncio.run(fill(backend_db))

    async def lasting() -> None:
        async with backend_db.open():
            store: Any = (
                SQLiteContextStore(backend_db.handle, "lasting", project="p", ttl=3600)
                if backend_db.name == "sqlite"
                else PostgresContextStore(backend_db.handle, "lasting", project="p", ttl=3600)
            )
            await store.append(Message(role="user", content=[TextBlock(text="a day's notes")]))

    asyncio.run(lasting())
    dest = str(tmp_path / "copy.db")
    invoke("copy", backend_db.where, dest, "--json")
    listed = invoke_json("--db", dest, "list-sessions", "--json")
    assert {s["session_id"] for s in listed} == {"kept", fork, "lasting"}
    ids = ["kept", fork, "lasting"]
    source = asyncio.run(_ttls(backend_db.where, ids))
    assert [t[0] for t in source] == ["lasting"]
    assert asyncio.run(_ttls(dest, ids)) == source  # the same TTL and expiry time
