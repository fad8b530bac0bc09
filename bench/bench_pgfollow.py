"""How ``show --follow`` and ``browse`` learn of new messages on PostgreSQL: a poll against
LISTEN/NOTIFY, measured in one run.

Figures:

- **poll tick**: what a follower pays per tick while nothing changes, median microseconds:
  ``PostgresBrowser.session_version`` (one probe of the session's row, what ``follow`` polls)
  and ``data_version`` (``pg_current_snapshot()``, what the session list polls), against
  SQLite's ``PRAGMA data_version`` (what the SQLite follower polls).
- **what NOTIFY would cost the writers**: appends per second by 1 and by 4 writer connections
  (each its own session) with a trigger that sends ``pg_notify`` on every append to
  ``messages``, against the same appends without it: the cost LISTEN/NOTIFY puts on every
  writer, followed or not (a NOTIFY takes a database-wide lock at commit: notifying commits
  queue behind each other, which shows only with many writers).
- **latency**: how long after a commit a poller at ``--interval`` sees it (half the interval
  on average, by construction), and a LISTEN-er (a round trip).

Run: ``python -m bench.bench_pgfollow [--appends 2000] [--interval 0.25]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from axio_context.testing import text
from axio_context_postgres import PostgresContextStore
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.browsing import PostgresBrowser
from axio_context_postgres.database import PostgresDatabase
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_sqlite import SQLiteContextStore
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.database import Database

_TRIGGER = """
CREATE FUNCTION bench_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('axio_messages', NEW.seg::text);
    RETURN NULL;
END $$;
CREATE TRIGGER bench_notify AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION bench_notify();
"""


async def _median_us(n: int, op: Callable[[], Awaitable[Any]]) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        await op()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


async def _appends_per_s(pool: Any, writers: int, per: int, tag: str) -> float:
    stores = [PostgresContextStore(pool, f"{tag}-{w}", "bench") for w in range(writers)]
    for s in stores:
        await s.append(text("user", "first"))

    async def write(s: PostgresContextStore) -> None:
        for i in range(per):
            await s.append(text("assistant", f"reply {i}"))

    t = time.perf_counter()
    await asyncio.gather(*(write(s) for s in stores))
    return writers * per / (time.perf_counter() - t)


async def _listen_latency(pool: Any, url: str, n: int) -> float:
    """Median seconds from an append's return to its NOTIFY reaching a listener."""
    import asyncpg

    listener = await asyncpg.connect(url)
    got: asyncio.Queue[float] = asyncio.Queue()
    await listener.add_listener("axio_messages", lambda *_: got.put_nowait(time.perf_counter()))
    store = PostgresContextStore(pool, "latency", "bench")
    samples = []
    try:
        for i in range(n):
            t = time.perf_counter()
            await store.append(text("user", f"m{i}"))
            samples.append(await asyncio.wait_for(got.get(), 10) - t)
    finally:
        await listener.close()
    return statistics.median(samples)


async def main(appends: int, interval: float) -> None:
    with EmbeddedServer() as server, tempfile.TemporaryDirectory() as tmp:
        url = server.url()
        pool = await pg_connect(url, min_size=5, max_size=8)
        try:
            store = PostgresContextStore(pool, "followed", "bench")
            await store.append_many([text("user", f"m{i}") for i in range(1000)])
            browser = PostgresBrowser(PostgresDatabase(pool, url))
            tick_session = await _median_us(500, lambda: browser.session_version("followed"))
            tick_snapshot = await _median_us(500, browser.data_version)
            async with sqlite_connect(Path(tmp) / "f.db") as conn:
                await SQLiteContextStore(conn, "followed", "bench").append(text("user", "m"))
                db = Database(conn, Path(tmp) / "f.db")
                tick_sqlite = await _median_us(500, db.data_version)
            per = max(50, appends // 4)
            plain1 = await _appends_per_s(pool, 1, appends, "plain1")
            plain4 = await _appends_per_s(pool, 4, per, "plain4")
            await pool.execute(_TRIGGER)
            notify1 = await _appends_per_s(pool, 1, appends, "notify1")
            notify4 = await _appends_per_s(pool, 4, per, "notify4")
            listen = await _listen_latency(pool, url, 100)
        finally:
            await pool.close()
    print("following a session: what a tick costs while nothing changes (median us)")
    print(f"  PostgreSQL session row probe (follow):      {tick_session:8.0f}")
    print(f"  PostgreSQL pg_current_snapshot() (list):    {tick_snapshot:8.0f}")
    print(f"  SQLite PRAGMA data_version:                 {tick_sqlite:8.0f}")
    print(f"  session probe / SQLite: {tick_session / tick_sqlite:.1f}x")
    print("what LISTEN/NOTIFY costs every writer: appends per second")
    print(f"  1 writer:  plain {plain1:7.0f}, with a NOTIFY trigger {notify1:7.0f} ({notify1 / plain1:.2f}x)")
    print(f"  4 writers: plain {plain4:7.0f}, with a NOTIFY trigger {notify4:7.0f} ({notify4 / plain4:.2f}x)")
    print(
        f"latency to see a commit: LISTEN {listen * 1e3:.2f} ms; a poll every {interval:g} s:"
        f" {interval / 2 * 1e3:.0f} ms on average (one probe of {tick_session:.0f} us per tick per follower)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--interval", type=float, default=0.25)
    args = parser.parse_args()
    asyncio.run(main(args.appends, args.interval))
