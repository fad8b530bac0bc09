"""Memory blocks (:mod:`axio_context.memory_blocks`): a block edit and a prompt window with 10
blocks of 2,000 characters, against the raw statements, on a SQLite file and on PostgreSQL.

Figures (medians of ``--ops`` calls of each, the two of a pair taken in turn, in one process):

- **edit**: ``BlockStore.replace`` (a write naming the version it read: read the block with its
  row locked, check the version, apply the edit, check limit and read-only, record the version,
  move the block, read it back) against the raw statements of the same change run as one plan
  through the same runner (``SELECT ... FOR UPDATE`` where rows lock, ``INSERT`` the version,
  ``UPDATE`` the block): what the layer's checks and its read-back cost.
- **window**: the 10 blocks read and rendered (``list_blocks`` + ``render_blocks``) against one
  raw ``SELECT label, value`` and an f-string; and ``AgentContext.get_prompt_window`` over an
  in-memory history of 10 messages with the block store against without it.

Run: ``python -m bench.bench_blocks [--ops 300]`` (starts an embedded PostgreSQL, fsync off).
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

from axio_context import Message, TextBlock
from axio_context.agents import AgentContext, ContextConfig
from axio_context.memory_blocks import BlockStore, MemoryBlock, render_blocks
from axio_context.sql import Dialect, Execute, Plan, Row, Rows, Runner
from axio_context_postgres import connect as pg_connect
from axio_context_postgres.embedded import EmbeddedServer
from axio_context_postgres.runner import PostgresRunner
from axio_context_sqlite import connect as sqlite_connect
from axio_context_sqlite.store.runner import SQLiteRunner

AGENT = "bench"
BLOCKS = 10
CHARS = 2_000


async def _medians_us(
    n: int, a: Callable[[int], Awaitable[Any]], b: Callable[[int], Awaitable[Any]]
) -> tuple[float, float]:
    """Medians of ``n`` calls of ``a`` and of ``b``, taken in turn (a, b, a, b...), so a change in
    the machine's load falls on both alike."""
    samples: tuple[list[float], list[float]] = ([], [])
    for i in range(n):
        for op, out in ((a, samples[0]), (b, samples[1])):
            t = time.perf_counter()
            await op(i)
            out.append(time.perf_counter() - t)
    return statistics.median(samples[0]) * 1e6, statistics.median(samples[1]) * 1e6


def _raw_edit(d: Dialect, label: str, old: str, new: str) -> Plan[None]:
    row = yield Row(
        f"SELECT id, value, version FROM memory_blocks WHERE agent_id = ? AND label = ?{d.lock_rows}",
        (AGENT, label),
    )
    value, version = str(row[1]).replace(old, new, 1), int(row[2]) + 1
    yield Execute(
        "INSERT INTO memory_block_versions (block_id, version, action, label, value, char_limit, description,"
        " read_only, undo_to, redo_to, agent_id, run_id, created_at)"
        " VALUES (?, ?, 'replace', ?, ?, 5000, '', 0, ?, NULL, ?, '', ?)",
        (row[0], version, label, value, version - 1, AGENT, time.time_ns() // 1_000_000),
    )
    yield Execute(
        "UPDATE memory_blocks SET value = ?, version = ?, updated_at = ? WHERE id = ?",
        (value, version, time.time_ns() // 1_000_000, row[0]),
    )


def _raw_window(d: Dialect) -> Plan[str]:
    rows = yield Rows(
        f"SELECT label, value FROM memory_blocks WHERE agent_id = ? ORDER BY {d.by_code_point('label')}",
        (AGENT,),
    )
    return "\n".join(f'<block label="{r[0]}">\n{r[1]}\n</block>' for r in rows)


async def _measure(name: str, runner: Runner, ops: int) -> dict[str, float]:
    blocks = BlockStore(runner)
    for i in range(BLOCKS):
        await blocks.create(MemoryBlock(f"block{i:02d}", ("ab" * CHARS)[:CHARS]), agent_id=AGENT)
    await blocks.create(MemoryBlock("edited", "tick 0"), agent_id=AGENT)
    await blocks.create(MemoryBlock("raw", "tick 0"), agent_id="raw")

    async def edit(i: int) -> None:
        await blocks.replace("edited", f"tick {i}", f"tick {i + 1}", agent_id=AGENT)

    async def raw_edit(i: int) -> None:
        await runner.write(_raw_edit, "edited", f"tick {ops + i}", f"tick {ops + i + 1}")

    async def window(_: int) -> None:
        render_blocks(await blocks.list_blocks(agent_id=AGENT))

    async def raw_window(_: int) -> None:
        await runner.read(_raw_window)

    history = [Message(role="user", content=[TextBlock(text=f"message {i}")]) for i in range(10)]
    with_blocks = AgentContext(ContextConfig.default(), AGENT, blocks=blocks)
    without = AgentContext(ContextConfig.default(), AGENT)
    for ctx in (with_blocks, without):
        await ctx.append_many("s", history)

    async def agent_window(_: int) -> None:
        await with_blocks.get_prompt_window("s")

    async def plain_window(_: int) -> None:
        await without.get_prompt_window("s")

    figures: dict[str, float] = {}
    for names, pair in (
        (("edit (replace)", "edit, raw statements"), (edit, raw_edit)),
        (("10 blocks read + rendered", "10 blocks, raw SELECT + f-string"), (window, raw_window)),
        (("get_prompt_window with blocks", "get_prompt_window without"), (agent_window, plain_window)),
    ):
        figures.update(zip(names, await _medians_us(ops, *pair), strict=True))
    for what, us in figures.items():
        print(f"{name:10} {what:34} {us:9.1f} us")
    return figures


async def main(ops: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with sqlite_connect(Path(tmp) / "blocks.db") as conn:
            await _measure("sqlite", SQLiteRunner(conn), ops)
    with EmbeddedServer() as server:
        pool = await pg_connect(server.url(), min_size=1, max_size=2)
        try:
            await _measure("postgresql", PostgresRunner(pool, "bench"), ops)
        finally:
            await pool.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=300, help="calls per figure (default 300)")
    asyncio.run(main(parser.parse_args().ops))
