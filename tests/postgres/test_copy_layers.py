"""``copy`` carries every layer, not only sessions: usage, memory stores, context pools, saved
state, conversation records and run tags, SQLite to PostgreSQL and back (and file to file),
through the library call and the command line, every item read back alike on both sides."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from axio_context.pools import ContextItem
from axio_context_postgres.pools import PostgresContextPool
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.pools import SQLiteContextPool
from tests.support.copying import (
    BIG,
    EMB,
    cli_output,
    copy,
    dumps,
    fill,
    public_reads_postgres,
    public_reads_sqlite,
    run,
)


def test_copy_carries_every_layer_both_ways(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    before = asyncio.run(fill(src))
    first = asyncio.run(copy(str(src), fresh_pg_url))
    assert first.conflicts == []
    counts = {name: (r.copied, r.already) for name, r in first.layers.items()}
    assert counts == {
        "usage": (6, 0),
        "collections": (1, 0),
        "blobs": (2, 0),
        "graph_entities": (2, 0),
        "graph_relationships": (1, 0),
        "task_lists": (1, 0),
        "memory_blocks": (2, 0),
        "pools": (2, 0),
        "states": (1, 0),
        "conversations": (1, 0),
        "conversation_entries": (1, 0),
        "turns": (0, 0),
        "runs": (3, 0),
    }
    original = asyncio.run(dumps(str(src)))
    assert asyncio.run(dumps(fresh_pg_url)) == original
    mine = asyncio.run(public_reads_sqlite(src))
    assert asyncio.run(public_reads_postgres(fresh_pg_url)) == mine
    assert mine["totals"].input_tokens == 23 and mine["totals"].cost == Decimal("0.0010")
    assert [u.audio_seconds for k, u in mine["by_model"] if k == "m1"] == [0.1 + 0.2 + 0.7]
    assert mine["big"] == (BIG, "application/octet-stream")
    # A second run copies nothing and changes nothing.
    again = asyncio.run(copy(str(src), fresh_pg_url))
    assert again.sessions.copied == 0
    assert {n: (r.copied, r.conflicts) for n, r in again.layers.items()} == {n: (0, []) for n in counts}
    assert asyncio.run(dumps(fresh_pg_url)) == original
    # And back, through the command line, into a new file: the same everywhere.
    back = tmp_path / "back.db"
    out = run("copy", fresh_pg_url, str(back), "--json")
    assert {n: r["copied"] for n, r in out["layers"].items()} == {n: c for n, (c, _) in counts.items()}
    assert asyncio.run(dumps(str(back))) == original
    assert asyncio.run(public_reads_sqlite(back)) == mine
    # Run tags: the messages each run wrote, as every reader of a run shows them.
    for db in (str(src), fresh_pg_url, str(back)):
        shown = {}
        for session, run_id in (("t1:bot", "r2"), ("t1:bot", "r3"), (before, "r1")):
            view = json.loads(cli_output("--db", db, "show", session, "--run", run_id, "--json"))
            shown[session, run_id] = [m["content"][0]["text"] for m in view["messages"]]
        assert shown == {
            ("t1:bot", "r2"): ["kept"],
            ("t1:bot", "r3"): ["after the clear"],
            (before, "r1"): ["cleared a", "cleared b"],
        }, db


async def _append_after_copy(where: str) -> list[Any]:
    """A pool copied in keeps working: a new key sorts after the copied ones, removal works."""
    if where.startswith("postgresql://"):
        from axio_context_postgres import connect

        pool_ = await connect(where, min_size=1, max_size=2)
        try:
            p: Any = await PostgresContextPool.open(pool_, "docs", embedder=EMB, create=False)
            await p.add(ContextItem("later", description="late note", id="k5"))
            await p.remove("k2")
            return [i.id for i in p.items]
        finally:
            await pool_.close()
    async with sqlite_connect(where) as conn:
        s: Any = await SQLiteContextPool.open(conn, "docs", embedder=EMB, create=False)
        await s.add(ContextItem("later", description="late note", id="k5"))
        await s.remove("k2")
        return [i.id for i in s.items]


def test_copied_pools_keep_working(fresh_pg_url: str, tmp_path: Path) -> None:
    src = tmp_path / "src.db"
    asyncio.run(fill(src))
    asyncio.run(copy(str(src), fresh_pg_url))
    back = tmp_path / "back.db"
    asyncio.run(copy(fresh_pg_url, str(back)))
    expected = asyncio.run(_append_after_copy(str(src)))
    assert expected == ["k0", "k5"]
    assert asyncio.run(_append_after_copy(fresh_pg_url)) == expected
    assert asyncio.run(_append_after_copy(str(back))) == expected


def test_file_to_file_copy_carries_every_layer(tmp_path: Path) -> None:
    src, dst = tmp_path / "src.db", tmp_path / "dst.db"
    asyncio.run(fill(src))
    out = run("copy", str(src), str(dst), "--json")
    assert out["layers"]["pools"]["copied"] == 2 and out["layers"]["runs"]["copied"] == 3
    assert asyncio.run(dumps(str(dst))) == asyncio.run(dumps(str(src)))
    assert asyncio.run(public_reads_sqlite(dst)) == asyncio.run(public_reads_sqlite(src))
