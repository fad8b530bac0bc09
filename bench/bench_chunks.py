"""Sealed chunks: what they buy a long session's load and its size, and what sealing costs.

On the bench transcript (``bench.workload``, 10,000 messages appended by ``append_many`` in
batches of 1,000, as ``bench.run`` prefills its load session), in one run:

- one frame per message (sealing switched off), and chunks of 16, 32, 64 and 128
  messages: the stored payload bytes and the file, and ``get_history`` on a new connection
  (the fastest and the median of several loads);
- ``chunks.seal_all`` over the one-frame-per-message database: milliseconds per 1,000 messages
  sealed (it decompresses every payload first; a fold's sealing reuses the payloads the fold
  decompressed for the keyword index).

Run: ``python -m bench.bench_chunks`` (pin it with ``taskset -c 0`` for the one-core case).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from axio_context import Message
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from axio_context_sqlite.store import chunks
from axio_context_sqlite.store.calls import run

from .workload import transcript

N = 10_000
BATCH = 1_000
LOADS = 7


@contextmanager
def _chunk_size(size: int | None) -> Iterator[None]:
    """Seal in chunks of ``size`` messages while inside; None: never seal."""
    saved = chunks.CHUNK, chunks.SEAL_TAIL
    if size is None:
        chunks.SEAL_TAIL = 1 << 40
    else:
        chunks.CHUNK = size
    try:
        yield
    finally:
        chunks.CHUNK, chunks.SEAL_TAIL = saved


async def _fill(path: Path, messages: list[Message]) -> None:
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "long")
        for start in range(0, len(messages), BATCH):
            await store.append_many(messages[start : start + BATCH])


async def _loads(path: Path, messages: list[Message]) -> list[float]:
    """Seconds per ``get_history``, each on a new connection."""
    out = []
    for _ in range(LOADS):
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "long")
            t0 = time.perf_counter()
            history = await store.get_history()
            out.append(time.perf_counter() - t0)
            assert history == messages
    return out


async def _payload_bytes(path: Path) -> tuple[int, int]:
    """The stored payload bytes, and the file's once the WAL is copied into it."""
    async with open_database(path) as db:
        s = await db.stats()
        await db.checkpoint()
    return s.payload_bytes, s.page_size * s.page_count


async def main() -> None:
    messages = transcript(N)
    print(f"{N:,} messages of the bench transcript, appended {BATCH:,} at a time")
    print(f"{'storage':22s} {'payloads':>10s} {'file':>10s} {'load best':>10s} {'median':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (None, 16, 32, 64, 128):
            path = Path(tmp) / f"chunks-{size}.db"
            with _chunk_size(size):
                await _fill(path, messages)
                payloads, file = await _payload_bytes(path)
                loads = await _loads(path, messages)
            label = "one frame per message" if size is None else f"chunks of {size}"
            print(
                f"{label:22s} {payloads / 1e6:8.2f} MB {file / 1e6:8.2f} MB"
                f" {min(loads) * 1e3:7.1f} ms {statistics.median(loads) * 1e3:5.1f} ms"
            )
        path = Path(tmp) / "chunks-None.db"
        async with connect(path) as conn:
            t0 = time.perf_counter()
            written = await run(conn, lambda c: chunks.seal_all(c))
            seconds = time.perf_counter() - t0
        sealed = written * chunks.CHUNK
        print(
            f"seal_all: {written} chunks ({sealed:,} messages) in {seconds * 1e3:.1f} ms,"
            f" {seconds * 1e3 / sealed * 1000:.1f} ms per 1,000 messages"
        )


if __name__ == "__main__":
    asyncio.run(main())
