"""Payload compression: what plain zstd does per payload, and what ``vacuum --recompress`` does
to a database an earlier build compressed with trained dictionaries.

On the bench transcript (``bench.workload``), in one run:

- per payload size class, the compressed size (as a fraction of the MessagePack) and the
  microseconds to compress and to decompress, at the store's level (``ZSTD_LEVEL``, from
  ``COMPRESS_MIN`` bytes) and at level 19, the strongest (rejected: its append cost, see
  ``bench/MECHANISMS.md``; the trained dictionaries were removed, their figures are there too);
- ``Database.recompress()`` plus a full vacuum on 10,000 messages whose payloads were compressed
  with a trained dictionary as earlier builds did (``tests/support/legacy.py``): seconds, payload
  bytes and file bytes before and after.

Run: ``python -m bench.bench_compression`` (pin it with ``taskset -c 0`` for the one-core case).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import zstandard

from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.store.message_rows import encode_message
from axio_context_sqlite.store.packing import COMPRESS_MIN, ZSTD_LEVEL, inflate
from tests.support.legacy import use_dictionaries

from .workload import transcript

CLASSES = ((COMPRESS_MIN, 2048), (2048, 8192), (8192, 1 << 30))


def _us_each(fn: Callable[[bytes], Any], items: Sequence[bytes], rounds: int = 3) -> float:
    """Fastest of ``rounds`` passes, in microseconds per item."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for x in items:
            fn(x)
        best = min(best, time.perf_counter() - t0)
    return best / len(items) * 1e6


def payload_figures(n: int = 10_000) -> None:
    raws = [inflate(e.flags, e.payload) for e in map(encode_message, transcript(n, seed=11))]
    store_c, strong_c = zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdCompressor(level=19)
    d = zstandard.ZstdDecompressor()
    below = [r for r in raws if len(r) < COMPRESS_MIN]
    print(f"{len(below):,} of {len(raws):,} payloads are under {COMPRESS_MIN} bytes: stored as they are")
    print(f"{'payload bytes':>16s} {'count':>6s} {'lvl ' + str(ZSTD_LEVEL):>7s} {'lvl 19':>7s}"
          f" {'c us':>6s} {'c 19':>7s} {'d us':>6s} {'d 19':>7s}")  # fmt: skip
    for lo, hi in CLASSES:
        xs = [r for r in raws if lo <= len(r) < hi]
        if not xs:
            continue
        total = sum(map(len, xs))
        packed = [[c.compress(x) for x in xs] for c in (store_c, strong_c)]
        ratios = [sum(map(len, p)) / total for p in packed]
        label = f"{lo}-{hi - 1}" if hi < 1 << 30 else f"{lo}+"
        c_us = [_us_each(c.compress, xs) for c in (store_c, strong_c)]
        d_us = [_us_each(d.decompress, p) for p in packed]
        print(
            f"{label:>16s} {len(xs):6d} {ratios[0]:7.3f} {ratios[1]:7.3f}"
            f" {c_us[0]:6.1f} {c_us[1]:7.1f} {d_us[0]:6.1f} {d_us[1]:7.1f}"
        )


async def recompress_figures(n: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "old.db"
        async with connect(path) as conn:
            messages = transcript(n)
            for start in range(0, n, 1000):
                await SQLiteContextStore(conn, f"s{start}").append_many(messages[start : start + 1000])
        named = use_dictionaries(path)  # as an earlier build stored them
        async with open_database(path) as db:
            await db.vacuum(full=True)
            before = await db.stats()
            t0 = time.perf_counter()
            report = await db.recompress()
            seconds = time.perf_counter() - t0
            await db.vacuum(full=True)
            after = await db.stats()
    print(
        f"recompress of {n:,} messages ({named:,} payloads with a dictionary): {seconds:.2f} s;"
        f" payloads {before.payload_bytes / 1e6:.2f} -> {after.payload_bytes / 1e6:.2f} MB"
        f" ({report.rows:,} rewritten); file after a full vacuum {before.file_bytes / 1e6:.2f}"
        f" -> {after.file_bytes / 1e6:.2f} MB"
    )


def main() -> None:
    payload_figures()
    for _ in range(3):  # three runs: the machine is shared
        asyncio.run(recompress_figures())


if __name__ == "__main__":
    main()
