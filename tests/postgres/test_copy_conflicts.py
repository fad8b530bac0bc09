"""``copy``'s guarantees for the layers: a conflict is refused and never overwritten while the
rest is copied, an interrupted copy finishes on the next run, ``--dry-run`` writes nothing, and
positions that point at messages follow a cleared run's renumbering."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from axio_context.memory import Entity
from axio_context.pools import ContextItem
from axio_context.testing import text
from axio_context.usage_limits import RequestUsage
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.memory import (
    PostgresGraphStore,
)
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue
from axio_context_postgres.usage import PostgresUsageRecorder
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.cli import cli
from axio_context_sqlite.usage import SQLiteUsageRecorder
from tests.support.copying import (
    AT,
    EMB,
    both,
    copy,
    dumps,
    fill,
    public_reads_postgres,
    public_reads_sqlite,
    run,
)


async def _conflicting(url: str) -> None:
    from axio_context_postgres import connect

    pool_ = await connect(url, min_size=1, max_size=2)
    try:
        p: Any = await PostgresContextPool.open(pool_, "docs", embedder=EMB)
        await p.add(ContextItem("theirs", description="not the same", id="z"))
        await PostgresGraphStore(pool_).add_entities([Entity("e1", "robot")])
    finally:
        await pool_.close()


async def public_reads_postgres_queue(url: str) -> list[Any]:
    from axio_context_postgres import connect

    pool_ = await connect(url, min_size=1, max_size=2)
    try:
        queue: PostgresContextQueue[Any] = await PostgresContextQueue.open(pool_, "recent-b", create=False)
        await queue.append(ContextItem("after"))
        return [i.content for i in queue.items]
    finally:
        await pool_.close()


def test_conflicts_are_refused_and_the_rest_copied(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(fill(src))
    asyncio.run(_conflicting(fresh_pg_url))
    before = asyncio.run(dumps(fresh_pg_url))
    result = CliRunner().invoke(cli, ["copy", str(src), fresh_pg_url], catch_exceptions=False)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert errors == [
        "Error: graph entity 'e1' differs in the destination: not copied",
        "Error: queue or pool family 'docs' differs in the destination: not copied",
    ]
    assert "Traceback" not in result.output
    after = asyncio.run(dumps(fresh_pg_url))
    assert after["pools"]["docs"] == before["pools"]["docs"]  # never overwritten
    assert after["graph_entities"]["e1"] == before["graph_entities"]["e1"]
    assert set(after["pools"]) == {"docs", "recent"}
    # The family copied beside an existing one got its log positions shifted past it: it reads
    # back the same as at the source.
    theirs = asyncio.run(public_reads_postgres_queue(fresh_pg_url))
    assert theirs == ["q4", "only in branch", "after"]  # the limit of 3 pushes q3 out
    assert len(after["usage"]) == 6 and set(after["blobs"]) == {"big", "small"}


def test_interrupted_copy_finishes_and_dry_run_writes_nothing(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(fill(src))

    async def partial() -> None:  # as if a copy stopped after the sessions, a usage row and a blob
        async with both(str(src), fresh_pg_url) as (a, b):
            from axio_context_postgres.copying import copy_sessions

            await copy_sessions(a, b)
            s, d = a.layers(), b.layers()
            await d.load("usage", (await s.dump("usage"))[:1])
            await d.load("blobs", (await s.dump("blobs"))[:1])

    asyncio.run(partial())
    dry = run("copy", str(src), fresh_pg_url, "--dry-run", "--json")
    assert dry["dry_run"] is True
    assert (dry["layers"]["usage"]["copied"], dry["layers"]["usage"]["already"]) == (5, 1)
    assert (dry["layers"]["blobs"]["copied"], dry["layers"]["blobs"]["already"]) == (1, 1)
    assert dry["layers"]["pools"]["copied"] == 2
    assert len(asyncio.run(dumps(fresh_pg_url))["usage"]) == 1  # nothing written
    out = run("copy", str(src), fresh_pg_url, "--json")
    assert (out["layers"]["usage"]["copied"], out["layers"]["usage"]["already"]) == (5, 1)
    assert asyncio.run(dumps(fresh_pg_url)) == asyncio.run(dumps(str(src)))
    # rollups the first batch made, brought up to date by the second: as recorded one by one
    assert asyncio.run(public_reads_postgres(fresh_pg_url)) == asyncio.run(public_reads_sqlite(src))


async def _fill_cleared(path: Path) -> None:
    """Usage recorded with messages of a thread one of whose runs was then cleared."""
    async with sqlite_connect(path) as conn:
        agents = SQLiteHistoryProvider(conn, project="p")
        await agents.append("bot", text("user", "first"), session_id="t1")
        await agents.append("bot", text("assistant", "cleared"), session_id="t1", run_id="r1")
        sid = (await agents.store("bot", "t1")).session_id
        usage = SQLiteUsageRecorder(conn, "p")
        await usage.record(RequestUsage(input_tokens=1), session_id=sid, message=text("user", "after"), at=AT)
        await agents.clear_run("bot", session_id="t1", run_id="r1")


async def _recorded_message(url: str) -> list[tuple[int | None, str]]:
    pool_ = await connect(url, min_size=1, max_size=2)
    try:
        out = []
        for r in await PostgresUsageRecorder(pool_, "p").records():
            history = await PostgresContextStore(pool_, r.session_id, project="p").get_history()
            block = history[r.position].content[0] if r.position is not None else None
            out.append((r.position, getattr(block, "text", "")))
        return out
    finally:
        await pool_.close()


def test_usage_positions_follow_a_cleared_run(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(_fill_cleared(src))
    report = asyncio.run(copy(str(src), fresh_pg_url))
    assert report.layers["usage"].copied == 1
    # "cleared" is not copied (an export leaves a cleared run out): the usage row's message
    # moved from position 2 to 1 with it, and still names the message it was recorded with.
    assert asyncio.run(_recorded_message(fresh_pg_url)) == [(1, "after")]
    assert asyncio.run(copy(str(src), fresh_pg_url)).layers["usage"].already == 1
