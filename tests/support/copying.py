"""Helpers of the copy tests (tests/postgres/test_copy_*.py): a SQLite file with every layer
filled through the public APIs, each layer's items as the copy compares them, and what the
public APIs read back on either backend."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from axio_context.backends import open_database
from axio_context.copying import CopyAllReport, copy_all, layers
from axio_context.copying.layers import LAYERS
from axio_context.embeddings import HashingEmbedder
from axio_context.memory import Document, Entity, Relationship
from axio_context.memory_blocks import MemoryBlock
from axio_context.pools import ContextItem
from axio_context.state import ResumableState
from axio_context.testing import text
from axio_context.usage_limits import RequestUsage, RunUsage
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.memory import (
    PostgresBlobStore,
    PostgresGraphStore,
    PostgresTaskStore,
    PostgresVectorStore,
)
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue
from axio_context_postgres.pools import list_pools as pg_list_pools
from axio_context_postgres.usage import PostgresUsageRecorder
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.cli import cli
from axio_context_sqlite.memory import (
    SQLiteBlobStore,
    SQLiteBlockStore,
    SQLiteGraphStore,
    SQLiteTaskStore,
    SQLiteVectorStore,
)
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue, list_pools
from axio_context_sqlite.state import load_state, save_state
from axio_context_sqlite.store.conversation_log import SQLiteConversationLog
from axio_context_sqlite.usage import SQLiteUsageRecorder

EMB = HashingEmbedder(16)
HIST = [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "look around"}]}]
BIG = bytes(range(256)) * 9000  # > 2 MiB: stored in pieces on both backends
AT = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def run(*args: str, code: int = 0) -> dict[str, Any]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def cli_output(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


async def fill(path: Path) -> str:
    """Every layer on SQLite, through the public APIs; returns the id of a fork made before a
    run was cleared (it still shows that run)."""
    async with sqlite_connect(path) as conn:
        main = SQLiteContextStore(conn, "main", project="p")
        await main.append(text("user", "hello"))
        usage = SQLiteUsageRecorder(conn, "p")
        await usage.record(RequestUsage(input_tokens=10, output_tokens=4), session_id="main", run="r1", at=AT)
        await usage.record(RequestUsage(input_tokens=10, output_tokens=4), session_id="main", run="r1", at=AT)
        for seconds in (0.1, 0.2, 0.7):  # float sums in one order: the same bits on both sides
            spoken = RunUsage(requests=1, input_tokens=1, audio_seconds=seconds, extra={"beeps": seconds})
            await usage.record(spoken, session_id="voice", model="m1", at=AT)
        await usage.record(
            RunUsage(
                requests=1, input_tokens=3, output_tokens=2, cost=Decimal("0.0010"), details={"reasoning": 7}
            ),
            session_id="main",
            agent="bot",
            model="m1",
            message=text("assistant", "recorded reply"),
            at=AT,
        )
        vectors = SQLiteVectorStore(conn, embedder=EMB)
        await vectors.add(
            [Document("d1", "alpha notes", metadata={"b": 1, "a": [1, 2.5]}), Document("d2", "beta notes")],
            collection="notes",
        )
        blobs = SQLiteBlobStore(conn)
        await blobs.upload("small", b"tiny bytes", "text/plain")
        await blobs.upload("big", BIG, "application/octet-stream")
        graph = SQLiteGraphStore(conn)
        await graph.add_entities([Entity("e1", "person", {"name": "Ada"}), Entity("e2", "place")])
        await graph.add_relationships([Relationship("r1", "e1", "e2", "visits", {"w": 1})])
        await SQLiteTaskStore(conn).create_task_list("conv1", ["plan", "do"], agent_id="bot")
        blocks = SQLiteBlockStore(conn)
        await blocks.create(MemoryBlock("human", "Ada", description="the user"), agent_id="bot", run_id="r1")
        await blocks.append("human", "likes tea", agent_id="bot")
        await blocks.undo("human", agent_id="bot")
        await blocks.create(MemoryBlock("team", "ship on friday", limit=50, read_only=True))
        await blocks.attach("team", "bot")
        queue: SQLiteContextQueue[Any] = await SQLiteContextQueue.open(conn, "recent", 3)
        await queue.append(*(ContextItem(f"q{i}") for i in range(5)))
        qb = await queue.branch(name="recent-b")
        await qb.append(ContextItem("only in branch"))
        pool: SQLiteContextPool[Any] = await SQLiteContextPool.open(conn, "docs", embedder=EMB)
        for i, desc in enumerate(["lighthouse keeper", "ship manifest", "tide table"]):
            await pool.add(ContextItem({"n": i}, description=desc, id=f"k{i}"))
        await pool.remove("k1")
        branch = await pool.branch(name="docs-b")
        await branch.add(ContextItem("new", description="harbour map", id="k9"))
        await pool.add(
            ContextItem({"n": 10}, description="lighthouse lamp", id="k0")
        )  # replaced, keeps order
        await queue.clear()
        await save_state(main, ResumableState(subagent_history={"explorer": HIST}, user_prompts=["go"]))
        agents = SQLiteHistoryProvider(conn, project="p")
        await agents.append("bot", text("user", "hello bot"), session_id="t1")
        await agents.append_many(
            "bot", [text("assistant", "cleared a"), text("user", "cleared b")], session_id="t1", run_id="r1"
        )
        await agents.append("bot", text("assistant", "kept"), session_id="t1", run_id="r2")
        before = await (await agents.store("bot", "t1")).fork()  # still sees run r1
        await agents.clear_run("bot", session_id="t1", run_id="r1")
        await agents.append("bot", text("user", "after the clear"), session_id="t1", run_id="r3")
        log = SQLiteConversationLog(conn, adapter="pydantic-ai", project="p")
        await log.write(
            "c1",
            record=b'{"id": "c1"}',
            revision="1",
            updated_us=1_700_000_000_000_000,
            scope=None,
            head_id="en1",
            expected_revision=None,
            entries=[("en1", None, text("user", "a question"))],
        )
        return before.session_id


@asynccontextmanager
async def both(a: str, b: str) -> AsyncIterator[tuple[Any, Any]]:
    def opener(where: str) -> Any:
        return open_database(where)

    async with opener(a) as x, opener(b) as y:
        yield x, y


async def dumps(where: str) -> dict[str, Any]:
    """Every layer's items as the copy compares them (positions as the copied sessions number
    them, pools as families with positions relative to their oldest entry)."""
    opened = open_database(where)
    async with opened as db:
        side = db.layers()
        hidden = await side.hidden()
        out: dict[str, Any] = {"usage": sorted(await layers.dump(side, "usage", hidden), key=repr)}
        for layer in LAYERS:
            items = await layers.dump(side, layer.name, hidden)
            if layer.name == "pools":
                items = layers.families(items)
            out[layer.name] = {layer.key(i): layer.content(i) for i in items}
        return out


async def copy(a: str, b: str, **kw: Any) -> CopyAllReport:
    async with both(a, b) as (x, y):
        return await copy_all(x, y, **kw)


async def public_reads_sqlite(path: Path) -> dict[str, Any]:
    async with sqlite_connect(path) as conn:
        usage = SQLiteUsageRecorder(conn, "p")
        pool: SQLiteContextPool[Any] = await SQLiteContextPool.open(conn, "docs", embedder=EMB, create=False)
        branch: SQLiteContextPool[Any] = await SQLiteContextPool.open(
            conn, "docs-b", embedder=EMB, create=False
        )
        queue: SQLiteContextQueue[Any] = await SQLiteContextQueue.open(conn, "recent-b", create=False)
        main = SQLiteContextStore(conn, "main", project="p")
        return {
            "totals": await usage.totals(session_id="main"),
            "by_model": [(t.key, t.usage) for t in await usage.aggregate("model")],
            "records": [(r.at, r.position, r.usage, r.run) for r in await usage.records(session_id="main")],
            "docs": await SQLiteVectorStore(conn, embedder=EMB).get(["d1", "d2"], collection="notes"),
            "big": await SQLiteBlobStore(conn).download("big"),
            "neighbors": await SQLiteGraphStore(conn).get_neighbors("e1"),
            "tasks": await SQLiteTaskStore(conn).get_by_conversation("conv1"),
            "pool": (pool.items, branch.items),
            "pools": await list_pools(conn),
            "select": [i.id for i in await pool.select("lighthouse")],
            "queue": queue.items,
            "state": await load_state(main, ResumableState),
            "record": await SQLiteConversationLog(conn, adapter="pydantic-ai").read_record("c1"),
            "line": await SQLiteConversationLog(conn, adapter="pydantic-ai").read_line("en1"),
        }


async def public_reads_postgres(url: str) -> dict[str, Any]:
    from axio_context_postgres.conversation_log import PostgresConversationLog as PgLog
    from axio_context_postgres.state import load_state as pg_load_state

    pool_ = await connect(url, min_size=1, max_size=2)
    try:
        usage = PostgresUsageRecorder(pool_, "p")
        pool: PostgresContextPool[Any] = await PostgresContextPool.open(
            pool_, "docs", embedder=EMB, create=False
        )
        branch: PostgresContextPool[Any] = await PostgresContextPool.open(
            pool_, "docs-b", embedder=EMB, create=False
        )
        queue: PostgresContextQueue[Any] = await PostgresContextQueue.open(pool_, "recent-b", create=False)
        main = PostgresContextStore(pool_, "main", project="p")
        return {
            "totals": await usage.totals(session_id="main"),
            "by_model": [(t.key, t.usage) for t in await usage.aggregate("model")],
            "records": [(r.at, r.position, r.usage, r.run) for r in await usage.records(session_id="main")],
            "docs": await PostgresVectorStore(pool_, embedder=EMB).get(["d1", "d2"], collection="notes"),
            "big": await PostgresBlobStore(pool_).download("big"),
            "neighbors": await PostgresGraphStore(pool_).get_neighbors("e1"),
            "tasks": await PostgresTaskStore(pool_).get_by_conversation("conv1"),
            "pool": (pool.items, branch.items),
            "pools": await pg_list_pools(pool_),
            "select": [i.id for i in await pool.select("lighthouse")],
            "queue": queue.items,
            "state": await pg_load_state(main, ResumableState),
            "record": await PgLog(pool_, adapter="pydantic-ai").read_record("c1"),
            "line": await PgLog(pool_, adapter="pydantic-ai").read_line("en1"),
        }
    finally:
        await pool_.close()
