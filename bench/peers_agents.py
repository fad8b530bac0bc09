"""Issue 32's openai-agents rows: ``AxioContextSession`` against openai-agents' own
``SQLiteSession``, at the same durability (``synchronous`` NORMAL and FULL, both in WAL mode), in
one run with the two sides alternated call by call.

Rows: ``add_items`` of a 20-item turn, ``get_items()``, ``get_items(limit=10)`` and ``pop_item``
on a session of 1,000 and of ``items`` items; a bulk fill (``sessions`` new sessions, each given
1,000 items in one ``add_items``); a cold open plus first read (a new session object on an
existing file, then ``get_items(limit=10)``; ``--cold`` runs that row alone, 41 rounds). Items
are ``bench.bench_bridges.item``'s (user, function call, its output, assistant). Part of
``python -m bench.peers``.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import SQLiteSession, set_tracing_disabled

from axio_context_openai_agents import AxioContextSession

from .bench_bridges import fill, item

__all__ = ["MODES", "run"]

MODES = ("NORMAL", "FULL")


def peer_class(synchronous: str) -> type[SQLiteSession]:
    """``SQLiteSession`` with ``synchronous`` set on each connection it opens (its own default is
    SQLite's, FULL; it has no option for it)."""

    class Peer(SQLiteSession):
        @staticmethod
        def _configure_connection(conn: Any) -> None:
            SQLiteSession._configure_connection(conn)
            conn.execute(f"PRAGMA synchronous = {synchronous}")

    return Peer


def ours(session_id: str, path: Path, synchronous: str) -> AxioContextSession:
    try:
        return AxioContextSession(session_id, path, project="bench", synchronous=synchronous)  # type: ignore[call-arg]
    except TypeError:  # a version without the option: its default (NORMAL)
        return AxioContextSession(session_id, path, project="bench")


async def _once(fn: Callable[[], Awaitable[Any]]) -> float:
    t = time.perf_counter()
    await fn()
    return time.perf_counter() - t


async def alternated(
    a: Callable[[], Awaitable[Any]], b: Callable[[], Awaitable[Any]], rounds: int
) -> tuple[float, float]:
    """Medians of ``rounds`` calls of each, the two sides alternated (a b, b a, ...)."""
    ta: list[float] = []
    tb: list[float] = []
    for r in range(rounds):
        if r % 2 == 0:
            ta.append(await _once(a))
            tb.append(await _once(b))
        else:
            tb.append(await _once(b))
            ta.append(await _once(a))
    return statistics.median(ta), statistics.median(tb)


async def _popped(session: Any) -> None:
    popped = await session.pop_item()
    assert popped is not None
    await session.add_items([popped])  # untimed below: put it back, the size stays


async def _pop_round(a: Any, b: Any, rounds: int) -> tuple[float, float]:
    ta: list[float] = []
    tb: list[float] = []
    for r in range(rounds):
        for side, out in ((a, ta), (b, tb)) if r % 2 == 0 else ((b, tb), (a, ta)):
            t = time.perf_counter()
            popped = await side.pop_item()
            out.append(time.perf_counter() - t)
            await side.add_items([popped])
    return statistics.median(ta), statistics.median(tb)


async def _mode(
    tmp: Path, synchronous: str, items: int, rounds: int, sessions: int
) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    peer_cls = peer_class(synchronous)
    turn = [item(i) for i in range(20)]
    a = ours("s", tmp / "ours.db", synchronous)
    b = peer_cls("s", tmp / "peer.db")
    done = 0
    for size in sorted({min(1_000, items), items}):
        await fill(a, done, size)
        await fill(b, done, size)
        done = size
        n = f"{size:,}"
        out[f"get_items(limit=10), {n} items"] = await alternated(
            lambda: a.get_items(limit=10), lambda: b.get_items(limit=10), rounds * 5
        )
        out[f"get_items() all, {n} items"] = await alternated(
            a.get_items, b.get_items, max(3, rounds if size <= 10_000 else rounds // 2)
        )
        out[f"pop_item, {n} items"] = await _pop_round(a, b, rounds * 3)
        turns = rounds * 3
        out[f"add_items of a 20-item turn, {n} items"] = await alternated(
            lambda: a.add_items(turn), lambda: b.add_items(turn), turns
        )
        # the turns added stay: the next size's fill starts where they end
        done += 20 * turns
        assert len(await a.get_items()) == len(await b.get_items()) == done
    a.close()
    b.close()

    def cold_ours() -> Awaitable[Any]:
        async def go() -> None:
            s = ours("s", tmp / "ours.db", synchronous)
            assert len(await s.get_items(limit=10)) == 10
            s.close()

        return go()

    def cold_peer() -> Awaitable[Any]:
        async def go() -> None:
            s = peer_cls("s", tmp / "peer.db")
            assert len(await s.get_items(limit=10)) == 10
            s.close()

        return go()

    out["cold open + get_items(limit=10)"] = await alternated(cold_ours, cold_peer, rounds * 2)
    bulk = [item(i) for i in range(1_000)]

    async def fill_ours() -> None:
        for k in range(sessions):
            s = ours(f"bulk-{k}", tmp / "bulk-ours.db", synchronous)
            await s.add_items(bulk)
            s.close()

    async def fill_peer() -> None:
        for k in range(sessions):
            s = peer_cls(f"bulk-{k}", tmp / "bulk-peer.db")
            await s.add_items(bulk)
            s.close()

    out[f"bulk fill, {sessions} x 1,000 items"] = (await _once(fill_ours), await _once(fill_peer))
    return out


async def run(
    items: int = 100_000, rounds: int = 9, sessions: int = 100
) -> dict[str, dict[str, tuple[float, float]]]:
    """``{mode: {row: (ours seconds, peer seconds)}}`` for ``synchronous`` NORMAL and FULL."""
    set_tracing_disabled(True)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory(prefix="axio-peers-") as tmp:
            results[mode] = await _mode(Path(tmp), mode, items, rounds, sessions)
    return results


async def cold_only(rounds: int = 41, items: int = 1_000) -> dict[str, dict[str, tuple[float, float]]]:
    """Only the cold open row, at each ``synchronous``, with more rounds than :func:`run` gives it
    (``--cold``): a file of ``items`` items each side, then open, ``get_items(limit=10)``, close."""
    set_tracing_disabled(True)
    results: dict[str, dict[str, tuple[float, float]]] = {}
    for mode in MODES:
        with tempfile.TemporaryDirectory(prefix="axio-peers-") as tmp_name:
            tmp = Path(tmp_name)
            peer_cls = peer_class(mode)
            a, b = ours("s", tmp / "ours.db", mode), peer_cls("s", tmp / "peer.db")
            await fill(a, 0, items)
            await fill(b, 0, items)
            a.close()
            b.close()

            async def cold_ours() -> None:
                s = ours("s", tmp / "ours.db", mode)  # noqa: B023  (awaited inside the loop)
                assert len(await s.get_items(limit=10)) == 10
                s.close()

            async def cold_peer() -> None:
                s = peer_cls("s", tmp / "peer.db")  # noqa: B023
                assert len(await s.get_items(limit=10)) == 10
                s.close()

            results[mode] = {
                "cold open + get_items(limit=10)": await alternated(cold_ours, cold_peer, rounds)
            }
    return results


def print_table(results: dict[str, dict[str, tuple[float, float]]]) -> None:
    print("| work (openai-agents session) | synchronous | SQLiteSession | ours | ours / peer |")
    print("|---|---|---|---|---|")
    for mode, rows in results.items():
        for row, (o, p) in rows.items():
            print(f"| {row} | {mode} | {_fmt(p)} | {_fmt(o)} | {o / p:.2f}x |")


def _fmt(s: float) -> str:
    return f"{s * 1e3:,.2f} ms" if s < 1 else f"{s:,.2f} s"


if __name__ == "__main__":
    import sys

    quick = "--quick" in sys.argv
    if "--cold" in sys.argv:
        res = asyncio.run(cold_only())
    else:
        res = asyncio.run(run(2_000, 3, 5) if quick else run())
    print_table(res)
