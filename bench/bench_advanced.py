"""Issue 34's advanced-session benchmark: ``AxioAdvancedSession`` against openai-agents'
``AdvancedSQLiteSession`` (the peer), on SQLite files, in one run, the two sides alternated.

A session of ``N`` items (1,000 and ``--items``, 100,000) in 4-item turns (a user message, a
function call, its output, an assistant message, as ``bench_bridges``); the last 20 turns each
get ``store_run_usage``. Measured, medians of ``--repeat`` rounds per side:

- **branch**: ``create_branch_from_turn`` at the middle turn (the peer copies the structure rows
  of every item before it; ours forks: one row);
- **branch read**: ``get_items(limit=10)`` on that branch;
- **turn usage**: ``get_turn_usage()`` (every turn with usage) on the main branch, and
  ``get_turn_usage(n)`` of the last turn with usage;
- **find**: ``find_turns_by_content`` of one turn's text on the main branch (both sides look at
  every user turn's text: it grows with the number of turns);
- **turn add**: ``add_items`` of a 4-item turn on the main branch (ours writes its turn row in the
  append's transaction: ``message_turns``, see axio_context/turns_sql.py).

Run: ``python -m bench.bench_advanced`` (``--quick``: 1,000 and 10,000 items, 3 rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from agents import set_tracing_disabled
from agents.extensions.memory import AdvancedSQLiteSession
from agents.usage import Usage

from axio_context_openai_agents import AxioAdvancedSession

from .bench_bridges import item


class _Result:
    """What ``store_run_usage`` reads of a run result."""

    def __init__(self, usage: Usage) -> None:
        self.context_wrapper = self
        self.usage = usage


async def fill(session: Any, n: int) -> None:
    """``n`` items in 4-item turns, the last 20 turns with usage."""
    tail = 80
    for start in range(0, n - tail, 1_000):
        await session.add_items([item(i) for i in range(start, min(start + 1_000, n - tail))])
    for start in range(n - tail, n, 4):
        await session.add_items([item(i) for i in range(start, start + 4)])
        usage = Usage(requests=1, input_tokens=100 + start, output_tokens=20, total_tokens=120 + start)
        await session.store_run_usage(_Result(usage))


async def timed(call: Awaitable[Any]) -> float:
    t = time.perf_counter()
    await call
    return (time.perf_counter() - t) * 1000


async def measure(n: int, repeat: int, folder: Path) -> dict[str, tuple[float, float]]:
    ours = AxioAdvancedSession(f"ours-{n}", folder / f"ours-{n}.db")
    peer = AdvancedSQLiteSession(session_id=f"peer-{n}", db_path=folder / f"peer-{n}.db", create_tables=True)
    sides: dict[str, Any] = {"ours": ours, "peer": peer}
    for session in sides.values():
        await fill(session, n)
    middle = n // 8
    times: dict[str, dict[str, list[float]]] = {
        k: {s: [] for s in sides} for k in ("branch", "read", "usage", "one", "find", "add")
    }
    for r in range(repeat):
        for side in ("ours", "peer") if r % 2 == 0 else ("peer", "ours"):
            s = sides[side]
            times["branch"][side].append(await timed(s.create_branch_from_turn(middle, f"b{r}")))
            times["read"][side].append(await timed(s.get_items(limit=10)))
            await s.switch_to_branch("main")
            times["usage"][side].append(await timed(s.get_turn_usage()))
            times["one"][side].append(await timed(s.get_turn_usage(n // 4)))
            times["find"][side].append(await timed(s.find_turns_by_content(f"question {4 * (middle - 1)}:")))
            turn = [item(i) for i in range(n + 4 * r, n + 4 * r + 4)]
            times["add"][side].append(await timed(s.add_items(turn)))
    assert len(await ours.get_turn_usage()) == len(await peer.get_turn_usage()) == 20
    one: list[Any] = [await side.get_turn_usage(n // 4) for side in (ours, peer)]
    assert one[0]["input_tokens"] == one[1]["input_tokens"] > 0
    assert len(await ours.find_turns_by_content(f"question {4 * (middle - 1)}:")) == 1
    ours.close()
    peer.close()
    return {k: (statistics.median(v["ours"]), statistics.median(v["peer"])) for k, v in times.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes, repeat = ((1_000, 10_000), 3) if args.quick else ((1_000, args.items), args.repeat)
    set_tracing_disabled(True)
    names = {
        "branch": "create_branch_from_turn (middle turn)",
        "read": "get_items(limit=10) on the branch",
        "usage": "get_turn_usage() (20 turns with usage)",
        "one": "get_turn_usage(n) (the last turn with usage)",
        "find": "find_turns_by_content (one turn's text)",
        "add": "add_items of a 4-item turn",
    }
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: await measure(n, repeat, Path(tmp)) for n in sizes}
    print("| work | items | AdvancedSQLiteSession ms | AxioAdvancedSession ms | ours / peer |")
    print("|---|---|---|---|---|")
    for key, name in names.items():
        for n in sizes:
            ours, peer = results[n][key]
            print(f"| {name} | {n:,} | {peer:.2f} | {ours:.2f} | {ours / peer:.2f}x |")


if __name__ == "__main__":
    asyncio.run(main())
