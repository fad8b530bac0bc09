"""What the terminal browser reads, against plain sqlite3 on the same file, in one run.

A database of 10,000 sessions (every tenth one forked once) and one session of 20,000 messages:

- the first and a deep page of ``Database.session_tree`` (100 heads with their forks) against
  plain sqlite3 reading the same 100 rows of the sessions table, and against listing every
  session (what a browser without paging would read);
- a text filter page that matches nothing (the worst case: every row is looked at);
- ``Database.data_version`` (the live check, one thread hop) against sqlite3's own PRAGMA;
- opening the long session: ``Database.transcript`` (the last 200 messages) against reading all
  of it (``Database.show(full=True)``), and against plain sqlite3 reading 200 payload rows.

Medians of ``--trials`` runs; the ratios are the figures (times depend on the machine).
Run: ``python -m bench.bench_tui [--trials N] [--sessions N] [--messages N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect, open_database


async def build(path: Path, sessions: int, messages: int) -> None:
    async with connect(path) as conn:
        for i in range(sessions):
            s = SQLiteContextStore(conn, f"s{i:06}", project=f"project-{i % 20}")
            await s.append(Message("user", [TextBlock(f"question {i} about topic {i % 97}")]))
            if i % 10 == 0:
                await (await s.fork()).append(Message("user", [TextBlock(f"fork of {i}")]))
        long = SQLiteContextStore(conn, "long", project="long")
        batch = [
            Message("user" if j % 2 else "assistant", [TextBlock(f"message {j} " * 8)]) for j in range(500)
        ]
        for _ in range(messages // len(batch)):
            await long.append_many(batch)


async def timed_async(fn: Callable[[], Awaitable[Any]], trials: int) -> float:
    runs = []
    for _ in range(trials):
        start = time.perf_counter()
        await fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def timed_sync(fn: Callable[[], Any], trials: int) -> float:
    runs = []
    for _ in range(trials):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


async def main(trials: int, sessions: int, messages: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        started = time.perf_counter()
        await build(path, sessions, messages)
        print(
            f"built {sessions:,} sessions (+{sessions // 10:,} forks) and one of {messages:,} messages"
            f" in {time.perf_counter() - started:.1f} s"
        )
        raw = sqlite3.connect(path)
        async with open_database(path) as db:
            first = await db.session_tree(limit=100)
            cursor = first.next_cursor
            for _ in range(sessions // 200):  # a page half way down
                cursor = (await db.session_tree(limit=100, cursor=cursor)).next_cursor
            deep_cursor = cursor
            rows = [
                (
                    "session_tree, first page (100 heads)",
                    await timed_async(lambda: db.session_tree(limit=100), trials),
                ),
                (
                    "session_tree, a page half way down",
                    await timed_async(lambda: db.session_tree(limit=100, cursor=deep_cursor), trials),
                ),
                (
                    "sqlite3: 100 session rows",
                    timed_sync(
                        lambda: raw.execute(
                            "SELECT id, next_position, preview, created_iso, project, parent_id, title"
                            " FROM sessions ORDER BY created_at DESC, sid DESC LIMIT 100"
                        ).fetchall(),
                        trials,
                    ),
                ),
                ("list every session (no paging)", await timed_async(lambda: db.list_sessions(), trials)),
                (
                    "session_tree, text matching nothing",
                    await timed_async(lambda: db.session_tree(text="no-such-words", limit=100), trials),
                ),
                ("data_version (Database)", await timed_async(db.data_version, trials * 20)),
                (
                    "sqlite3: PRAGMA data_version",
                    timed_sync(lambda: raw.execute("PRAGMA data_version").fetchone(), trials * 20),
                ),
                (
                    "transcript, last 200 of the long session",
                    await timed_async(lambda: db.transcript("long", limit=200), trials),
                ),
                (
                    "show(full=True): all of the long session",
                    await timed_async(lambda: db.show("long", full=True), max(1, trials // 3)),
                ),
                (
                    "sqlite3: 200 payload rows",
                    timed_sync(
                        lambda: raw.execute(
                            "SELECT payload FROM messages ORDER BY rowid DESC LIMIT 200"
                        ).fetchall(),
                        trials,
                    ),
                ),
            ]
        raw.close()
    t = dict(rows)
    for name, seconds in rows:
        print(f"{name:45} {ms(seconds)}")
    print()
    page = t["session_tree, first page (100 heads)"]
    print(f"first page / sqlite3 100 rows:          {page / t['sqlite3: 100 session rows']:6.1f}x")
    print(f"deep page / first page (flat paging):   {t['session_tree, a page half way down'] / page:6.2f}x")
    print(f"every session / first page:             {t['list every session (no paging)'] / page:6.1f}x")
    tick = t["data_version (Database)"]
    print(f"data_version / sqlite3 PRAGMA:          {tick / t['sqlite3: PRAGMA data_version']:6.1f}x")
    print(f"data_version / first page (a tick vs a re-read): {t['data_version (Database)'] / page:6.3f}x")
    window = t["transcript, last 200 of the long session"]
    whole = t["show(full=True): all of the long session"]
    print(f"transcript window / whole session:      {window / whole:6.3f}x")
    print(f"transcript window / sqlite3 200 rows:   {window / t['sqlite3: 200 payload rows']:6.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=20_000)
    a = parser.parse_args()
    asyncio.run(main(a.trials, a.sessions, a.messages))
