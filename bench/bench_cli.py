"""Command-line benchmark: ``list-sessions`` on 10,000 sessions, and ``export --all`` memory.

Builds a database of 10,000 two-message sessions in 20 projects, then times the library call
behind ``list-sessions`` (one page, all, one project) and the real ``axio-context`` process
(``python -m axio_context_sqlite``, interpreter start-up included). Finally exports a ~28 MB
database and reports the export's peak traced memory next to one a quarter of its size.
Run: ``python -m bench.bench_cli``.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.database import open_database

SESSIONS = 10_000


async def build(path: Path) -> None:
    async with connect(path) as conn:
        for i in range(SESSIONS):
            store = SQLiteContextStore(conn, f"session-{i:05d}", project=f"/proj/{i % 20}")
            await store.append_many([text("user", f"question {i} " * 5), text("assistant", "answer " * 20)])
            await store.add_context_tokens(100, 20)


async def library(path: Path) -> None:
    async with open_database(path) as db:
        for label, kwargs in (
            ("one page (-n 50)", {"limit": 50}),
            ("all 10,000 (-n 0)", {}),
            ("one project (500)", {"project": "/proj/3"}),
        ):
            times = []
            for _ in range(7):
                start = time.perf_counter()
                await db.list_sessions(**kwargs)  # type: ignore[arg-type]
                times.append(time.perf_counter() - start)
            print(f"  Database.list_sessions {label:20} {statistics.median(times) * 1000:8.1f} ms")


def process(path: Path) -> None:
    for args in (
        ["--version"],
        ["list-sessions"],
        ["list-sessions", "-n", "0"],
        ["list-sessions", "-n", "0", "--json"],
    ):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "axio_context_sqlite", "--db", str(path), *args],
                check=True,
                capture_output=True,
            )
            times.append(time.perf_counter() - start)
        print(f"  axio-context {' '.join(args):28} {statistics.median(times) * 1000:8.0f} ms (process)")


async def export_memory(tmp: Path) -> None:
    path = tmp / "big.db"
    async with connect(path) as conn:
        for s in range(16):
            store = SQLiteContextStore(conn, f"s{s}", project="/p")
            for _ in range(2):
                await store.append_many([text("user", secrets.token_hex(1400)) for _ in range(300)])
    for ids in (["s0", "s1", "s2", "s3"], None):
        out = tmp / "out.json"
        async with open_database(path) as db:
            with out.open("wb") as f:
                tracemalloc.start()
                await db.export(f.write, session_ids=ids)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
        label = "all 16 sessions" if ids is None else "4 sessions"
        size = out.stat().st_size / 1e6
        print(f"  export {label:16} {size:6.1f} MB written, peak traced memory {peak / 1e6:.1f} MB")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "10k.db"
        start = time.perf_counter()
        asyncio.run(build(path))
        print(f"built {SESSIONS:,} sessions in {time.perf_counter() - start:.1f} s")
        asyncio.run(library(path))
        process(path)
        asyncio.run(export_memory(Path(tmp)))


if __name__ == "__main__":
    main()
