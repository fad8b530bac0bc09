"""Search benchmark: keyword, semantic and hybrid search over 100,000 stored messages.

Builds a database of bench/workload.py agent transcripts (500 sessions of 200 messages in 10
projects, 384-d HashingEmbedder vectors) two ways and times both: ``append_many`` with the
embedder (embedding on append, batches of 50), and ``append_many`` without it followed by
``Database.reindex``. The labelled set (tests/data/retrieval.json) is added to the first
database as 7 more sessions. Then, on that database, warm:

- latency (median, p95) of ``Database.search`` in each mode over a set of queries people type
  (the labelled set's 30 queries, 20 about the workload's topics, identifiers, absent words),
  the whole call: thread hop, ranking, decoding the hits and their snippets;
- a brute-force NumPy scan of the same vectors (read from the database) for the same queries,
  and recall@10 of semantic search against it (tie-aware: any vector as near as the exact
  10th counts), over those queries and 200 held-out user messages;
- the cost embedding adds to ``append`` (one message, and a four-message turn) on that database;
- recall@5 of each mode on the labelled set, alone in its own database and among the 100,000.

Run: ``python -m bench.bench_search`` (``--quick``: 10,000 messages, a fraction of the work).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sqlean

from axio_context import Message
from axio_context.embeddings import Embedder, HashingEmbedder, SentenceTransformerEmbedder
from axio_context.errors import SearchQueryError
from axio_context.messages import text_columns
from axio_context.onnx_minilm import OnnxMiniLMEmbedder
from axio_context.testing import text
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.search import codescan
from axio_context_sqlite.search.query import check_bounds
from axio_context_sqlite.store.embedding import embedding_text

from .workload import iter_transcript, transcript

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.labelled import load_agent_set, measure, store_set, table  # noqa: E402
from tests.support.retrieval_set import RetrievalSet, load_retrieval_set, recall_at  # noqa: E402

DIM = 384
PER_SESSION = 200
PROJECTS = 10
BATCH = 50
MODES = ("keyword", "semantic", "hybrid")
#: The session the append-cost figures append to (both with and without the embedder).
APPEND_SESSION = "append-with"
TARGET_MS = {"keyword": 50.0, "semantic": 25.0, "hybrid": 75.0}

#: Queries about the workload's topics, the way a person types them, plus identifiers and words
#: that occur nowhere (the workload draws from a 50-word vocabulary).
WORKLOAD_QUERIES = [
    "parser fails on nested brackets",
    "tokenizer state machine",
    "unicode escapes",
    "trailing commas edge cases",
    "database migration index",
    "query latency",
    "cache invalidation",
    "retry with backoff after a timeout",
    "permission denied",
    "socket timeout",
    "config file path",
    "empty input",
    "refactor the tokenizer and add tests",
    "why does the parser fail on unicode escapes in the config file",
    "src/mod_42.py",
    "call_000123",
    "run_tests",
    "read_file src/mod_7.py",
    "kubernetes pod keeps restarting",
    "react useEffect infinite loop",
]


def ms(samples: Sequence[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s) * 1e3, s[min(len(s) - 1, round(0.95 * (len(s) - 1)))] * 1e3


# --- building ------------------------------------------------------------------------------------


def sessions(n: int) -> list[tuple[str, str, list[Message]]]:
    out = []
    for s in range(max(1, n // PER_SESSION)):
        out.append((f"w{s:05d}", f"/work/project-{s % PROJECTS}", transcript(PER_SESSION, seed=1000 + s)))
    return out


async def build(path: Path, data: list[tuple[str, str, list[Message]]], embed: bool) -> float:
    """Store every session with append_many batches; returns seconds."""
    emb = HashingEmbedder(DIM) if embed else None
    t0 = time.perf_counter()
    async with connect(path) as conn:
        for sid, project, messages in data:
            store = SQLiteContextStore(conn, sid, project, embedder=emb)
            for i in range(0, len(messages), BATCH):
                await store.append_many(messages[i : i + BATCH])
    return time.perf_counter() - t0


async def add_labelled(path: Path, rs: RetrievalSet, emb: Embedder | None = None) -> None:
    emb = emb or HashingEmbedder(DIM)
    async with connect(path) as conn:
        by: dict[tuple[str, str], list[Message]] = {}
        for m in rs.messages:
            by.setdefault((m.session_id, m.project), []).append(m.message)
        for (sid, project), messages in by.items():
            await SQLiteContextStore(conn, sid, project, embedder=emb).append_many(messages)


def session_length(path: Path, session_id: str) -> int:
    """Messages of one session (0 when absent): an earlier run's append-cost session is no part of
    the workload a read-only run counts."""
    if not path.is_file():
        return 0
    conn = sqlean.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT next_position FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return 0 if row is None else int(row[0])
    finally:
        conn.close()


async def has_session(path: Path, session_id: str) -> bool:
    conn = sqlean.connect(str(path))
    try:
        return conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None
    finally:
        conn.close()


# --- measuring -----------------------------------------------------------------------------------


async def timed(call: Callable[[], Awaitable[Any]], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t0)
    return out


async def latency(db: Database, queries: list[str], reps: int) -> dict[str, tuple[float, float]]:
    emb = HashingEmbedder(DIM)
    result: dict[str, tuple[float, float]] = {}
    variants: list[tuple[str, str, dict[str, Any]]] = [(m, m, {}) for m in MODES]
    variants += [
        ("keyword, --role user", "keyword", {"role": "user"}),
        ("semantic, --project", "semantic", {"project": "/work/project-3"}),
        ("hybrid, --session", "hybrid", {"session_id": "w00042"}),
    ]
    variants += [
        ("semantic, vec0 KNN", "semantic", {}),
        ("semantic, --project, vec0", "semantic", {"project": "/work/project-3"}),
    ]
    for label, mode, extra in variants:
        with vec0_only(label.endswith(("vec0 KNN", "vec0"))):
            for q in queries[:3]:
                await db.search(q, mode=mode, embedder=emb, **extra)  # type: ignore[arg-type]
            samples: list[float] = []
            for q in queries:
                samples += await timed(
                    lambda q=q, mode=mode, extra=extra: db.search(q, mode=mode, embedder=emb, **extra),  # type: ignore[misc]
                    reps,
                )
        result[label] = ms(samples)
    return result


@contextlib.contextmanager
def vec0_only(on: bool) -> Iterator[None]:
    """With ``on``: semantic search without :mod:`.codescan` (its ``nearest`` says it cannot read
    the codes), so vec0's KNN answers as before it, for the same-run comparison."""
    saved = codescan.nearest
    if on:
        codescan.nearest = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        codescan.nearest = saved


