"""Compression dictionaries: what they buy per payload, what training costs, what recompress does.

On the bench transcript (``bench.workload``), in one run:

- per payload size class, the compressed size (as a fraction of the MessagePack) and the
  microseconds to compress and to decompress, with plain zstd and with a dictionary trained the
  way a database trains its first one (``storage.Dictionaries.train``: the first ``TRAIN_AT``
  compressible payloads, fixed fastcover parameters), against zstd's default parameter search,
  and the ratio for 16, 32 and 64 KB dictionaries;
- ``Database.recompress()`` plus a full vacuum on 10,000 messages stored without a dictionary:
  seconds, payload bytes and file bytes before and after.

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
from axio_context_sqlite.store.packing import (
    COMPRESS_MIN,
    DICT_COMPRESS_MIN,
    DICT_SIZE,
    TRAIN_AT,
    ZSTD_LEVEL,
    inflate,
)

from .workload import transcript

CLASSES = ((DICT_COMPRESS_MIN, 256), (256, COMPRESS_MIN), (COMPRESS_MIN, 1 << 30))


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
    samples = [r for r in raws if len(r) >= COMPRESS_MIN][:TRAIN_AT]
    t0 = time.perf_counter()
    trained = zstandard.train_dictionary(DICT_SIZE, samples, dict_id=1, k=256, d=8, f=16, accel=5, steps=1)
    fast_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    searched = zstandard.train_dictionary(DICT_SIZE, samples, dict_id=1)
    search_ms = (time.perf_counter() - t0) * 1e3
    plain_c, plain_d = zstandard.ZstdCompressor(level=ZSTD_LEVEL), zstandard.ZstdDecompressor()

    def with_dict(d: zstandard.ZstdCompressionDict) -> tuple[Any, Any]:
        d.precompute_compress(level=ZSTD_LEVEL)
        c = zstandard.ZstdCompressor(level=ZSTD_LEVEL, dict_data=d, write_checksum=False, write_dict_id=False)
        return c, zstandard.ZstdDecompressor(dict_data=d)

    large = [r for r in raws[len(raws) // 5 :] if len(r) >= COMPRESS_MIN]
    for size in (16 * 1024, 32 * 1024, 64 * 1024):
        d = zstandard.train_dictionary(size, samples, dict_id=1, k=256, d=8, f=16, accel=5, steps=1)
        c = with_dict(d)[0]
        ratio = sum(len(c.compress(x)) for x in large) / sum(map(len, large))
        print(f"{size // 1024} KB dictionary: payloads of {COMPRESS_MIN}+ bytes to {ratio:.3f}")
    dict_c, dict_d = with_dict(trained)
    search_c, _ = with_dict(searched)
    print(f"dictionary training on {TRAIN_AT} payloads: {fast_ms:.1f} ms (as the store does it),")
    print(f"  {search_ms:.1f} ms with zstd's default parameter search")
    print(f"{'payload bytes':>16s} {'count':>6s} {'plain':>7s} {'dict':>7s} {'search':>7s}"
          f" {'c us':>6s} {'c dict':>7s} {'d us':>6s} {'d dict':>7s}")  # fmt: skip
    held_out = raws[len(raws) // 5 :]  # the training payloads come from the first fifth
    for lo, hi in CLASSES:
        xs = [r for r in held_out if lo <= len(r) < hi]
        total = sum(map(len, xs))
        ratios = [sum(len(c.compress(x)) for x in xs) / total for c in (plain_c, dict_c, search_c)]
        packed_plain = [plain_c.compress(x) for x in xs]
        packed_dict = [dict_c.compress(x) for x in xs]
        label = f"{lo}-{hi - 1}" if hi < 1 << 30 else f"{lo}+"
        c_us = [_us_each(c.compress, xs) for c in (plain_c, dict_c)]
        d_us = [_us_each(plain_d.decompress, packed_plain), _us_each(dict_d.decompress, packed_dict)]
        print(
            f"{label:>16s} {len(xs):6d} {ratios[0]:7.3f} {ratios[1]:7.3f} {ratios[2]:7.3f}"
            f" {c_us[0]:6.1f} {c_us[1]:7.1f} {d_us[0]:6.1f} {d_us[1]:7.1f}"
        )


async def recompress_figures(n: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "old.db"
        async with connect(path) as conn:
            # Stored as a database from before dictionaries holds them: training switched off.
            assert conn.dicts is not None
            conn.dicts.train_if_due = lambda: None  # type: ignore[method-assign]
            messages = transcript(n)
            for start in range(0, n, 1000):
                await SQLiteContextStore(conn, f"s{start}").append_many(messages[start : start + 1000])
        async with open_database(path) as db:
            await db.vacuum(full=True)
            before = await db.stats()
            t0 = time.perf_counter()
            report = await db.recompress()
            seconds = time.perf_counter() - t0
            await db.vacuum(full=True)
            after = await db.stats()
    print(
        f"recompress of {n:,} messages stored without a dictionary: {seconds:.2f} s;"
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
