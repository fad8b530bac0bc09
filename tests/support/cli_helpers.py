"""Databases for the command-line tests: every block type, forks of every shape, checkpoints."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from axio_context import Checkpoint, ImageBlock, Message, TextBlock
from axio_context.testing import every_block_message, text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.cli import cli
from tests.support import sqlite_checks

PHOTO = bytes(range(256)) * 16  # 4 KiB: stored once in the blobs table


def invoke(*args: str | Path, ok: bool = True, input: str | None = None) -> Result:
    """Run the command line in-process; with ``ok`` exceptions propagate and exit code must be 0."""
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=not ok, input=input)
    if ok:
        assert result.exit_code == 0, (result.output, result.stderr)
    return result


def invoke_json(*args: str | Path) -> Any:
    return json.loads(invoke(*args).stdout)


async def build_rich_db(path: Path) -> dict[str, str]:
    """A database with every block type, a fork chain, a detached fork, an orphan, checkpoints,
    titles, metadata, token totals, a token-only session and a long session; returns its ids."""
    ids: dict[str, str] = {}
    async with connect(path) as conn:
        root = SQLiteContextStore(conn, "root-session", project="/work/alpha")
        await root.append_many(every_block_message())
        await root.append(
            Message(role="user", content=[TextBlock(text="a photo"), ImageBlock("image/png", PHOTO)])
        )
        await root.add_context_tokens(1200, 340)
        await root.add_checkpoint(
            Checkpoint(
                position=3,
                summary=[text("user", "summary of the start"), text("assistant", "understood")],
                tokens_before=900,
                tokens_after=120,
                summarizer="test-summarizer",
            )
        )
        await root.set_title("Every block")
        await root.set_metadata({"app": "tests", "numbers": [1, 2.5, None], "nested": {"ok": True}})
        ids["root"] = root.session_id

        child = await root.fork()  # shares all 7 of root's messages
        await child.append(text("user", "child question"))
        await child.add_checkpoint(Checkpoint(position=7, summary=[text("user", "child summary")]))
        await child.add_context_tokens(10, 20)
        ids["child"] = child.session_id

        grandchild = await child.fork()
        await grandchild.append(text("assistant", "grandchild answer"))
        ids["grandchild"] = grandchild.session_id

        await root.append(text("assistant", "root continues"))
        detached = await root.fork()  # at 8; root then pops below it: the fork gets a copy of that one row
        await detached.append(text("user", "detached question"))
        ids["detached"] = detached.session_id
        await root.pop()
        await root.append(text("user", "root after pop"))

        doomed = SQLiteContextStore(conn, "doomed", project="/work/beta")
        await doomed.append_many([text("user", "doomed start"), text("assistant", "doomed reply")])
        orphan = await doomed.fork()
        await orphan.append(text("user", "orphan question"))
        await doomed.delete_session()
        ids["orphan"] = orphan.session_id

        tokens_only = SQLiteContextStore(conn, "tokens-only", project="/work/beta")
        await tokens_only.set_context_tokens(7, 8)
        ids["tokens_only"] = "tokens-only"

        long = SQLiteContextStore(conn, "long-session", project="/work/gamma")
        await long.append_many(
            [
                text("user" if i % 2 == 0 else "assistant", f"long message {i} " + "x" * (i % 50))
                for i in range(1203)
            ]
        )
        ids["long"] = "long-session"
    return ids


def check_storage(path: Path) -> None:
    """Rows, blob reference counts, the keyword index and SQLite's integrity check agree."""
    sqlite_checks.check_storage(path)


def make_sessions(path: Path, sessions: dict[str, list[Message]], project: str = "/p") -> None:
    """Write ``sessions`` (id -> messages, one transaction each) to the database at ``path``."""

    async def write() -> None:
        async with connect(path) as conn:
            for sid, messages in sessions.items():
                await SQLiteContextStore(conn, sid, project=project).append_many(messages)

    asyncio.run(write())
