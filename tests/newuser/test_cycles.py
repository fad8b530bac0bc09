"""Lineage cycles (issue 30, item 10): an import holding a session that is its own ancestor (its
parent_id or owner_id its own id, two sessions each other's parent) is refused in one line with
nothing written, on SQLite and PostgreSQL; a fork cannot make one; ``check`` finds one stored."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.backends import open_database
from axio_context.lineage import LineageCycleError
from axio_context.testing import text
from axio_context_sqlite.cli import cli
from tests.support.backends import Backend


def header(sid: str, parent: str | None = None, owner: str | None = None) -> dict[str, Any]:
    return {
        "id": sid,
        "project": "p",
        "title": None,
        "metadata": None,
        "created_at": "2026-01-01T00:00:00.000+00:00",
        "updated_at": "2026-01-01T00:00:00.000+00:00",
        "parent_id": parent,
        "fork_position": None if parent is None else 0,
        "inherited": 0,
        "message_count": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "checkpoints": [],
        "owner_id": owner,
        "messages": [],
    }


CYCLES = {
    "its own parent": [header("a", parent="a")],
    "each other's parent": [header("ok"), header("a", parent="b"), header("b", parent="a")],
    "its own owner": [header("a", owner="a")],
    "a parent and an owner": [header("a", owner="b"), header("b", parent="a")],
}


def _sessions(where: str) -> list[str]:
    async def go() -> list[str]:
        async with open_database(where) as db:
            return [s.session_id for s in (await db.list_sessions()).sessions]

    return asyncio.run(go())


@pytest.mark.parametrize("case", list(CYCLES))
def test_an_import_with_a_lineage_cycle_is_refused_and_writes_nothing(
    backend_db: Backend, tmp_path: Path, case: str
) -> None:
    dump = tmp_path / "cycle.json"
    dump.write_text(json.dumps({"format": "axio-context", "version": 1, "sessions": CYCLES[case]}))
    result = CliRunner().invoke(cli, ["--db", backend_db.where, "import", str(dump)])
    assert result.exit_code == 1, result.output
    [line] = [x for x in result.output.splitlines() if x.startswith("Error:")]
    assert "would be its own ancestor" in line, result.output
    assert "Traceback" not in result.output
    assert _sessions(backend_db.where) == []


def test_an_import_with_a_cycle_in_a_real_process(backend_db: Backend, tmp_path: Path) -> None:
    dump = tmp_path / "cycle.json"
    dump.write_text(
        json.dumps({"format": "axio-context", "version": 1, "sessions": CYCLES["its own parent"]})
    )
    real = subprocess.run(
        [sys.executable, "-m", "axio_context_sqlite", "--db", backend_db.where, "import", str(dump)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert real.returncode == 1 and "would be its own ancestor" in real.stderr, real.stderr
    assert len(real.stderr.strip().splitlines()) == 1


async def _raw(backend: Backend, sql: str) -> None:
    """Change a row behind the library's back (as an earlier version's import could leave it)."""
    handle: Any = backend.handle
    await handle.execute(sql)
    if hasattr(handle, "commit"):
        await handle.commit()


async def test_a_fork_cannot_take_an_id_a_session_above_it_still_names(backend: Backend) -> None:
    await backend.store("child", project="p").append(text("user", "hello"))
    # a parent deleted on PostgreSQL stays named by its forks: the same, made directly
    await _raw(backend, "UPDATE sessions SET parent_id = 'gone' WHERE id = 'child'")
    async with open_database(backend.where) as db:
        with pytest.raises(LineageCycleError, match="own ancestor"):
            await db.fork("child", "gone")
        assert [s.session_id for s in (await db.list_sessions()).sessions] == ["child"]
        assert await db.fork("child", "fine") == "fine"


def test_the_command_line_refuses_such_a_fork_in_one_line(backend_db: Backend) -> None:
    async def build() -> None:
        async with backend_db.open():
            await backend_db.store("child", project="p").append(text("user", "hello"))
            await _raw(backend_db, "UPDATE sessions SET owner_id = 'gone' WHERE id = 'child'")

    asyncio.run(build())
    result = CliRunner().invoke(cli, ["--db", backend_db.where, "fork", "child", "--id", "gone"])
    assert result.exit_code == 1 and "own ancestor" in result.output
    assert "Traceback" not in result.output


def test_check_finds_a_stored_cycle(tmp_path: Path) -> None:
    path = tmp_path / "a.db"

    async def build() -> None:
        async with open_database(path, create=True) as db:
            for sid in ("a", "b", "c"):
                await db.store(sid, "p").append(text("user", sid))

    asyncio.run(build())
    ok = CliRunner().invoke(cli, ["--db", str(path), "check", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True
    with sqlite3.connect(path) as raw:
        raw.execute("UPDATE sessions SET parent_id = 'b' WHERE id = 'a'")
        raw.execute("UPDATE sessions SET parent_id = 'a' WHERE id = 'b'")
    bad = CliRunner().invoke(cli, ["--db", str(path), "check", "--json"])
    assert bad.exit_code == 1
    report = json.loads(bad.stdout)
    assert report["ok"] is False
    [cycle] = [p for p in report["problems"] if p.startswith("lineage cycle")]
    assert cycle.startswith("lineage cycle: 'a' -> 'b' -> 'a' (each is its own ancestor")
    text_out = CliRunner().invoke(cli, ["--db", str(path), "doctor"]).output
    assert "lineage cycle" in text_out and "problems found" in text_out
