"""Issue 22's bridge benchmark: the openai-agents Session (``AxioContextSession``).

- **tail read**: ``get_items(limit=10)`` on a session of 1,000, 10,000 and ``--items``
  (100,000) items, each a user/assistant message or a function call and its output. It should
  be flat: the ratio of the time at 100,000 to the time at 1,000 is reported. For comparison,
  the same call on openai-agents' own ``SQLiteSession`` (the peer: one JSON row per item) and
  the raw limit: plain ``sqlite3`` reading the last 10 JSON rows of a 100,000-row table.
- **turn**: ``add_items`` of a 20-item turn (one transaction), on a session that already holds
  ``--items`` items, against the peer and against plain ``sqlite3`` inserting 20 JSON rows in
  one transaction.

Figures are medians of ``--repeat`` calls, all measured in this one run, and reported as ratios.
Run: ``python -m bench.bench_bridges`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import SQLiteSession, set_tracing_disabled

from axio_context_openai_agents import AxioContextSession


def item(i: int) -> dict[str, Any]:
    """Item ``i`` of a conversation: user, function call, its output, assistant, by turns."""
    kind = i % 4
    if kind == 0:
        return {"role": "user", "content": f"question {i}: what is the weather in city {i % 97}?"}
    if kind == 1:
        return {
            "type": "function_call",
            "call_id": f"c{i}",
            "name": "weather",
            "arguments": f'{{"city": {i}}}',
        }
    if kind == 2:
        return {"type": "function_call_output", "call_id": f"c{i - 1}", "output": f"sunny, {i % 30} C"}
    return {
        "id": f"msg_{i}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"It is sunny in city {i % 97}.", "annotations": []}],
    }


async def median(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


async def fill(session: Any, start: int, end: int, batch: int = 1000) -> None:
    for lo in range(start, end, batch):
        await session.add_items([item(i) for i in range(lo, min(end, lo + batch))])


def raw_table(path: Path, n: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, session TEXT, data TEXT)")
    conn.execute("CREATE INDEX items_by_session ON items (session, id)")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (session, data) VALUES ('s', ?)", ((json.dumps(item(i)),) for i in range(n))
    )
    conn.execute("COMMIT")
    return conn


def raw_tail(conn: sqlite3.Connection) -> list[Any]:
    rows = conn.execute("SELECT data FROM items WHERE session = 's' ORDER BY id DESC LIMIT 10").fetchall()
    return [json.loads(r[0]) for r in reversed(rows)]


def raw_turn(conn: sqlite3.Connection, turn: list[dict[str, Any]]) -> None:
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO items (session, data) VALUES ('s', ?)", [(json.dumps(i),) for i in turn])
    conn.execute("COMMIT")


async def run(n_items: int, repeat: int) -> dict[str, float]:
    set_tracing_disabled(True)
    out: dict[str, float] = {}
    sizes = sorted({min(1_000, n_items), min(10_000, n_items), n_items})
    turn = [item(i) for i in range(20)]
    with tempfile.TemporaryDirectory() as tmp:
        ours = AxioContextSession("bench", Path(tmp) / "ours.db", project="bench")
        peer = SQLiteSession("bench", Path(tmp) / "peer.db")
        done = 0
        for size in sizes:
            await fill(ours, done, size)
            await fill(peer, done, size)
            done = size
            out[f"ours_tail_{size}"] = await median(lambda: ours.get_items(limit=10), repeat)
            out[f"peer_tail_{size}"] = await median(lambda: peer.get_items(limit=10), repeat)
        raw = raw_table(Path(tmp) / "raw.db", n_items)
        out["raw_tail"] = statistics.median(_timed(lambda: raw_tail(raw)) for _ in range(repeat))
        out["ours_turn"] = await median(lambda: ours.add_items(turn), repeat)
        out["peer_turn"] = await median(lambda: peer.add_items(turn), repeat)
        out["raw_turn"] = statistics.median(_timed(lambda: raw_turn(raw, turn)) for _ in range(repeat))
        assert len(await ours.get_items(limit=10)) == 10
        raw.close()
        ours.close()
        peer.close()
    out["sizes"] = float(len(sizes))
    small, big = sizes[0], sizes[-1]
    print(f"get_items(limit=10), {big:,} items; medians of {repeat} calls")
    for size in sizes:
        print(
            f"  {size:>7,} items: ours {out[f'ours_tail_{size}'] * 1e6:8.0f} us   "
            f"openai-agents SQLiteSession {out[f'peer_tail_{size}'] * 1e6:8.0f} us"
        )
    print(
        f"  flat: ours at {big:,} / at {small:,} = "
        f"{out[f'ours_tail_{big}'] / out[f'ours_tail_{small}']:.2f}x; "
        f"peer {out[f'peer_tail_{big}'] / out[f'peer_tail_{small}']:.2f}x"
    )
    print(
        f"  vs plain sqlite3 (last 10 JSON rows): ours {out[f'ours_tail_{big}'] / out['raw_tail']:.1f}x, "
        f"peer {out[f'peer_tail_{big}'] / out['raw_tail']:.1f}x  (raw {out['raw_tail'] * 1e6:.0f} us)"
    )
    print(f"add_items of a 20-item turn, session of {big:,} items")
    print(
        f"  ours {out['ours_turn'] * 1e3:.2f} ms, "
        f"openai-agents SQLiteSession {out['peer_turn'] * 1e3:.2f} ms, "
        f"plain sqlite3 {out['raw_turn'] * 1e3:.2f} ms"
    )
    print(
        f"  ours / sqlite3 = {out['ours_turn'] / out['raw_turn']:.1f}x, ours / peer = "
        f"{out['ours_turn'] / out['peer_turn']:.2f}x"
    )
    return out


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="2,000 items, 5 repeats")
    args = parser.parse_args()
    if args.quick:
        args.items, args.repeat = 2_000, 5
    asyncio.run(run(args.items, args.repeat))


if __name__ == "__main__":
    main()
