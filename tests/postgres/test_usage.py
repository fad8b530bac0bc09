"""PostgresUsageRecorder on the real server the tests start (its contract suite runs on every
backend from tests/usage/test_recorders.py): what only a server shows: rollups that agree with
the rows, one transaction per record, and many writers racing for one run."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from axio_context.context import ContextStore
from axio_context.errors import TokenCountError
from axio_context.testing import text
from axio_context.usage import MAX_TOKENS
from axio_context.usage_limits import (
    GROUPS,
    MemoryUsageRecorder,
    RequestUsage,
    UsageGuard,
    UsageLimitExceeded,
    UsageLimits,
    UsageRecorder,
)
from axio_context.usage_limits import sql as usage_sql
from axio_context.usage_limits.records import DAY_MS, ms_of
from axio_context.usage_limits.sql import COLUMN_OF
from axio_context_postgres import Pool, PostgresContextStore, connect
from axio_context_postgres.runner import POSTGRES, drive
from axio_context_postgres.usage import PostgresUsageRecorder
from axio_context_postgres.usage.statements import STATEMENTS
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.cli import cli
from axio_context_sqlite.usage import SQLiteUsageRecorder

USAGE_TABLES = "usage_records, usage_rollups, usage_runs, sessions, segments, messages, checkpoints"


class _Postgres:
    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    async def new(self) -> UsageRecorder:
        # each recorder starts empty, its ids from 1
        await self.pool.execute(f"TRUNCATE {USAGE_TABLES} RESTART IDENTITY CASCADE")
        return PostgresUsageRecorder(self.pool, "p")

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore:
        return PostgresContextStore(self.pool, session_id, "p")


@pytest.fixture
async def pg_pool(pg_url: str) -> AsyncIterator[Pool]:
    pool = await connect(pg_url, min_size=1, max_size=8)
    try:
        yield pool
    finally:
        await pool.close()


# -- beyond the contract --------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
DAY1 = datetime(2026, 3, 1, tzinfo=UTC)


def _rows(seed: int, n: int) -> list[dict[str, Any]]:
    """``n`` varied records over four days: runs stay in their session, some costs unknown."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        session = f"s{rng.randrange(5)}"
        rows.append(
            {
                "usage": RequestUsage(
                    input_tokens=rng.randrange(1000),
                    output_tokens=rng.randrange(100),
                    cache_read_tokens=rng.randrange(50),
                    audio_seconds=rng.randrange(4) / 2,
                    details={"reasoning": rng.randrange(9)} if rng.random() < 0.5 else {},
                    extra={"images": rng.randrange(3)} if rng.random() < 0.3 else {},
                    cost=None if rng.random() < 0.3 else Decimal(rng.randrange(1, 999)) / 1000,
                ),
                "session_id": session,
                "agent": f"a{rng.randrange(3)}",
                "run": "" if rng.random() < 0.2 else f"{session}-r{rng.randrange(3)}",
                "model": f"m{rng.randrange(3)}",
                "tool_calls": rng.randrange(3),
                "at": DAY1 + timedelta(milliseconds=rng.randrange(4 * 86_400_000)),
            }
        )
    return rows


