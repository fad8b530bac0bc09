"""Background WAL checkpoints: what an append costs with them and with SQLite's in-commit ones.

Alternating trials, each 2,000 appends of the bench transcript to a new file on its own
connection: ``background`` is the connection as ``connect`` returns it (a checkpoint thread, and
the connection's own checkpoint on its worker thread every ~750 rows), ``in-commit`` the same
with its checkpoint thread switched off and SQLite's default threshold back (SQLite then
checkpoints inside the commit that crosses 1,000 pages, fsyncs included). Prints per-append mean,
median, p99, the largest the WAL file grew and the slowest appends of each mode; the stalls at
~250-300-append intervals are the checkpoints.

Run: ``python -m bench.bench_checkpoints [--trials N]`` (pin it with ``taskset -c 0`` to see the
one-core case the store bench reports).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from axio_context import Message
from axio_context_sqlite import SQLiteContextStore, connect

from .workload import transcript

APPENDS = 2000


async def trial(path: Path, messages: list[Message], background: bool) -> tuple[list[float], int]:
    """Seconds per append, in order, and the largest the WAL file grew (pages)."""
    wal = path.with_name(path.name + "-wal")
    async with connect(path) as conn:
        if not background:
            conn.checkpointer = None
            await conn.execute("PRAGMA wal_autocheckpoint = 1000")  # SQLite's default
        store = SQLiteContextStore(conn, "s", project="bench")
        times = []
        for m in messages:
            t0 = time.perf_counter()
            await store.append(m)
            times.append(time.perf_counter() - t0)
        # The file keeps its size when the WAL starts over, so its final size is its largest.
        wal_pages = wal.stat().st_size // 4096
    return times, wal_pages


async def main(trials: int) -> None:
    messages = transcript(APPENDS)
    results: dict[str, list[tuple[list[float], int]]] = {"in-commit": [], "background": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            for mode in results:
                results[mode].append(await trial(Path(tmp) / f"{mode}{i}.db", messages, mode == "background"))
    print(f"{APPENDS:,} appends per trial, {trials} trials per mode, alternating (us per append)")
    print(f"{'mode':12s} {'mean':>8s} {'median':>8s} {'p99':>8s} {'WAL pages':>10s}  slowest five (ms)")
    for mode, runs in results.items():
        for times, wal_pages in runs:
            us = sorted(t * 1e6 for t in times)
            slowest = " ".join(f"{t / 1000:.1f}" for t in us[-5:][::-1])
            print(
                f"{mode:12s} {statistics.fmean(us):8.1f} {us[len(us) // 2]:8.1f} "
                f"{us[int(0.99 * len(us))]:8.1f} {wal_pages:10d}  {slowest}"
            )
    for mode, runs in results.items():
        means = [statistics.fmean(t) * 1e6 for t, _ in runs]
        print(f"{mode}: mean of means {statistics.fmean(means):.1f} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    asyncio.run(main(parser.parse_args().trials))
