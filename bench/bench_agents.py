"""Issue 19's agent-runtime benchmark (SQLite history provider), figures as ratios of one run.

- **page**: ``get_messages(limit=50, offset=...)`` at ``--rounds`` random offsets of a
  ``--messages`` (default 100,000) message agent session, against reading the whole session
  through the provider, and against the raw limit: the same 50 rows and the sealed chunks that
  hold their payloads, read with plain ``sqlite3`` (bytes only: no decompression, no decoding,
  no thread hop). A page must cost a constant, not a share of the session.
- **append**: single-message ``append`` with a run tag against the same without one, and both
  against ``SQLiteContextStore.append`` of a plain session (``--appends`` each, default 3,000,
  alternated in rounds of 100 so drift hits all alike); the issue's bound for the tag is ~10%.

Run: ``python -m bench.bench_agents`` (``--quick`` for a smoke run); ``--json FILE`` writes the
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.agents import SQLiteHistoryProvider
from axio_context_sqlite.store.keys import key
from axio_context_sqlite.store.packing import CHUNK


def _message(i: int) -> Message:
    role = "user" if i % 2 == 0 else "assistant"
    words = f"message {i} about the deployment of service {i % 97} and its rollback plan"
    return Message(role=role, content=[TextBlock(text=words)])


def _median_us(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e6, 1)


async def _fill(provider: SQLiteHistoryProvider, n: int) -> None:
    for start in range(0, n, 1_000):
        batch = [_message(i) for i in range(start, min(start + 1_000, n))]
        await provider.append_many("bench", batch, session_id="big", run_id=f"run-{start // 1_000}")


async def _page(db: Path, n: int, rounds: int) -> dict[str, Any]:
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="bench")
        await _fill(provider, n)
        rng = random.Random(19)
        offsets = [rng.randrange(0, n - 50) for _ in range(rounds)]
        # Warm up: the fill leaves the connection's WAL checkpoint and page cache to settle.
        for offset in offsets[:5]:
            await provider.get_messages("bench", session_id="big", limit=50, offset=offset)
        pages: list[float] = []
        for offset in offsets:
            t = time.perf_counter()
            got = await provider.get_messages("bench", session_id="big", limit=50, offset=offset)
            pages.append(time.perf_counter() - t)
            assert len(got) == 50
        t = time.perf_counter()
        whole = await provider.get_messages("bench", session_id="big")
        full = time.perf_counter() - t
        assert len(whole) == n
        sid = (await conn.execute_fetchall("SELECT sid FROM agent_sessions"))[0][0]
    raw = sqlite3.connect(db)
    raws: list[float] = []
    for offset in offsets:
        t = time.perf_counter()
        lo, hi = key(sid, offset), key(sid, offset + 50)
        rows = raw.execute(
            "SELECT role, flags, payload FROM messages WHERE id >= ? AND id < ? ORDER BY id", (lo, hi)
        ).fetchall()
        chunks = raw.execute(
            "SELECT payload FROM chunks WHERE id >= ? AND id < ?", (lo & ~(CHUNK - 1), hi)
        ).fetchall()
        raws.append(time.perf_counter() - t)
        assert len(rows) == 50 and chunks
    raw.close()
    page = statistics.median(pages)
    return {
        "messages": n,
        "page_of_50_us": _median_us(pages),
        "raw_sqlite3_50_rows_us": _median_us(raws),
        "whole_session_ms": round(full * 1000, 1),
        "page_vs_raw": round(page / statistics.median(raws), 2),
        "page_vs_whole": round(page / full, 5),
    }


async def _append(db: Path, n: int) -> dict[str, Any]:
    async with connect(db) as conn:
        provider = SQLiteHistoryProvider(conn, project="bench")
        await provider.append("plain", _message(0), session_id="s")
        await provider.append("tagged", _message(0), session_id="s", run_id="r")
        store = SQLiteContextStore(conn, "store", "bench")
        await store.append(_message(0))
        plain: list[float] = []
        tagged: list[float] = []
        direct: list[float] = []
        for r in range(n // 100):
            order = [("plain", "", plain), ("tagged", "r", tagged), (None, "", direct)]
            if r % 2:
                order.reverse()
            for agent, run_id, samples in order:
                for i in range(100):
                    m = _message(i)
                    t = time.perf_counter()
                    if agent is None:
                        await store.append(m)
                    else:
                        await provider.append(agent, m, session_id="s", run_id=run_id)
                    samples.append(time.perf_counter() - t)
    return {
        "appends_each": n,
        "store_append_us": _median_us(direct),
        "untagged_us": _median_us(plain),
        "tagged_us": _median_us(tagged),
        "tagged_vs_untagged": round(statistics.median(tagged) / statistics.median(plain), 3),
        "untagged_vs_store": round(statistics.median(plain) / statistics.median(direct), 3),
    }


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        page = await _page(Path(tmp) / "page.db", args.messages, args.rounds)
        append = await _append(Path(tmp) / "append.db", args.appends)
    return {"page": page, "append": append}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--appends", type=int, default=3_000)
    parser.add_argument("--quick", action="store_true", help="10,000 messages, 600 appends")
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    if ns.quick:
        ns.messages, ns.appends = 10_000, 600
    figures = asyncio.run(main(ns))
    for part, values in figures.items():
        print(part)
        for name, value in values.items():
            print(f"  {name:28} {value}")
    if ns.json is not None:
        ns.json.write_text(json.dumps(figures, indent=2))
