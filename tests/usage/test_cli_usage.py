"""``axio-context usage``: through click's CliRunner (parsing ``--json``) and as a real process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from axio_context.usage_limits import RequestUsage
from axio_context_sqlite import connect
from axio_context_sqlite.usage import SQLiteUsageRecorder
from tests.support.cli_helpers import invoke, invoke_json

NOW = datetime.now(UTC)


def _fill(db: Path) -> None:
    async def go() -> None:
        async with connect(db) as conn:
            recorder = SQLiteUsageRecorder(conn, "/proj")
            rows = [
                ("s1", "planner", "r1", "big", NOW - timedelta(days=3), 100, "0.5"),
                ("s1", "planner", "r1", "big", NOW - timedelta(hours=2), 200, None),
                ("s2", "coder", "r2", "small", NOW - timedelta(hours=1), 50, "0.25"),
            ]
            for sid, agent, run, model, at, tokens, cost in rows:
                await recorder.record(
                    RequestUsage(
                        input_tokens=tokens, output_tokens=tokens // 10, cost=cost and Decimal(cost)
                    ),
                    session_id=sid,
                    agent=agent,
                    run=run,
                    model=model,
                    tool_calls=1,
                    at=at,
                )

    asyncio.run(go())


def test_usage_json_by_every_group(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    _fill(db)
    by_session = invoke_json("--db", db, "usage", "--json")
    assert [(r["session"], r["requests"], r["input_tokens"], r["cost"]) for r in by_session] == [
        ("s1", 2, 300, "0.5"),
        ("s2", 1, 50, "0.25"),
    ]
    assert by_session[0]["total_tokens"] == 330 and by_session[0]["tool_calls"] == 2
    for by, keys in [
        ("agent", {"planner", "coder"}),
        ("run", {"r1", "r2"}),
        ("model", {"big", "small"}),
        ("project", {"/proj"}),
    ]:
        rows = invoke_json("--db", db, "usage", "--by", by, "--json")
        assert {r[by] for r in rows} == keys, by
        assert sum(r["requests"] for r in rows) == 3
    days = invoke_json("--db", db, "usage", "--by", "day", "--json")
    assert [d["day"] for d in days] == sorted(d["day"] for d in days) and sum(
        d["requests"] for d in days
    ) == 3


def test_usage_since_and_the_table(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    _fill(db)
    recent = invoke_json("--db", db, "usage", "--since", "1d", "--json")
    assert [(r["session"], r["input_tokens"]) for r in recent] == [("s1", 200), ("s2", 50)]
    lines = invoke("--db", db, "usage", "--by", "model").stdout.splitlines()
    assert lines[0].split()[:3] == ["MODEL", "REQUESTS", "TOOLS"]
    assert lines[-1].split()[:6] == ["TOTAL", "3", "3", "350", "35", "385"]
    assert lines[-1].split()[6] == "0.75"
    nl = invoke("--db", db, "usage", "--nl").stdout.splitlines()
    assert [json.loads(line)["session"] for line in nl] == ["s1", "s2"]


def test_usage_bad_input_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    _fill(db)
    bad = invoke("--db", db, "usage", "--by", "week", ok=False)
    assert bad.exit_code == 2 and "'week' is not one of" in bad.stderr
    bad = invoke("--db", db, "usage", "--since", "yesterday-ish", ok=False)
    assert bad.exit_code == 2 and "is not a date" in bad.stderr
    missing = invoke("--db", tmp_path / "none.db", "usage", ok=False)
    assert (
        missing.exit_code == 1 and missing.stderr.startswith("Error:") and "Traceback" not in missing.output
    )


def test_usage_as_a_real_process(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    _fill(db)
    script = Path(sys.executable).parent / "axio-context"
    done = subprocess.run(
        [str(script), "--db", str(db), "usage", "--by", "agent", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert {r["agent"]: r["requests"] for r in json.loads(done.stdout)} == {"planner": 2, "coder": 1}