async def test_rollups_and_raw_rows_agree_with_the_memory_recorder(pg_pool: Pool) -> None:
    """Every total, aggregate and listing equals the memory recorder's over the same rows, with
    ``since`` before everything, inside a day, at a day boundary and after everything."""
    pg = await _Postgres(pg_pool).new()
    memory = MemoryUsageRecorder(project="p")
    for row in _rows(7, 120):
        await pg.record(**row)
        await memory.record(**row)
    sinces = [
        None,
        DAY1 - timedelta(days=3),
        DAY1 + timedelta(hours=30, minutes=7),
        DAY1 + timedelta(days=2),
        DAY1 + timedelta(days=9),
    ]
    scopes: list[dict[str, str]] = [
        {},
        {"session_id": "s1"},
        {"agent": "a2"},
        {"run": "s3-r1"},
        {"run": ""},
        {"model": "m0"},
        {"project": "p"},
        {"session_id": "s2", "agent": "a0"},
        {"agent": "a1", "model": "m2", "run": "s4-r0"},
        {"session_id": "nobody"},
    ]
    for since in sinces:
        for by in GROUPS:
            got = await pg.aggregate(by, since=since)  # type: ignore[arg-type]
            assert got == await memory.aggregate(by, since=since), (by, since)  # type: ignore[arg-type]
        for scope in scopes:
            assert await pg.totals(**scope, since=since) == await memory.totals(**scope, since=since), (
                scope,
                since,
            )
    # newest first by time, as SQLite lists them (the memory recorder lists in recording order)
    for session_id, run, limit in (
        (None, None, 100),
        ("s0", None, 100),
        (None, "s1-r2", 100),
        (None, None, 7),
    ):
        mine = await pg.records(session_id=session_id, run=run, limit=limit)
        theirs = await memory.records(session_id=session_id, run=run, limit=1000)
        newest = sorted(theirs, key=lambda r: (r.at, r.id), reverse=True)[:limit]
        assert [(r.id, r.session_id, r.at, r.usage) for r in mine] == [
            (r.id, r.session_id, r.at, r.usage) for r in newest
        ]


async def _rollups_match_rows(pool: Pool) -> None:
    """Each rollup row (per day and all time) is exactly the sum of the usage rows behind it."""
    for dim, column in COLUMN_OF.items():
        for day, day_sql in ((-1, "-1"), (None, f"at / {DAY_MS}")):
            where = "day = -1" if day == -1 else "day >= 0"
            rolled = await pool.fetch(
                f"SELECT key, day, requests, input_tokens, output_tokens, cost FROM usage_rollups"
                f" WHERE dim = $1 AND {where} ORDER BY 1, 2",
                dim,
            )
            summed = await pool.fetch(
                f"SELECT {column}, ({day_sql})::integer, sum(requests), sum(input_tokens),"
                f" sum(output_tokens), sum(cost) FROM usage_records GROUP BY 1, 2 ORDER BY 1, 2"
            )
            assert [tuple(r) for r in rolled] == [tuple(r) for r in summed], (dim, day)


def test_processes_record_at_once_and_one_wins_a_contested_run(pg_url: str) -> None:
    """Four processes record (with messages) into one database at once, each also claiming the
    same run for its own session: one claim wins, nothing is lost, rollups equal the rows."""
    asyncio.run(_truncate(pg_url))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.procs.pg_usage_writer", pg_url, f"w{i}", "25"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=60)
        assert p.returncode == 0, out
        outs.append(out.split())
    assert sorted(o[0] for o in outs) == ["refused", "refused", "refused", "won"]
    assert all(o[-1] == "done" and o.count("ack") == 25 for o in outs)

    async def check() -> None:
        pool = await connect(pg_url, min_size=1, max_size=2)
        try:
            recorder = PostgresUsageRecorder(pool, "multi")
            winner = f"w{[o[0] for o in outs].index('won')}"
            assert [r.session_id for r in await recorder.records(run="contested")] == [winner]
            total = await recorder.totals(agent="shared")
            assert (total.requests, total.input_tokens, total.cost) == (101, 1001, Decimal("0.100"))
            for i in range(4):
                store = PostgresContextStore(pool, f"w{i}", "multi")
                history = await store.get_history()
                assert [m.content[0].text for m in history] == [f"w{i} {n}" for n in range(25)]  # type: ignore[union-attr]
                positions = sorted(r.position for r in await recorder.records(run=f"w{i}-run"))  # type: ignore[type-var]
                assert positions == list(range(25))
                expect = 250 + (f"w{i}" == winner)
                assert await store.get_context_tokens() == (expect, 25)
            await _rollups_match_rows(pool)
        finally:
            await pool.close()

    asyncio.run(check())


