"""Issue 20's context queue and pool benchmark: the persisted versions against the raw limit.

Figures, each a median per operation over one run, and each a ratio to its reference:

- **queue append**: ``SQLiteContextQueue.append`` of one item (one transaction, the window's
  eviction included) against the raw limit: plain ``sqlite3`` (sqlean, WAL,
  ``synchronous=NORMAL`` like our connections) doing one ``INSERT`` and ``COMMIT`` per item.
- **pool add / get** at ``--items`` (10,000) items: ``add`` (one transaction) against the same
  raw insert; ``get`` (served from the process's copy) against the in-memory ``ContextPool``.
- **select** at ``--items`` items: ``pool.select(query, 5)`` by FTS alone and with the hashing
  embedder, against the raw limit of the same FTS5 ``MATCH`` on a plain table.
- **branch**: ``pool.branch()`` and ``queue.branch()`` at 100 and at ``--items`` items; the ratio
  of the two is the cost's growth (1.0 = flat, like a session fork), beside the in-memory
  (pygents-style) branch, which copies every item.

The peer is pygents 0.7 itself (in memory, no persistence), run in its own venv
(``.bench-venv-pygents``, Python 3.12, made on first use; ``--no-peer`` skips it): the same
operations, each figure of ours also given as a ratio to pygents' (``*_vs_pygents``), and
pygents' branch growth from 100 to ``--items`` items beside ours.

Run: ``python -m bench.bench_pools`` (``--quick`` for a smoke run). ``--json FILE`` writes the
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sqlean

from axio_context.embeddings import HashingEmbedder
from axio_context.pools import ContextItem, ContextPool, ContextQueue
from axio_context_sqlite import connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue

ROOT = Path(__file__).resolve().parents[1]
PEER_VENV = ROOT / ".bench-venv-pygents"
PEER_REQUIREMENT = "pygents==0.7.0"
PEER_PYTHON_VERSION = "3.12.1"  # pygents needs Python >= 3.12: pyenv's on this machine

WORDS = [
    "parser",
    "database",
    "release",
    "weather",
    "report",
    "margin",
    "revenue",
    "token",
    "cache",
    "index",
    "query",
    "branch",
]


def _description(i: int) -> str:
    return f"note {i}: {WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} {WORDS[(i * 3) % len(WORDS)]}"


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def _timed(n: int, op: Callable[[int], Awaitable[Any]]) -> float:
    samples = []
    for i in range(n):
        t = time.perf_counter()
        await op(i)
        samples.append(time.perf_counter() - t)
    return _median_us(samples)


def _raw_inserts(path: Path, n: int) -> float:
    """The raw limit: one INSERT + COMMIT per item with plain sqlite3, WAL, synchronous=NORMAL."""
    db = sqlean.connect(str(path), isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(
        "CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT, description TEXT, content BLOB)"
    )
    samples = []
    for i in range(n):
        t = time.perf_counter()
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO t (key, description, content) VALUES (?, ?, ?)",
            (f"k{i}", _description(i), b"x" * 40),
        )
        db.execute("COMMIT")
        samples.append(time.perf_counter() - t)
    db.close()
    return _median_us(samples)


def _raw_match(path: Path, items: int, queries: list[str]) -> float:
    """The raw limit of a keyword select: FTS5 MATCH ... ORDER BY rank LIMIT 5 on a plain table."""
    db = sqlean.connect(str(path), isolation_level=None)
    db.execute(
        "CREATE VIRTUAL TABLE f USING fts5(description, tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.execute("BEGIN")
    db.executemany(
        "INSERT INTO f (rowid, description) VALUES (?, ?)", [(i, _description(i)) for i in range(items)]
    )
    db.execute("COMMIT")
    samples = []
    for q in queries:
        t = time.perf_counter()
        db.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 5", (f'"{q}"',)).fetchall()
        samples.append(time.perf_counter() - t)
    db.close()
    return _median_us(samples)


async def _fill_pool(pool: SQLiteContextPool[Any], items: int) -> None:
    for i in range(items):
        await pool.add(ContextItem({"i": i, "body": "x" * 40}, _description(i), f"k{i}"))


async def run(items: int, ops: int) -> dict[str, Any]:
    out: dict[str, Any] = {"items": items, "ops": ops}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        raw_insert = _raw_inserts(root / "raw.db", ops)
        out["raw_insert_us"] = raw_insert
        async with connect(root / "ours.db") as conn:
            queue = await SQLiteContextQueue.open(conn, "q", limit=100)
            append = await _timed(ops, lambda i: queue.append(ContextItem({"i": i}, _description(i))))
            out["queue_append_us"], out["queue_append_vs_raw"] = append, append / raw_insert

            pool = await SQLiteContextPool.open(conn, "p")
            await _fill_pool(pool, items - ops)
            add = await _timed(ops, lambda i: pool.add(ContextItem({"i": i}, _description(i), f"extra{i}")))
            out["pool_add_us_at_items"], out["pool_add_vs_raw"] = add, add / raw_insert

            memory: ContextPool[Any] = ContextPool()
            for item in pool.items:
                await memory.add(item)
            keys = [f"k{(i * 7919) % (items - ops)}" for i in range(ops)]

            def gets(p: Any) -> float:
                t = time.perf_counter()
                for k in keys:
                    p.get(k)
                return (time.perf_counter() - t) / len(keys) * 1e6

            get_ours, get_mem = gets(pool), gets(memory)
            out["pool_get_us"], out["pool_get_vs_memory"] = get_ours, get_ours / get_mem

            queries = [WORDS[i % len(WORDS)] for i in range(min(ops, 50))]
            raw_sel = _raw_match(root / "rawfts.db", items, queries)
            sel = await _timed(len(queries), lambda i: pool.select(queries[i], 5))
            out["select_fts_us"], out["select_fts_vs_raw_match"] = sel, sel / raw_sel
            out["raw_match_us"] = raw_sel
            emb = await SQLiteContextPool.open(conn, "p", embedder=HashingEmbedder())
            await emb.select("warm up", 5)  # embeds the stored descriptions once
            sel_emb = await _timed(len(queries), lambda i: emb.select(queries[i], 5))
            out["select_hybrid_us"], out["select_hybrid_vs_raw_match"] = sel_emb, sel_emb / raw_sel

            small = await SQLiteContextPool.open(conn, "small")
            await _fill_pool(small, 100)
            smallq = await SQLiteContextQueue.open(conn, "smallq", limit=100)
            await smallq.append(*(ContextItem(i) for i in range(100)))
            bigq = await SQLiteContextQueue.open(conn, "bigq", limit=items)
            await bigq.append(*(ContextItem(i) for i in range(items)))
            reps = max(5, ops // 10)
            for label, owner in (
                ("pool_100", small),
                ("pool_items", pool),
                ("queue_100", smallq),
                ("queue_items", bigq),
            ):
                out[f"branch_{label}_us"] = await _timed(reps, lambda i, o=owner: o.branch())
            out["branch_pool_growth"] = out["branch_pool_items_us"] / out["branch_pool_100_us"]
            out["branch_queue_growth"] = out["branch_queue_items_us"] / out["branch_queue_100_us"]
            mem_small: ContextPool[Any] = ContextPool()
            for item in small.items:
                await mem_small.add(item)

            def mem_branch(p: Any) -> float:
                t = time.perf_counter()
                for _ in range(reps):
                    p.branch()
                return (time.perf_counter() - t) / reps * 1e6

            out["memory_branch_growth"] = mem_branch(memory) / mem_branch(mem_small)
            mq_small, mq_big = ContextQueue(100), ContextQueue(items)
            await mq_small.append(*(ContextItem(i) for i in range(100)))
            await mq_big.append(*(ContextItem(i) for i in range(items)))
            out["memory_queue_branch_growth"] = mem_branch(mq_big) / mem_branch(mq_small)
    return out


def _peer_python() -> Path:
    """The pygents venv's Python, made and filled on first use."""
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        # pyenv's interpreter itself: a bare `python3` may be the active venv's (3.11).
        pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions" / PEER_PYTHON_VERSION
        base = pyenv / "bin" / "python3" if pyenv.exists() else Path("python3")
        env = {**os.environ, "PYENV_VERSION": PEER_PYTHON_VERSION}
        subprocess.run([str(base), "-m", "venv", str(PEER_VENV)], check=True, env=env)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", PEER_REQUIREMENT], check=True)
    return python


