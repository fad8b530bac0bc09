"""Issue 32's comparison in one command: each row against the peer a user compares us with, in
one run, and the ratios.

``python -m bench.peers`` (``--quick`` for a smoke run at small sizes, ``--only`` for some parts):

- **agents**: openai-agents' ``SQLiteSession`` against ``AxioContextSession`` at ``synchronous``
  NORMAL and FULL, the two sides alternated call by call (:mod:`bench.peers_agents`), with
  plain ``sqlite3`` beside the tail read and the turn (:mod:`bench.bench_bridges`).
- **vectors**: LangGraph's ``SqliteStore`` against our vector store, insert and search of
  10,000 x 384 random vectors, recall@10 (:mod:`bench.peers_vectors`).
- **store**: axio-context-sqlite 0.12.2 (in its own Python 3.12 venv) against ours: listing
  2,000 sessions and the file after 2,000 appends (``bench.run``'s ``list`` and ``append``).
- **postgres**: our PostgreSQL store against raw asyncpg on one embedded server: append, tail
  20, load 10k, a page of 50, the sides alternated call by call (:mod:`bench.peers_postgres`).

Needs the ``bench`` extra (LangGraph) beside ``dev``. Prints one Markdown table (work, peer,
peer's figure, ours, ours / peer: below 1 is ours faster or smaller) under the provenance line
docs/benchmarks.md wants.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("agents", "vectors", "store", "postgres")

Row = tuple[str, str, float, float, str]  # work, peer, peer figure, ours, unit ("s" or "B")


def _fmt(v: float, unit: str) -> str:
    if unit == "B":
        return f"{v / 1024:,.0f} KiB"
    return f"{v * 1e3:,.2f} ms" if v < 1 else f"{v:,.2f} s"


def agents_rows(quick: bool) -> list[Row]:
    from . import peers_agents

    res = asyncio.run(peers_agents.run(2_000, 3, 5) if quick else peers_agents.run())
    out: list[Row] = []
    for mode, rows in res.items():
        for work, (ours, peer) in rows.items():
            out.append(
                (f"openai-agents session: {work}, synchronous {mode}", "SQLiteSession", peer, ours, "s")
            )
    out.extend(_raw_rows(res, 2_000 if quick else 100_000, 3 if quick else 50))
    return out


def _raw_rows(res: dict[str, dict[str, tuple[float, float]]], n: int, repeat: int) -> list[Row]:
    """Plain ``sqlite3`` (one JSON row per item, WAL, NORMAL) beside the NORMAL tail and turn."""
    import statistics

    from .bench_bridges import item, raw_table, raw_tail, raw_turn

    turn = [item(i) for i in range(20)]
    with tempfile.TemporaryDirectory() as tmp:
        conn = raw_table(Path(tmp) / "raw.db", n)
        tail = statistics.median(_timed(lambda: raw_tail(conn)) for _ in range(repeat * 5))
        add = statistics.median(_timed(lambda: raw_turn(conn, turn)) for _ in range(repeat))
        conn.close()
    normal = res["NORMAL"]
    out: list[Row] = []
    for key, raw, what in (
        (f"get_items(limit=10), {n:,} items", tail, "the last 10 JSON rows"),
        (f"add_items of a 20-item turn, {n:,} items", add, "20 JSON rows in one transaction"),
    ):
        if key in normal:
            out.append((f"openai-agents session: {key} vs {what}", "raw sqlite3", raw, normal[key][0], "s"))
    return out


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def vector_rows(quick: bool) -> list[Row]:
    from . import peers_vectors

    n = 2_000 if quick else 10_000
    res = asyncio.run(peers_vectors.run(n, 384, 10 if quick else 50))
    ours, peer = res["ours"], res["langgraph"]
    where = f"{n:,} x 384 random"
    return [
        (f"vector store: insert {where}", "LangGraph SqliteStore", peer["insert_s"], ours["insert_s"], "s"),
        (
            f"vector store: search {where} (recall@10 ours {ours['recall']:.2f}, peer {peer['recall']:.2f})",
            "LangGraph SqliteStore",
            peer["search_s"],
            ours["search_s"],
            "s",
        ),
    ]


def store_rows(quick: bool) -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        out_json = Path(tmp) / "run.json"
        cmd = [sys.executable, "-m", "bench.run", "--only", "list", "--only", "append", "--no-pin"]
        cmd += ["--targets", "ours,peer", "--json", str(out_json), *(["--quick"] if quick else [])]
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        runs = json.loads(out_json.read_text())["runs"]["unpinned"]
    if "peer" not in runs:
        raise RuntimeError("axio-context-sqlite 0.12.2 did not run (see bench.targets)")
    ours, peer = runs["ours"]["workloads"], runs["peer"]["workloads"]
    n_list = 300 if quick else 2_000
    n_append = 300 if quick else 2_000
    peer_name = "axio-context-sqlite 0.12.2"
    return [
        (
            f"list {n_list:,} sessions",
            peer_name,
            peer["list"]["median_us"] / 1e6,
            ours["list"]["median_us"] / 1e6,
            "s",
        ),
        (
            f"file after {n_append:,} appends",
            peer_name,
            peer["append"]["size_bytes"],
            ours["append"]["size_bytes"],
            "B",
        ),
    ]


def postgres_rows(quick: bool) -> list[Row]:
    from axio_context_postgres.embedded import EmbeddedServer

    from . import peers_postgres

    with EmbeddedServer() as server:

        async def run() -> dict[str, tuple[float, float]]:
            import asyncpg

            admin = await asyncpg.connect(server.url())
            await admin.execute("CREATE DATABASE peers")
            await admin.close()
            return await peers_postgres.run(server.url("peers"), quick)

        res = asyncio.run(run())
    return [(f"PostgreSQL store: {work}", "raw asyncpg", raw, ours, "s") for work, (ours, raw) in res.items()]


def table(rows: list[Row]) -> str:
    lines = ["| work | peer | peer's figure | ours | ours / peer |", "|---|---|---|---|---|"]
    for work, peer, p, o, unit in rows:
        lines.append(f"| {work} | {peer} | {_fmt(p, unit)} | {_fmt(o, unit)} | {o / p:.2f}x |")
    return "\n".join(lines)


def provenance(quick: bool, load_before: tuple[float, float, float]) -> str:
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    load_after = os.getloadavg()
    command = "python -m bench.peers" + (" --quick" if quick else "")
    return (
        f"Measured with `{command}` on {datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores "
        f"({platform.machine()}, Python {platform.python_version()}), load {load_before[0]:.1f} before and "
        f"{load_after[0]:.1f} after (1-minute average), commit `{sha.stdout.strip() or 'unknown'}`."
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few rounds: a smoke run")
    ap.add_argument("--only", action="append", choices=PARTS, help="run only this part (repeatable)")
    args = ap.parse_args(argv)
    parts = args.only or list(PARTS)
    load = os.getloadavg()
    started = time.perf_counter()
    rows: list[Row] = []
    makers = {"agents": agents_rows, "vectors": vector_rows, "store": store_rows, "postgres": postgres_rows}
    for part in parts:
        t = time.perf_counter()
        print(f"[peers] {part} ...", file=sys.stderr, flush=True)
        rows.extend(makers[part](args.quick))
        print(f"[peers] {part} done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    print(provenance(args.quick, load))
    print()
    print(table(rows))
    print(f"\n(total {time.perf_counter() - started:.0f} s; below 1x: ours faster or smaller)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
