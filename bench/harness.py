"""What every bench worker shares: timing, thread-hop counting, the driver shape, the workloads.

Standard library only: the peer's worker imports this module under Python 3.12 in a venv that
has neither msgspec nor this project. A worker is a small module that defines a :class:`Driver`
for one target (``ours``, ``peer``, ``raw``) and calls :func:`worker_main`; the parent
(``bench.run``) writes a spec file, runs the worker (pinned or not) and reads one JSON object
from its stdout. Later benches (search, compaction) reuse the drivers and these helpers.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import shutil
import statistics
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

PROJECT = "bench"
ROOT = Path(__file__).resolve().parent.parent

# --- measuring ------------------------------------------------------------------------------------


class HopCounter:
    """Counts thread hops on aiosqlite connections: each job queued for a connection's thread.

    aiosqlite runs every call (execute, fetch, commit, cursor close) on the connection's own
    thread by putting a job on ``Connection._tx``; counting those puts measures the hops an
    operation really costs, whatever API layer issued them.
    """

    def __init__(self) -> None:
        self.count = 0

    def attach(self, conn: Any) -> None:
        """Count every job queued on ``conn`` (an ``aiosqlite.Connection``) from now on."""
        queue = conn._tx
        counter = self

        class _CountingQueue:
            def put_nowait(self, item: Any) -> None:
                counter.count += 1
                queue.put_nowait(item)

            def __getattr__(self, name: str) -> Any:
                return getattr(queue, name)

        conn._tx = _CountingQueue()


def stats(samples_s: Sequence[float]) -> dict[str, float | int]:
    """Summary of per-operation times, in microseconds."""
    us = sorted(s * 1e6 for s in samples_s)
    n = len(us)
    return {
        "n": n,
        "mean_us": statistics.fmean(us),
        "median_us": statistics.median(us),
        "p95_us": us[min(n - 1, round(0.95 * (n - 1)))],
        "min_us": us[0],
        "max_us": us[-1],
        "total_s": sum(samples_s),
    }


async def time_each(
    op: Callable[[Any], Awaitable[Any]], items: Sequence[Any], hops: HopCounter | None
) -> dict[str, Any]:
    """Run ``op`` once per item, timing each call; returns :func:`stats` plus hops per call."""
    times: list[float] = []
    before = hops.count if hops else 0
    clock = time.perf_counter
    for item in items:
        t0 = clock()
        await op(item)
        times.append(clock() - t0)
    out: dict[str, Any] = stats(times)
    out["hops_per_op"] = ((hops.count - before) / len(items)) if hops else 0
    return out


async def repeat(
    op: Callable[[], Awaitable[Any]],
    hops: HopCounter | None,
    *,
    budget_s: float,
    min_reps: int = 3,
    max_reps: int = 50,
    setup: Callable[[], Awaitable[Any]] | None = None,
    after: Callable[[Any], Awaitable[Any]] | None = None,
    collect: bool = False,
) -> dict[str, Any]:
    """Time ``op`` repeatedly (``setup`` and ``after`` untimed) until the budget or max_reps.

    ``after`` receives the op's result (to verify or discard it). ``collect`` runs the garbage
    collector before each call, so that one big call's garbage does not land in the next one's
    figure; it is off for small calls, whose figures it would inflate with cold CPU caches.
    """
    times: list[float] = []
    op_hops: list[int] = []
    started = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - started < budget_s):
        if setup is not None:
            await setup()
        if collect:
            gc.collect()
        before = hops.count if hops else 0
        t0 = time.perf_counter()
        result = await op()
        times.append(time.perf_counter() - t0)
        op_hops.append((hops.count - before) if hops else 0)
        if after is not None:
            await after(result)
    out: dict[str, Any] = stats(times)
    out["hops_per_op"] = statistics.fmean(op_hops)
    return out


def db_bytes(path: Path) -> dict[str, int]:
    """Sizes of a database file and its -wal and -shm files (0 where absent)."""
    sizes = {}
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{path}{suffix}")
        sizes["db" + suffix.replace("-", "_")] = p.stat().st_size if p.exists() else 0
    return sizes


# --- the driver shape -----------------------------------------------------------------------------


class Store(Protocol):
    """The slice of the ContextStore contract the workloads use (axio's names)."""

    async def append(self, message: Any) -> None: ...
    async def get_history(self) -> list[Any]: ...
    async def fork(self) -> Any: ...
    async def clear(self) -> None: ...
    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None: ...
    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None: ...
    async def get_context_tokens(self) -> tuple[int, int]: ...
    async def list_sessions(self) -> list[Any]: ...


class Driver(Protocol):
    """One target as the workloads see it: open a database file, hand out stores, fill fast."""

    name: str
    #: Counts the target's thread hops; ``None`` for a target without a database thread.
    hops: HopCounter | None
    #: Whether the target has a paginated listing (:meth:`page`).
    paginates: bool
    #: Whether the target has keyword search (:meth:`search`).
    searches: bool

    def convert(self, data: dict[str, Any]) -> Any:
        """An axio-shaped message dict as this target's message object."""
        ...

    def to_dict(self, message: Any) -> dict[str, Any]:
        """This target's message back as an axio-shaped dict (to verify what was stored)."""
        ...

    async def open(self, path: Path) -> None: ...
    async def close(self) -> None: ...
    def store(self, session_id: str) -> Store: ...

    async def fill(self, sessions: Sequence[tuple[str, Sequence[Any], tuple[int, int]]]) -> None:
        """Create sessions (id, messages, token totals) fast and untimed: prefills only."""
        ...

    async def page(self, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
        """One page of the project's sessions, newest first, and the cursor of the next one."""
        ...

    async def checkpoint(self) -> None:
        """Checkpoint the WAL into the main file and truncate it."""
        ...

    async def search(self, words: str) -> int:
        """Keyword search over the open database; the number of hits."""
        ...

    async def hop(self) -> None:
        """One round trip to the database thread doing nothing (a no-op without a thread)."""
        ...

    async def sqlite_version(self) -> str: ...


# --- workloads ------------------------------------------------------------------------------------


@dataclass
class Context:
    """Everything a workload needs: the spec's scale, the messages, where files go."""

    scale: dict[str, Any]
    prepared: Path
    work: Path
    transcript: list[Any]
    transcript_dicts: list[dict[str, Any]]
    pairs: list[tuple[Any, Any]]

    def cycled(self, start: int, n: int) -> list[Any]:
        """``n`` transcript messages from ``start``, wrapping around (long sessions repeat it)."""
        size = len(self.transcript)
        return [self.transcript[(start + i) % size] for i in range(n)]

    def copy(self, name: str) -> Path:
        """A private copy of a prepared database, for workloads that change it."""
        src = self.prepared / name
        dst = self.work / name
        for suffix in ("-wal", "-shm"):
            Path(f"{dst}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(src, dst)
        # On disk before any timing, as a user's database would be: otherwise the first commit's
        # fsync (of the WAL header) also flushes the copy's dirty pages, which every target paid
        # in its first append.
        fd = os.open(dst, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return dst

    def fresh(self, name: str) -> Path:
        """A path for a new, empty database."""
        dst = self.work / name
        _remove_db(dst)
        return dst


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def session_fill(
    ctx: Context, n_sessions: int, length: int = 2
) -> list[tuple[str, Sequence[Any], tuple[int, int]]]:
    """``n_sessions`` sessions with token totals, each ``length`` messages long.

    Two messages is a question and its reply (from ``pairs``); longer sessions are whole turns
    of the transcript (``length`` a multiple of 4), each session starting at a different turn.
    """
    tokens = [((i * 7919) % 50_000, (i * 104_729) % 9_000) for i in range(n_sessions)]
    if length == 2:
        return [(f"s{i:06d}", ctx.pairs[i % len(ctx.pairs)], tokens[i]) for i in range(n_sessions)]
    if length % 4:
        raise ValueError(f"a session is whole 4-message turns, not {length} messages")
    turns = len(ctx.transcript) // 4
    return [(f"s{i:06d}", ctx.cycled(4 * (i % turns), length), tokens[i]) for i in range(n_sessions)]


class VerificationError(AssertionError):
    """A target stored or returned something other than what the workload gave it."""


def check(cond: bool, what: str) -> None:
    if not cond:
        raise VerificationError(what)


Sessions = list[tuple[str, Sequence[Any], tuple[int, int]]]
Workload = Callable[["Driver", Context], Awaitable[dict[str, Any]]]

#: The prefilled databases: file name -> the sessions (id, messages, token totals) it holds.
DATASETS: dict[str, Callable[[Context], Sessions]] = {
    "history.db": lambda ctx: [
        ("big", ctx.cycled(0, ctx.scale["load_n"]), (1000, 200)),
        ("small", ctx.cycled(0, ctx.scale["fork_small"]), (100, 20)),
    ],
    "long.db": lambda ctx: [("long", ctx.cycled(0, ctx.scale["prefill_n"]), (5000, 900))],
    "list.db": lambda ctx: session_fill(ctx, ctx.scale["list_n"], ctx.scale["list_len"]),
    "page.db": lambda ctx: session_fill(ctx, ctx.scale["page_total"]),
}


async def prepare(
    d: Driver, ctx: Context, names: Sequence[str], datasets: dict[str, Callable[[Context], Sessions]]
) -> dict[str, Any]:
    """Build the named prefilled databases in ``ctx.prepared`` (untimed for the workloads)."""
    built: dict[str, Any] = {}
    for name in names:
        path = ctx.prepared / name
        _remove_db(path)
        t0 = time.perf_counter()
        await d.open(path)
        try:
            await d.fill(datasets[name](ctx))
            await d.checkpoint()
        finally:
            await d.close()
        built[name] = {"seconds": time.perf_counter() - t0, **db_bytes(path)}
    return built


async def w_append(d: Driver, ctx: Context) -> dict[str, Any]:
    """Append N messages one by one to a new session of a new file; then the size on disk."""
    n = ctx.scale["append_n"]
    msgs = ctx.transcript[:n]
    path = ctx.fresh("append.db")
    await d.open(path)
    try:
        store = d.store("fresh")
        out = await time_each(store.append, msgs, d.hops)
        await d.checkpoint()
        out["size"] = db_bytes(path)
        out["size_bytes"] = out["size"]["db"] + out["size"]["db_wal"]
        if d.searches:
            # A keyword index folds its queue of new messages in batches (ours: 1,024 at a time),
            # so the file above may index only part of them. The first search folds the rest:
            # its time, and the size with every message indexed.
            t0 = time.perf_counter()
            hits = await d.search("parser tokenizer")
            out["first_search_us"] = (time.perf_counter() - t0) * 1e6
            check(hits > 0, "append: the first keyword search found nothing")
            await d.checkpoint()
            indexed = db_bytes(path)
            out["size_indexed_bytes"] = indexed["db"] + indexed["db_wal"]
        history = await store.get_history()
        check([d.to_dict(m) for m in history] == ctx.transcript_dicts[:n], "append: history differs")
    finally:
        await d.close()
    return out


async def w_append_at(d: Driver, ctx: Context) -> dict[str, Any]:
    """Append into a session that already holds ``prefill_n`` messages (prefill untimed)."""
    sc = ctx.scale
    path = ctx.copy("long.db")
    await d.open(path)
    try:
        store = d.store("long")
        out = await time_each(store.append, ctx.cycled(sc["prefill_n"], sc["append_at_n"]), d.hops)
        history = await store.get_history()
        total = sc["prefill_n"] + sc["append_at_n"]
        check(len(history) == total, f"append_at: {len(history)} messages, expected {total}")
        check(d.to_dict(history[-1]) == d.to_dict(ctx.cycled(total - 1, 1)[0]), "append_at: last differs")
    finally:
        await d.close()
    return out


async def w_load(d: Driver, ctx: Context) -> dict[str, Any]:
    """Load a ``load_n``-message session, each time on a newly opened connection."""
    n = ctx.scale["load_n"]
    path = ctx.prepared / "history.db"
    expected = [ctx.transcript_dicts[i % len(ctx.transcript_dicts)] for i in range(n)]
    verified = False
    stores: list[Store] = []

    async def reopen() -> None:
        await d.open(path)
        stores[:] = [d.store("big")]

    async def load() -> list[Any]:
        return await stores[0].get_history()

    async def done(history: list[Any]) -> None:
        nonlocal verified
        if not verified:
            check([d.to_dict(m) for m in history] == expected, "load: history differs")
            verified = True
        await d.close()

    return await repeat(
        load, d.hops, budget_s=ctx.scale["budget_s"], max_reps=15, setup=reopen, after=done, collect=True
    )


async def w_list(d: Driver, ctx: Context) -> dict[str, Any]:
    """List every session of the project (``list_n`` of them)."""
    n = ctx.scale["list_n"]
    await d.open(ctx.prepared / "list.db")
    try:
        store = d.store("s000000")

        async def after(infos: list[Any]) -> None:
            check(len(infos) == n, f"list: {len(infos)} sessions, expected {n}")

        return await repeat(
            store.list_sessions, d.hops, budget_s=ctx.scale["budget_s"], after=after, collect=True
        )
    finally:
        await d.close()


async def w_page(d: Driver, ctx: Context) -> dict[str, Any]:
    """One page of ``page_size`` out of ``page_total`` sessions: the first, and one deeper in.

    A target without pagination lists everything instead; the result says so.
    """
    sc = ctx.scale
    size, total = sc["page_size"], sc["page_total"]
    budget = sc["budget_s"]
    await d.open(ctx.prepared / "page.db")
    try:
        if not d.paginates:
            store = d.store("s000000")

            async def all_listed(infos: list[Any]) -> None:
                check(len(infos) == total, f"page: {len(infos)} sessions, expected {total}")

            full = await repeat(
                store.list_sessions, d.hops, budget_s=budget * 2, after=all_listed, collect=True
            )
            return {"first": full, "deep": full, "full_list": True}

        async def full_page(page: tuple[list[Any], str | None]) -> None:
            check(len(page[0]) == size and page[1] is not None, "page: short page or no next cursor")

        first = await repeat(
            lambda: d.page(size, None), d.hops, budget_s=budget, max_reps=300, after=full_page
        )
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(sc["page_depth"]):
            items, cursor = await d.page(size, cursor)
            ids = {_session_id(x) for x in items}
            check(not ids & seen, "page: a session listed on two pages")
            seen |= ids
        deep = await repeat(
            lambda: d.page(size, cursor), d.hops, budget_s=budget, max_reps=300, after=full_page
        )
        return {"first": first, "deep": deep, "full_list": False}
    finally:
        await d.close()


def _session_id(info: Any) -> str:
    return str(info.session_id if hasattr(info, "session_id") else info[0])


async def w_fork(d: Driver, ctx: Context) -> dict[str, Any]:
    """Fork a ``load_n``-message session and a ``fork_small``-message one (children discarded)."""
    sc = ctx.scale
    await d.open(ctx.copy("history.db"))
    out: dict[str, Any] = {}
    try:
        for label, sid, n in (("big", "big", sc["load_n"]), ("small", "small", sc["fork_small"])):
            store = d.store(sid)
            checked = False

            async def discard(child: Any, n: int = n) -> None:
                nonlocal checked
                if not checked:
                    got = len(await child.get_history())
                    check(got == n, f"fork: child holds {got} messages, expected {n}")
                    checked = True
                await child.clear()

            out[label] = await repeat(
                store.fork, d.hops, budget_s=sc["budget_s"], max_reps=200, after=discard
            )
    finally:
        await d.close()
    return out


async def w_tokens(d: Driver, ctx: Context) -> dict[str, Any]:
    """``tokens_n`` calls of add_context_tokens on one session."""
    n = ctx.scale["tokens_n"]
    await d.open(ctx.fresh("tokens.db"))
    try:
        store = d.store("tokens")
        await store.append(ctx.transcript[0])
        await store.set_context_tokens(0, 0)
        out = await time_each(lambda i: store.add_context_tokens(i % 1000, 7), range(n), d.hops)
        expect = (sum(i % 1000 for i in range(n)), 7 * n)
        check(tuple(await store.get_context_tokens()) == expect, "tokens: totals differ")
    finally:
        await d.close()
    return out


async def w_hop(d: Driver, ctx: Context) -> dict[str, Any]:
    """The bare cost of a thread hop on this machine: ``hop_n`` no-op round trips."""
    await d.open(ctx.fresh("hop.db"))
    try:
        return await time_each(lambda _: d.hop(), range(ctx.scale["hop_n"]), d.hops)
    finally:
        await d.close()


WORKLOADS: dict[str, Workload] = {
    "hop": w_hop,
    "append": w_append,
    "append_at": w_append_at,
    "load": w_load,
    "list": w_list,
    "page": w_page,
    "fork": w_fork,
    "tokens": w_tokens,
}

#: The prefilled databases each workload reads.
NEEDS: dict[str, tuple[str, ...]] = {
    "hop": (),
    "append": (),
    "append_at": ("long.db",),
    "load": ("history.db",),
    "list": ("list.db",),
    "page": ("page.db",),
    "fork": ("history.db",),
    "tokens": (),
}


# --- the worker's side of the protocol ------------------------------------------------------------


def load_context(d: Driver, spec: dict[str, Any]) -> Context:
    """Read the spec's messages file and convert every message to the target's own type."""
    with open(spec["messages"], "rb") as f:
        data = json.load(f)
    dicts: list[dict[str, Any]] = data["transcript"]
    return Context(
        scale=spec["scale"],
        prepared=Path(spec["prepared"]),
        work=Path(spec["work"]),
        transcript=[d.convert(m) for m in dicts],
        transcript_dicts=dicts,
        pairs=[(d.convert(a), d.convert(b)) for a, b in data["pairs"]],
    )


async def run_spec(
    d: Driver,
    spec: dict[str, Any],
    workloads: dict[str, Workload] = WORKLOADS,
    datasets: dict[str, Callable[[Context], Sessions]] = DATASETS,
) -> dict[str, Any]:
    """Do what the spec asks (prepare datasets, or run workloads) and return the results.

    Another bench passes its own ``workloads`` and ``datasets`` and reuses the rest.
    """
    ctx = load_context(d, spec)
    ctx.work.mkdir(parents=True, exist_ok=True)
    ctx.prepared.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {
        "target": d.name,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "loadavg_before": os.getloadavg(),
    }
    await d.open(ctx.fresh("version.db"))
    try:
        out["sqlite"] = await d.sqlite_version()
    finally:
        await d.close()
    if spec["phase"] == "prepare":
        out["prepared"] = await prepare(d, ctx, spec["datasets"], datasets)
        return out
    results: dict[str, Any] = {}
    for name in spec["workloads"]:
        t0 = time.perf_counter()
        results[name] = await workloads[name](d, ctx)
        results[name]["wall_s"] = time.perf_counter() - t0
    out["workloads"] = results
    out["loadavg_after"] = os.getloadavg()
    return out


def worker_main(
    make_driver: Callable[[], Driver],
    workloads: dict[str, Workload] = WORKLOADS,
    datasets: dict[str, Callable[[Context], Sessions]] = DATASETS,
) -> None:
    """Entry point of a worker: ``python -m bench.worker_X SPEC.json`` prints one JSON object."""
    if len(sys.argv) != 2:
        raise SystemExit(f"usage: python -m {sys.modules['__main__'].__spec__.name} SPEC.json")
    with open(sys.argv[1], "rb") as f:
        spec = json.load(f)
    try:
        result = asyncio.run(run_spec(make_driver(), spec, workloads, datasets))
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        json.dump(result, sys.stdout)
        raise SystemExit(1) from None
    json.dump(result, sys.stdout)