def test_a_writer_killed_mid_record_loses_nothing_acknowledged_and_leaves_no_half(pg_url: str) -> None:
    """SIGKILL a process recording (with messages) as fast as it can: every acknowledged record
    is there, and what the kill cut short left nothing: as many messages as rows with one, the
    session's token totals equal to its recorded usage, the rollups equal to the rows."""
    asyncio.run(_truncate(pg_url))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.procs.pg_usage_writer", pg_url, "k", "100000"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    acked = -1
    for line in proc.stdout:
        if line.startswith("ack "):
            acked = int(line.split()[1])
            if acked >= 40:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    assert acked >= 40

    async def check() -> None:
        pool = await connect(pg_url, min_size=1, max_size=2)
        try:
            recorder = PostgresUsageRecorder(pool, "multi")
            store = PostgresContextStore(pool, "k", "multi")
            rows = await recorder.records(run="k-run", limit=1_000_000)
            history = await store.get_history()
            assert len(rows) == len(history) >= acked + 1
            assert sorted(r.position for r in rows) == list(range(len(history)))  # type: ignore[type-var]
            total = await recorder.totals(session_id="k")
            assert await store.get_context_tokens() == (total.input_tokens, total.output_tokens)
            await _rollups_match_rows(pool)
        finally:
            await pool.close()

    asyncio.run(check())


async def _truncate(url: str) -> None:
    pool = await connect(url, min_size=1, max_size=1)
    try:
        await pool.execute(f"TRUNCATE {USAGE_TABLES} RESTART IDENTITY CASCADE")
    finally:
        await pool.close()


async def test_tasks_racing_on_shared_rollups_lose_nothing(pg_pool: Pool) -> None:
    """Sixteen concurrent records per session on eight pooled connections: the shared rollup
    rows (agent, model, day) queue on their locks in one order, with no deadlock and no loss."""
    recorder = await _Postgres(pg_pool).new()
    await asyncio.gather(
        *(
            recorder.record(
                RequestUsage(input_tokens=3, output_tokens=1, cost=Decimal("0.1"), details={"r": 1}),
                session_id=f"s{i % 4}",
                agent="shared",
                run=f"run{i % 4}",
                model="m",
                at=DAY1 + timedelta(hours=i % 30),
            )
            for i in range(64)
        )
    )
    total = await recorder.totals(model="m")
    assert (total.requests, total.input_tokens, total.cost, total.details) == (
        64,
        192,
        Decimal("6.4"),
        {"r": 64},
    )
    assert {t.key: t.usage.requests for t in await recorder.aggregate("run")} == {
        f"run{k}": 16 for k in range(4)
    }
    await _rollups_match_rows(pg_pool)


