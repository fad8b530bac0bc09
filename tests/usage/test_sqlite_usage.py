"""The SQLite usage recorder beyond the contract: persisted across reopening, limits that hold
across restarts, one transaction with the message, rollups read by index, several processes."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import sqlean

from axio_context.blocks import TextBlock
from axio_context.messages import Message
from axio_context.usage import MAX_TOKENS
from axio_context.usage_limits import GROUPS, RequestUsage, UsageGuard, UsageLimitExceeded, UsageLimits
from axio_context.usage_limits import sql as usage_sql
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.errors import TokenTotalError
from axio_context_sqlite.store.runner import SQLITE, drive
from axio_context_sqlite.usage import SQLiteUsageRecorder
from axio_context_sqlite.usage.statements import STATEMENTS

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2026, 1, 5, 12, tzinfo=UTC)


def _reply(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


async def test_usage_and_limits_hold_across_a_reopen(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    limits = UsageLimits(request_limit=None, total_tokens_limit=1000, count_tokens_before_request=True)
    async with connect(db) as conn:
        recorder = SQLiteUsageRecorder(conn, "proj")
        for i in range(9):
            await recorder.record(
                RequestUsage(input_tokens=100, output_tokens=10, cost=Decimal("0.01")),
                session_id="s",
                agent="a",
                run="r",
                model="m",
                message=_reply(f"answer {i}"),
                at=START + timedelta(hours=i * 5),
            )
        guard = UsageGuard(recorder, limits, project="proj")
        await guard.check_before_request()
        before = {by: await recorder.aggregate(by) for by in GROUPS}  # type: ignore[misc]
    async with connect(db) as conn:  # a restart: a new process would see the same
        recorder = SQLiteUsageRecorder(conn, "proj")
        assert {by: await recorder.aggregate(by) for by in GROUPS} == before  # type: ignore[misc]
        total = await recorder.totals(project="proj")
        assert (total.requests, total.total_tokens, total.cost) == (9, 990, Decimal("0.09"))
        store = SQLiteContextStore(conn, "s", "proj")
        assert len(await store.get_history()) == 9
        info = await store.info()
        assert (info.input_tokens, info.output_tokens) == (900, 90)
        guard = UsageGuard(recorder, limits, project="proj")
        with pytest.raises(UsageLimitExceeded, match=r"prompt_tokens=\d+\) for project 'proj'"):
            await guard.check_before_request(prompt=[_reply("x" * 40)])  # 990 + its estimated tokens > 1000
        await recorder.record(RequestUsage(input_tokens=20), session_id="s")
        with pytest.raises(UsageLimitExceeded, match="total_tokens_limit of 1000"):
            await guard.check_after_response()


async def test_a_refused_usage_leaves_the_message_out_too(tmp_path: Path) -> None:
    async with connect(tmp_path / "u.db") as conn:
        store = SQLiteContextStore(conn, "s", "p")
        recorder = SQLiteUsageRecorder.of(store)
        await store.append(Message(role="user", content=[TextBlock(text="hi")]))
        await store.set_context_tokens(MAX_TOKENS, 0)
        with pytest.raises(TokenTotalError):  # the session's total cannot take it: nothing is written
            await recorder.record(RequestUsage(input_tokens=1), session_id="s", message=_reply("lost?"))
        assert len(await store.get_full_history()) == 1
        assert await recorder.records() == []
        assert (await recorder.totals()).requests == 0
        assert await recorder.aggregate("session") == []


def _plans(db: Path, run: object) -> list[str]:
    """The query plans of every statement ``run(raw_connection)`` executes."""
    raw = sqlean.connect(str(db))
    statements: list[str] = []
    raw.set_trace_callback(statements.append)
    run(raw)
    raw.set_trace_callback(None)
    plans = []
    for sql in statements:
        if sql.lstrip().upper().startswith("SELECT"):
            plans += [str(row[-1]) for row in raw.execute("EXPLAIN QUERY PLAN " + sql)]
    raw.close()
    return plans


async def test_aggregates_and_totals_read_indexes_not_the_rows(tmp_path: Path) -> None:
    db = tmp_path / "u.db"
    async with connect(db) as conn:
        recorder = SQLiteUsageRecorder(conn, "p")
        for i in range(40):
            await recorder.record(
                RequestUsage(input_tokens=i, cost=Decimal("0.1")),
                session_id=f"s{i % 4}",
                agent=f"a{i % 3}",
                model="m",
                at=START + timedelta(hours=i),
            )
    since = int((START + timedelta(hours=3)).timestamp() * 1000)
    assert set(GROUPS) >= {"session", "agent", "model"}  # the loop below checks every grouping
    checked = 0
    for by in GROUPS:
        for after in (None, since):
            plans = _plans(
                db,
                lambda raw, by=by, after=after: drive(
                    raw, usage_sql.aggregate(SQLITE, STATEMENTS, by, after)
                ),
            )
            assert plans and not [p for p in plans if p.startswith("SCAN")], (by, plans)
            checked += 1
    for filters in ({"session": "s1"}, {"agent": "a2"}, {"session": "s1", "agent": "a1"}, {}):
        plans = _plans(db, lambda raw, f=filters: drive(raw, usage_sql.totals(SQLITE, STATEMENTS, f, since)))
        assert plans and not [p for p in plans if p.startswith("SCAN")], (filters, plans)
        checked += 1
    assert checked == 2 * len(GROUPS) + 4


def test_several_processes_record_into_one_file(tmp_path: Path) -> None:
    import asyncio

    db = tmp_path / "u.db"

    async def make() -> None:
        async with connect(db):
            pass

    asyncio.run(make())
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.procs.usage_writer", str(db), f"w{i}", "40"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0 and out.strip() == "done"

    async def check() -> None:
        async with connect(db) as conn:
            recorder = SQLiteUsageRecorder(conn, "multi")
            total = await recorder.totals(agent="shared")
            assert (total.requests, total.input_tokens, total.cost) == (120, 1200, Decimal("0.120"))
            by_session = await recorder.aggregate("session")
            assert sorted((t.key, t.usage.requests) for t in by_session) == [
                ("w0", 40),
                ("w1", 40),
                ("w2", 40),
            ]
            for t in by_session:
                info = await SQLiteContextStore(conn, t.key, "multi").info()
                assert (info.input_tokens, info.output_tokens) == (400, 40)

    asyncio.run(check())
