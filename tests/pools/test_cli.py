"""``axio-context pools`` through click's runner (``--json`` parsed) and one real process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from axio_context.pools import ContextItem
from axio_context_sqlite import connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue


async def _fill(db: Path) -> None:
    async with connect(db) as conn:
        p = await SQLiteContextPool.open(conn, "docs", limit=10, tags=["work"])
        await p.add(ContextItem({"pages": [1, 2]}, "Q3 earnings report", "q3"))
        await p.add(ContextItem("plain", "notes", "n1"))
        q = await SQLiteContextQueue.open(conn, "recent", limit=3)
        await q.append(*[ContextItem(f"m{i}") for i in range(5)])
        await q.branch(name="recent-sub")


def _invoke(db: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_list_and_show_as_json(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    asyncio.run(_fill(db))
    code, out = _invoke(db, "pools", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert set(rows) == {"docs", "recent", "recent-sub"}
    assert (rows["docs"]["kind"], rows["docs"]["limit"], rows["docs"]["size"], rows["docs"]["tags"]) == (
        "pool",
        10,
        2,
        ["work"],
    )
    assert rows["recent-sub"]["parent"] == "recent" and rows["recent"]["size"] == 3
    code, out = _invoke(db, "pools", "--kind", "queue", "--json")
    assert {r["name"] for r in json.loads(out)} == {"recent", "recent-sub"}
    code, out = _invoke(db, "pools", "show", "docs", "--json")
    view = json.loads(out)
    assert view["info"]["name"] == "docs"
    assert view["items"] == [
        {"id": "q3", "description": "Q3 earnings report", "content": {"pages": [1, 2]}},
        {"id": "n1", "description": "notes", "content": "plain"},
    ]
    code, out = _invoke(db, "pools", "show", "recent-sub", "-n", "2", "--json")
    assert [i["content"] for i in json.loads(out)["items"]] == ["m2", "m3"]


def test_tables_and_errors(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    asyncio.run(_fill(db))
    code, out = _invoke(db, "pools")
    assert code == 0 and out.splitlines()[0].split() == [
        "NAME",
        "KIND",
        "LIMIT",
        "ITEMS",
        "PARENT",
        "UPDATED",
    ]
    code, out = _invoke(db, "pools", "show", "docs")
    assert code == 0 and "pool docs: 2 items, limit 10" in out and "Q3 earnings report" in out
    code, out = _invoke(db, "pools", "show", "nope")
    assert code == 1 and out.strip() == "Error: no queue or pool named 'nope'"
    proc = subprocess.run(
        [sys.executable, "-m", "axio_context_sqlite", "--db", str(db), "pools", "show", "recent", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert [i["content"] for i in json.loads(proc.stdout)["items"]] == ["m2", "m3", "m4"]


def test_reading_creates_nothing_and_changes_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "not" / "here.db"
    code, out = _invoke(missing, "pools")
    assert (code, out.strip()) == (1, f"Error: no database at {missing}")
    assert not (tmp_path / "not").exists()
    db = tmp_path / "cli.db"
    asyncio.run(_fill(db))
    _invoke(db, "vacuum")
    before = db.read_bytes()
    for args in (["pools"], ["pools", "show", "docs"], ["pools", "--kind", "pool", "--nl"]):
        assert _invoke(db, *args)[0] == 0
    assert db.read_bytes() == before
