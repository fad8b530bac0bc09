"""MCP benchmark: a ``search_sessions`` round trip through ``axio-context mcp`` against the same
search called in process.

Builds a database of ``--messages`` workload messages (bench/workload.py) in sessions of 50,
embedded with the hashing embedder, then for each mode (keyword, semantic, hybrid) times
``--rounds`` searches of the same queries three ways: ``db.search`` in process (the library
call), the server's handler in process (``AxioMCP.call_tool``: the library call plus argument
checking and JSON encoding), and the MCP round trip (the SDK's ``ClientSession.call_tool`` over
stdio to the real ``axio-context mcp`` process). Also a ``list_collections`` round trip over an
empty memory store (the protocol's own cost), and the server's start: process start to the
first answered ``tools/list`` (the SDK's import dominates it). Medians and p95.
Run: ``python -m bench.bench_mcp`` (``--db URL`` for a PostgreSQL database you made; about a
minute at the default size).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from axio_context.backends import open_database
from axio_context.embeddings import HashingEmbedder
from axio_context_mcp.server import AxioMCP

from .workload import iter_transcript

QUERIES = ("parser fails on nested brackets", "database migration index", "retry backoff timeout socket")
MODES = ("keyword", "semantic", "hybrid")
SCRIPT = Path(sys.executable).with_name("axio-context")


async def build(where: str, messages: int) -> None:
    """``messages`` workload messages in sessions of 50, embedded (hashing, 384 dimensions)."""
    async with open_database(where) as db:
        batch = []
        for i, message in enumerate(iter_transcript(messages), 1):
            batch.append(message)
            if len(batch) == 50 or i == messages:
                await db.store(f"session-{i // 50:05d}", project="bench").append_many(batch)
                batch = []
        await db.reindex(HashingEmbedder(384))


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"{statistics.median(ordered) * 1e3:7.2f} ms (p95 {p95 * 1e3:.2f})"


async def in_process(where: str, mode: str, rounds: int) -> tuple[list[float], list[float]]:
    """The library call, and the server's handler, each ``rounds`` times."""
    library: list[float] = []
    handler: list[float] = []
    async with open_database(where) as db:
        await db.search(QUERIES[0], mode=mode)  # type: ignore[arg-type]  # warm: the model, the codes
        for i in range(rounds):
            t = time.perf_counter()
            await db.search(QUERIES[i % len(QUERIES)], mode=mode)  # type: ignore[arg-type]
            library.append(time.perf_counter() - t)
    async with AxioMCP(where) as app:
        await app.call_tool("search_sessions", {"query": QUERIES[0], "mode": mode})
        for i in range(rounds):
            t = time.perf_counter()
            query = {"query": QUERIES[i % len(QUERIES)], "mode": mode}
            result = await app.call_tool("search_sessions", query)
            handler.append(time.perf_counter() - t)
            assert not result.is_error, result.content
    return library, handler


async def round_trips(where: str, rounds: int) -> tuple[float, dict[str, list[float]]]:
    """The server's start, and each mode's ``rounds`` round trips over stdio."""
    params = StdioServerParameters(command=str(SCRIPT), args=["--db", where, "mcp"], env=dict(os.environ))
    out: dict[str, list[float]] = {}
    t = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        start = time.perf_counter() - t
        samples = out.setdefault("list_collections", [])
        for _ in range(rounds):  # a tool with nothing to do: the protocol's own cost
            t = time.perf_counter()
            await session.call_tool("list_collections", {})
            samples.append(time.perf_counter() - t)
        for mode in MODES:
            await session.call_tool("search_sessions", {"query": QUERIES[0], "mode": mode})
            samples = out.setdefault(mode, [])
            for i in range(rounds):
                t = time.perf_counter()
                result = await session.call_tool(
                    "search_sessions", {"query": QUERIES[i % len(QUERIES)], "mode": mode}
                )
                samples.append(time.perf_counter() - t)
                assert not result.is_error, result.content
    return start, out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--messages", type=int, default=5_000, help="messages in the database")
    parser.add_argument("--rounds", type=int, default=30, help="searches per mode and way")
    parser.add_argument("--db", help="an empty database to fill (a path or postgresql:// URL)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = args.db or str(Path(tmp) / "mcp.db")
        t = time.perf_counter()
        await build(where, args.messages)
        print(f"built {args.messages:,} messages in {time.perf_counter() - t:.1f} s ({where.split('@')[-1]})")
        start, trips = await round_trips(where, args.rounds)
        print(f"server start to the first tools/list: {start * 1e3:.0f} ms")
        print(f"{'mode':9} {'library call':>26} {'handler in process':>26} {'MCP round trip':>26}")
        for mode in MODES:
            library, handler = await in_process(where, mode, args.rounds)
            print(f"{mode:9} {_ms(library):>26} {_ms(handler):>26} {_ms(trips[mode]):>26}")
        print(f"{'list_collections (no data), MCP round trip':62} {_ms(trips['list_collections']):>26}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
