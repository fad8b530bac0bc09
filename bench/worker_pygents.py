"""The peer's side of bench_pools: pygents' in-memory ContextQueue and ContextPool, timed the
same way, printed as one JSON object. Runs in the pygents venv (Python >= 3.12), not ours."""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Any

from pygents.context import ContextItem, ContextPool, ContextQueue  # type: ignore[import-not-found]

WORDS = ["parser", "database", "release", "weather", "report", "margin", "revenue", "token"]


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def run(items: int, ops: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    queue = ContextQueue(limit=100)
    samples = []
    for i in range(ops):
        t = time.perf_counter()
        await queue.append(ContextItem({"i": i}, f"note {i}"))
        samples.append(time.perf_counter() - t)
    out["queue_append_us"] = _median_us(samples)
    pool = ContextPool()
    for i in range(items - ops):
        await pool.add(ContextItem({"i": i}, f"note {i} {WORDS[i % len(WORDS)]}", f"k{i}"))
    samples = []
    for i in range(ops):
        t = time.perf_counter()
        await pool.add(ContextItem({"i": i}, f"extra {i}", f"extra{i}"))
        samples.append(time.perf_counter() - t)
    out["pool_add_us_at_items"] = _median_us(samples)
    keys = [f"k{(i * 7919) % (items - ops)}" for i in range(ops)]
    t = time.perf_counter()
    for k in keys:
        pool.get(k)
    out["pool_get_us"] = (time.perf_counter() - t) / len(keys) * 1e6
    small = ContextPool()
    for i in range(100):
        await small.add(ContextItem(i, f"d{i}", f"k{i}"))
    big_q, small_q = ContextQueue(limit=items), ContextQueue(limit=100)
    await big_q.append(*(ContextItem(i) for i in range(items)))
    await small_q.append(*(ContextItem(i) for i in range(100)))
    reps = max(5, ops // 10)
    for label, owner in (
        ("pool_100", small),
        ("pool_items", pool),
        ("queue_100", small_q),
        ("queue_items", big_q),
    ):
        t = time.perf_counter()
        for _ in range(reps):
            owner.branch()
        out[f"branch_{label}_us"] = (time.perf_counter() - t) / reps * 1e6
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(int(sys.argv[1]), int(sys.argv[2])))))