def peer(items: int, ops: int) -> dict[str, Any]:
    """pygents' figures for the same operations (a JSON object from bench/worker_pygents.py)."""
    done = subprocess.run(
        [str(_peer_python()), str(ROOT / "bench" / "worker_pygents.py"), str(items), str(ops)],
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout)
    return figures


def compare(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Our figures as ratios to pygents', and pygents' branch growth."""
    out = {f"pygents_{k}": v for k, v in theirs.items()}
    for key in ("queue_append_us", "pool_add_us_at_items", "pool_get_us"):
        out[f"{key.removesuffix('_us').removesuffix('_us_at_items')}_vs_pygents"] = ours[key] / theirs[key]
    out["pygents_branch_pool_growth"] = theirs["branch_pool_items_us"] / theirs["branch_pool_100_us"]
    out["pygents_branch_queue_growth"] = theirs["branch_queue_items_us"] / theirs["branch_queue_100_us"]
    out["branch_pool_items_vs_pygents"] = ours["branch_pool_items_us"] / theirs["branch_pool_items_us"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--ops", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="1,000 items, 100 operations")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--no-peer", action="store_true", help="skip pygents (no venv is made)")
    args = parser.parse_args()
    items, ops = (1_000, 100) if args.quick else (args.items, args.ops)
    figures = asyncio.run(run(items, ops))
    if not args.no_peer:
        figures.update(compare(figures, peer(items, ops)))
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value:,.2f}" if isinstance(value, float) else f"{key:<{width}}  {value:,}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