class _Traced:
    """A real connection that also keeps every query sent through it (to EXPLAIN them after)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.queries: list[tuple[str, tuple[Any, ...]]] = []

    async def fetch(self, sql: str, *args: Any) -> Any:
        self.queries.append((sql, args))
        return await self.conn.fetch(sql, *args)

    async def fetchrow(self, sql: str, *args: Any) -> Any:
        self.queries.append((sql, args))
        return await self.conn.fetchrow(sql, *args)


def _nodes(plan: Any) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


async def test_totals_aggregates_and_records_read_indexes_not_the_rows(pg_pool: Pool) -> None:
    """Beside 30,000 ledger rows and 40,000 rollup rows, every read is an index range: no
    sequential scan of either table, and listings walk an index (no sort)."""
    recorder = await _Postgres(pg_pool).new()
    await pg_pool.execute(
        "INSERT INTO usage_records (at, session, agent, run, model, project, requests, input_tokens)"
        " SELECT $1::bigint - g * 60000, 'bulk' || (g % 500), 'agent' || (g % 7), 'bulk-run' || g,"
        " 'model' || (g % 5), 'p', 1, 10 FROM generate_series(1, 30000) g",
        int(DAY1.timestamp() * 1000),
    )
    await pg_pool.execute(
        "INSERT INTO usage_rollups (dim, key, day, requests, first_at, last_at)"
        " SELECT dim, 'bulk' || g, d, 1, 0, 0 FROM unnest($1::text[]) dim,"
        " generate_series(1, 800) g, generate_series(20000, 20009) d",
        list(COLUMN_OF),
    )
    for row in _rows(3, 30):
        await recorder.record(**row)
    await pg_pool.execute("ANALYZE usage_records; ANALYZE usage_rollups")
    since = DAY1 + timedelta(hours=40, minutes=5)
    async with pg_pool.acquire() as conn:
        traced = _Traced(conn)
        for after in (None, ms_of(since)):
            for by in GROUPS:
                await drive(traced, usage_sql.aggregate(POSTGRES, STATEMENTS, by, after))
            for filters in (
                {},
                {"session": "s1"},
                {"agent": "a2"},
                {"session": "s1", "agent": "a1"},
                {"run": "s2-r0"},
            ):
                await drive(traced, usage_sql.totals(POSTGRES, STATEMENTS, filters, after))
        for session_id, run in ((None, None), ("s1", None), (None, "s2-r1")):
            await drive(traced, usage_sql.records(POSTGRES, STATEMENTS, session_id, run, 10))
        # every call above went through fetch/fetchrow (a read another way would not be planned)
        assert set(GROUPS) >= {"session", "agent", "model"}
        assert len(traced.queries) >= 2 * (len(GROUPS) + 5) + 3, traced.queries
        listings = 0
        for sql, args in traced.queries:
            [plan] = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + sql, *args))
            nodes = list(_nodes(plan["Plan"]))
            scans = [n["Relation Name"] for n in nodes if n["Node Type"] == "Seq Scan"]
            assert not scans, (sql, scans)
            if "ORDER BY at DESC" in sql:
                assert "Sort" not in {n["Node Type"] for n in nodes}, sql
                listings += 1
        assert listings >= 3  # the three record listings were among them


def test_the_usage_command_answers_on_postgres_as_on_sqlite(pg_url: str, tmp_path: Path) -> None:
    """``axio-context usage --db postgresql://...`` gives the SQLite file's answer, group for group."""
    db = tmp_path / "u.db"

    async def fill() -> None:
        pool = await connect(pg_url, min_size=1, max_size=2)
        try:
            pg = await _Postgres(pool).new()
            async with sqlite_connect(db) as conn:
                sqlite = SQLiteUsageRecorder(conn, "p")
                for row in _rows(11, 40):
                    await pg.record(**row)
                    await sqlite.record(**row)
        finally:
            await pool.close()

    asyncio.run(fill())
    for by in GROUPS:
        for since in ((), ("--since", "2026-03-02T07:30")):
            answers = []
            for target in (pg_url, str(db)):
                result = CliRunner().invoke(
                    cli, ["--db", target, "usage", "--by", by, *since, "--json"], catch_exceptions=False
                )
                assert result.exit_code == 0, result.output
                answers.append(json.loads(result.output))
            assert answers[0] == answers[1] and answers[0], (by, since)


async def test_a_refused_total_leaves_the_message_out_and_limits_hold_on_a_new_pool(
    pg_pool: Pool, pg_url: str
) -> None:
    """A session total that cannot take the tokens refuses the whole record (the message too);
    what was recorded is seen, and limited, by another pool (another process's view)."""
    recorder = await _Postgres(pg_pool).new()
    store = PostgresContextStore(pg_pool, "s", "proj")
    usage = PostgresUsageRecorder.of(store)
    for i in range(9):
        await usage.record(
            RequestUsage(input_tokens=100, output_tokens=10, cost=Decimal("0.01")),
            session_id="s",
            run="r",
            message=text("assistant", f"answer {i}"),
        )
    full = await store.get_full_history()
    tokens = await store.get_context_tokens()
    await store.set_context_tokens(MAX_TOKENS, tokens[1])
    with pytest.raises(TokenCountError, match="input_tokens"):
        await usage.record(RequestUsage(input_tokens=1), session_id="s", message=text("assistant", "lost?"))
    assert await store.get_full_history() == full and len(await recorder.records()) == 9
    other = await connect(pg_url, min_size=1, max_size=1)
    try:
        again = PostgresUsageRecorder(other, "proj")
        total = await again.totals(project="proj")
        assert (total.requests, total.total_tokens, total.cost) == (9, 990, Decimal("0.09"))
        assert [r.position for r in await again.records(run="r", limit=3)] == [8, 7, 6]
        guard = UsageGuard(again, UsageLimits(total_tokens_limit=1000), project="proj")
        await guard.check_before_request()
        await again.record(RequestUsage(input_tokens=20), session_id="t")
        with pytest.raises(UsageLimitExceeded, match="total_tokens_limit of 1000"):
            await guard.check_after_response()
    finally:
        await other.close()