async def first_search(path: Path, queries: list[str]) -> dict[str, tuple[float, float]]:
    """A connection's first semantic search (what a command line pays: the codes read, and the
    candidates' vectors) and its second (the vectors read into memory), against vec0's first."""
    emb = HashingEmbedder(DIM)
    first: dict[str, list[float]] = {"first search": [], "second search": [], "first search, vec0 KNN": []}
    for q in queries:
        for vec0 in (False, True):
            with vec0_only(vec0):
                async with open_database(path, readonly=True) as db:
                    for label in ("first search", "second search")[: 1 if vec0 else 2]:
                        t0 = time.perf_counter()
                        await db.search(q, mode="semantic", embedder=emb)
                        first[label + (", vec0 KNN" if vec0 else "")].append(time.perf_counter() - t0)
    return {label: ms(samples) for label, samples in first.items()}


def load_vectors(
    path: Path, data: list[tuple[str, str, list[Message]]]
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The exact float32 vectors of every embedded message (embedded again: the database keeps
    int8), by message id, for the NumPy scan the semantic search is measured against."""
    conn = sqlean.connect(str(path))
    try:
        stored = {r[0] for r in conn.execute("SELECT id FROM message_vectors")}
        sids = dict(conn.execute("SELECT id, sid FROM sessions").fetchall())
    finally:
        conn.close()
    emb = HashingEmbedder(DIM)
    keyed: list[tuple[int, bytes]] = []
    for name, _, messages in data:
        base = sids[name] << 32
        texts = [embedding_text(*text_columns(m)) for m in messages]
        for pos, v in enumerate(emb.embed_sync(texts)):
            if base | pos in stored:
                keyed.append((base | pos, v.tobytes()))
    keyed.sort()
    ids = np.array([k for k, _ in keyed], dtype=np.int64)
    x = np.frombuffer(b"".join(b for _, b in keyed), dtype=np.float32).reshape(len(keyed), DIM)
    return ids, x, sids


async def semantic_recall(
    db: Database, vectors: tuple[np.ndarray, np.ndarray, dict[str, int]], queries: list[str]
) -> tuple[float, list[float], int]:
    """Recall@10 of semantic search against NumPy's exact top 10, and NumPy's times."""
    ids, x, sids = vectors
    emb = HashingEmbedder(DIM)
    recalls: list[float] = []
    np_times: list[float] = []
    used = 0
    for query in queries:
        [v] = emb.embed_sync([query])
        q = np.frombuffer(v.tobytes(), dtype=np.float32)
        if not q.any():
            continue
        t0 = time.perf_counter()
        sims = x @ q
        top = np.argpartition(-sims, 10)[:10]
        top = top[np.argsort(-sims[top])]
        np_times.append(time.perf_counter() - t0)
        kth = float(sims[top[-1]])
        hits = await db.search(query, mode="semantic", k=10, embedder=emb)
        got = [(sids[h.session_id] << 32) | h.position for h in hits]
        pos = np.searchsorted(ids, got)
        # a hit outside the exact set (none is, unless the database holds more) counts as a miss
        near = sum(
            1
            for g, p in zip(got, pos, strict=True)
            if p < len(ids) and ids[p] == g and float(sims[p]) >= kth - 1e-5
        )
        recalls.append(min(near, 10) / 10)
        used += 1
    return statistics.fmean(recalls), np_times, used


async def append_cost(db: Database, reps: int) -> dict[str, tuple[float, float]]:
    """Median/p95 of appending one message and one four-message turn, with and without embedding."""
    turn = transcript(4 * reps, seed=4242)
    single = [text("user", m.text or "a question about the parser") for m in turn[::4]][:reps]
    out: dict[str, tuple[float, float]] = {}
    for label, emb in (("without embedder", None), ("with embedder", HashingEmbedder(DIM))):
        store = SQLiteContextStore(db.connection, APPEND_SESSION, "/work/append", embedder=emb)
        await store.append(text("user", "warm up"))
        one = [0.0] * 0
        for m in single:
            t0 = time.perf_counter()
            await store.append(m)
            one.append(time.perf_counter() - t0)
        turns = []
        for i in range(0, len(turn), 4):
            t0 = time.perf_counter()
            await store.append_many(turn[i : i + 4])
            turns.append(time.perf_counter() - t0)
        out[f"append, 1 message, {label}"] = ms(one)
        out[f"append_many, 4-message turn, {label}"] = ms(turns)
    return out


async def labelled_recall(db: Database, rs: RetrievalSet, emb: Embedder | None = None) -> dict[str, float]:
    emb = emb or HashingEmbedder(DIM)
    out = {}
    for mode in MODES:
        scores = []
        for q in rs.queries:
            hits = await db.search(q.query, mode=mode, k=5, embedder=emb)  # type: ignore[arg-type]
            scores.append(recall_at([f"{h.session_id}:{h.position}" for h in hits], q.relevant, 5))
        out[mode] = statistics.fmean(scores)
    return out


def held_out_queries(n: int) -> list[str]:
    out = []
    for m in iter_transcript(n * 8, seed=99):
        if m.role == "user" and m.text:
            query = " ".join(m.text.split()[:24])
            try:
                check_bounds(query, False)  # a query people could type: within the search's bounds
            except SearchQueryError:
                continue
            out.append(query)
        if len(out) == n:
            break
    return out


# --- main ----------------------------------------------------------------------------------------


async def labelled_only(args: argparse.Namespace, tmp: Path) -> None:
    """Only the labelled sets' recall@5 / MRR (``--labelled-only``): on a reused database
    holding them, opened read-only (nothing is written to it, so another run's database can be
    measured as it is), and alone in small databases of their own. Seconds, not a rebuild."""
    rs, agent = load_retrieval_set(), load_agent_set()
    path = Path(args.db)
    if not session_length(path, rs.messages[0].session_id):
        raise SystemExit(f"--labelled-only needs --db naming a database that holds the labelled sets: {path}")
    print(f"load average {os.getloadavg()[0]:.1f}; {path} read-only")
    async with open_database(path, readonly=True) as db:
        status = await db.index_status()
        total = (
            status.messages - len(rs.messages) - len(agent.messages) - session_length(path, APPEND_SESSION)
        )
        emb: Embedder = HashingEmbedder(DIM)
        if status.model is not None and not status.model.startswith("axio-hashing-"):
            emb = await db.embedder()  # the database's own (MiniLM after a --minilm-among run)
        print(f"  {status.messages:,} messages, embedded with {emb.model}")
        mixed = await labelled_recall(db, rs, emb)
        agent_mixed = await measure(db, agent, emb)
    small = tmp / "labelled.db"
    await add_labelled(small, rs, emb)
    async with open_database(small) as db:
        alone = await labelled_recall(db, rs, emb)
    recall_table(rs, alone, mixed, total)
    agent_small = tmp / "agent.db"
    await store_set(agent_small, agent, emb)
    async with open_database(agent_small) as db:
        agent_alone = await measure(db, agent, emb)
    name = "hashing" if emb.model.startswith("axio-hashing-") else "minilm"
    print(f"\n== tests/data/agent_retrieval.json ({len(agent.queries)} queries): recall@5 / MRR ==")
    print(table(agent_alone, f"{name}, alone"))
    print(table(agent_mixed, f"{name}, among {total:,}"))


def recall_table(rs: RetrievalSet, alone: dict[str, float], mixed: dict[str, float], total: int) -> None:
    print(f"\n== recall@5 on tests/data/retrieval.json ({len(rs.queries)} queries) ==")
    print(f"  {'mode':10s} {'alone':>7s} {'among ' + format(total, ','):>16s}")
    for mode in MODES:
        print(f"  {mode:10s} {alone[mode]:7.3f} {mixed[mode]:16.3f}")


async def run(args: argparse.Namespace, tmp: Path) -> None:
    if args.labelled_only:
        await labelled_only(args, tmp)
        return
    n = args.n
    rs = load_retrieval_set()
    a, b = tmp / "append.db", tmp / "reindex.db"
    agent = load_agent_set()
    reuse = False
    if args.db is not None:
        a = Path(args.db)
        reuse = a.exists()
    # the transcripts are needed to build, and for the exact vectors; not to reuse without them
    data = [] if reuse and args.no_exact else sessions(n)
    total = max(1, n // PER_SESSION) * PER_SESSION
    print(
        f"sqlite {sqlean.sqlite_version}, numpy {np.__version__}, {os.cpu_count()} cores,"
        f" load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"workload: {total // PER_SESSION} sessions x {PER_SESSION} = {total:,} messages,"
        f" {DIM}-d HashingEmbedder"
    )
    if reuse:
        print(f"  database A: reusing {a} (built by an earlier run with --db)")
    else:
        secs_a = await build(a, data, embed=True)
        print(f"  build A, append_many({BATCH}) with embedder: {secs_a:7.1f} s ({total / secs_a:,.0f} msg/s)")
    if not args.no_reindex_build and not reuse:
        secs_b0 = await build(b, data, embed=False)
        async with open_database(b) as db:
            t0 = time.perf_counter()
            report = await db.reindex(HashingEmbedder(DIM), batch_size=256)
            secs_b1 = time.perf_counter() - t0
        print(
            f"  build B, append_many({BATCH}) without:       {secs_b0:7.1f} s ({total / secs_b0:,.0f} msg/s)"
            f" + reindex {secs_b1:.1f} s ({report.embedded:,} embedded) = {secs_b0 + secs_b1:.1f} s"
        )
        b.unlink()
    if reuse:  # an earlier run's append-cost messages are no part of the workload: they go
        async with connect(a) as conn:
            await SQLiteContextStore(conn, APPEND_SESSION, "/work/append").delete_session()
    if not reuse or not await has_session(a, rs.messages[0].session_id):
        # (a reused database may be a build stopped midway: the labelled sets go in now)
        await add_labelled(a, rs)
        await store_set(a, agent, HashingEmbedder(DIM))

    queries = [q.query for q in rs.queries] + WORKLOAD_QUERIES
    async with open_database(a) as db:
        status = await db.index_status()
        if reuse:  # what it holds, not what was asked for
            total = status.messages - len(rs.messages) - len(agent.messages)
        print(
            f"  database A: {status.messages:,} messages, {status.embedded:,} embedded, semantic via "
            f"{status.semantic}, {a.stat().st_size / 1e6:,.0f} MB"
        )
        print(
            f"\n== search latency, warm, {len(queries)} queries x {args.reps} (k=10),"
            f" load average {os.getloadavg()[0]:.1f} =="
        )
        print(f"  {'':28s} {'median':>8s} {'p95':>8s}  target (median)")
        lat = await latency(db, queries, args.reps)
        groups = {
            "held-out user messages": held_out_queries(args.held_out),
            "queries on workload topics": WORKLOAD_QUERIES,
            "labelled-set queries": [q.query for q in rs.queries],
        }
        space = await db.vector_space()
        print(
            f"  vectors: {space.vectors / 1e6:,.1f} MB int8 + {space.codes / 1e6:,.1f} MB codes"
            f" ({space.total / max(space.embedded, 1):,.0f} B a message)"
        )
        recalls: dict[str, tuple[float, list[float], int]] = {}
        if not args.no_exact:
            vectors = load_vectors(a, data + _set_sessions(rs) + _set_sessions(agent))
            recalls = {name: await semantic_recall(db, vectors, qs) for name, qs in groups.items()}
            del vectors
        for label, (med, p95) in lat.items():
            target = TARGET_MS.get(label)
            verdict = "" if target is None else f"< {target:.0f} ms {'ok' if med < target else 'MISSED'}"
            print(f"  {label:28s} {med:8.1f} {p95:8.1f}  {verdict}")
        print(f"\n  a new connection's semantic search, {len(queries[:10])} queries (median, p95 ms):")
        for label, (med, p95) in (await first_search(a, queries[:10])).items():
            print(f"  {label:28s} {med:8.1f} {p95:8.1f}")
        if recalls:
            exact_figures(recalls)
        else:
            print("  (--no-exact: no NumPy scan, no recall@10 against exact)")

        print(f"\n== append cost on this database, {args.append_reps} appends ==")
        for label, (med, p95) in (await append_cost(db, args.append_reps)).items():
            print(f"  {label:46s} median {med:7.2f} ms  p95 {p95:7.2f} ms")

        mixed = await labelled_recall(db, rs)
        agent_mixed = await measure(db, agent, HashingEmbedder(DIM))
    small = tmp / "labelled.db"
    await add_labelled(small, rs)
    async with open_database(small) as db:
        alone = await labelled_recall(db, rs)
    recall_table(rs, alone, mixed, total)
    agent_small = tmp / "agent.db"
    await store_set(agent_small, agent, HashingEmbedder(DIM))
    async with open_database(agent_small) as db:
        agent_alone = await measure(db, agent, HashingEmbedder(DIM))
    print(f"\n== tests/data/agent_retrieval.json ({len(agent.queries)} queries): recall@5 / MRR ==")
    print(table(agent_alone, "hashing, alone"))
    print(table(agent_mixed, f"hashing, among {total:,}"))
    if args.minilm or args.minilm_onnx:
        await minilm_figures(tmp, agent, a if args.minilm_among else None, onnx=args.minilm_onnx)


def exact_figures(recalls: dict[str, tuple[float, list[float], int]]) -> None:
    """The NumPy scan's latency and semantic search's recall@10 against it, per query group."""
    np_ms = ms([t for _, times, _ in recalls.values() for t in times])
    print(
        f"  {'numpy brute force (exact)':28s} {np_ms[0]:8.1f} {np_ms[1]:8.1f}"
        "  (same vectors in memory, matmul + top 10 only)"
    )
    print("\n  semantic recall@10 against the exact top 10 (target >= 0.95):")
    for name, (recall10, _, used) in recalls.items():
        print(f"    {name:28s} {recall10:.3f}  ({used} queries)")
    overall = sum(r * n for r, _, n in recalls.values()) / sum(n for _, _, n in recalls.values())
    print(f"    {'all':28s} {overall:.3f}")


def _set_sessions(rs: RetrievalSet) -> list[tuple[str, str, list[Message]]]:
    by: dict[tuple[str, str], list[Message]] = {}
    for m in rs.messages:
        by.setdefault((m.session_id, m.project), []).append(m.message)
    return [(sid, project, messages) for (sid, project), messages in by.items()]


async def minilm_figures(tmp: Path, agent: RetrievalSet, among: Path | None, *, onnx: bool = False) -> None:
    """all-MiniLM-L6-v2 (the ``minilm`` extra, or ``minilm-onnx`` with ``onnx``): embedding
    throughput, and the labelled set's recall alone (and with ``among``, re-embedded among that
    database's messages)."""
    emb: Embedder = await (OnnxMiniLMEmbedder.load() if onnx else SentenceTransformerEmbedder.load())
    texts = [m.text or "" for m in transcript(2_000, seed=77)]
    texts = [t for t in texts if t.strip()]
    await emb.embed(texts[:64])
    t0 = time.perf_counter()
    await emb.embed(texts)
    secs = time.perf_counter() - t0
    print(f"\n== minilm ({emb.model}) ==")
    print(f"  embedding: {len(texts) / secs:,.0f} messages/s ({len(texts)} workload texts)")
    path = tmp / "agent-minilm.db"
    await store_set(path, agent, emb)
    async with open_database(path) as db:
        print(table(await measure(db, agent, emb), "minilm, alone"))
    if among is not None:
        async with open_database(among) as db:
            t0 = time.perf_counter()
            report = await db.reindex(emb, rebuild=True, batch_size=256)
            secs = time.perf_counter() - t0
            print(f"  reindex --rebuild with minilm: {report.embedded:,} messages in {secs:,.0f} s")
            print(table(await measure(db, agent, emb), "minilm, among"))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="10,000 messages, fewer repetitions")
    parser.add_argument("--n", type=int, default=None, help="messages (default 100,000)")
    parser.add_argument("--tmp", default=None, help="directory for the database files")
    parser.add_argument("--minilm", action="store_true", help="also measure the minilm extra")
    parser.add_argument(
        "--minilm-onnx", action="store_true", help="also measure the minilm-onnx extra (no torch)"
    )
    parser.add_argument(
        "--minilm-among", action="store_true", help="with --minilm(-onnx): re-embed the big database too"
    )
    parser.add_argument("--no-reindex-build", action="store_true", help="skip the reindex build (1M)")
    parser.add_argument("--no-exact", action="store_true", help="skip the NumPy scan and recall@10 (1M)")
    parser.add_argument(
        "--labelled-only",
        action="store_true",
        help="with --db: only the labelled sets' recall, the database opened read-only (seconds)",
    )
    parser.add_argument(
        "--db", default=None, help="keep database A at this path; reuse it when it exists (skips building)"
    )
    args = parser.parse_args(argv)
    if args.n is None:
        args.n = 10_000 if args.quick else 100_000
    args.reps = 1 if args.quick else 3
    args.held_out = 50 if args.quick else 200
    args.append_reps = 50 if args.quick else 200
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
