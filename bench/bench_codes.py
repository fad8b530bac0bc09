"""Binary code length study: what the sqlite-vec first pass of semantic search buys per byte.

On the 100,000-message database of ``bench/bench_search.py`` (build it once with
``python -m bench.bench_search --db PATH``, then pass ``--db PATH`` here), for codes of 384, 768
and 1,152 bits (one, two or three spreadings of :func:`binary_code`) and 100 to 800 candidates
re-scored from the stored int8 vectors:

- recall@10 against the exact float32 top 10 (tie-aware, as bench_search counts it) per query
  class: 200 held-out user messages, the 20 workload-topic queries, the 30 queries of
  tests/data/retrieval.json, and the paraphrase / identifier / keyword classes of
  tests/data/agent_retrieval.json (58 each); and the ceiling, an exact scan of the int8 vectors;
- the median latency of the vec0 ``MATCH ... AND k = C`` over those codes (a table laid out as
  the store's, in memory) beside a NumPy scan of the float32 vectors, in the same run;
- the bytes a message's code takes in that table (dbstat).

The first pass is emulated with NumPy (codes checked equal to :func:`binary_code` on a sample);
candidates are the C smallest Hamming distances, re-scored by cosine of the int8 vectors.
Run: ``python -m bench.bench_codes --db PATH`` (about 10 minutes here).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import sqlean

from axio_context.embeddings import HashingEmbedder
from axio_context_sqlite.store.vec import _signs, binary_code, load_sqlite_vec

from .bench_search import DIM, WORKLOAD_QUERIES, _set_sessions, held_out_queries, load_vectors, sessions

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.labelled import load_agent_set  # noqa: E402
from tests.support.retrieval_set import load_retrieval_set  # noqa: E402

ROTATIONS = (1, 2, 3)
CANDIDATES = (100, 200, 400, 800)


def codes(x: np.ndarray, rotations: int) -> np.ndarray:
    """:func:`binary_code` of every row with ``rotations`` spreadings, as packed bytes."""
    n = x.shape[1] + (-x.shape[1]) % 8
    v0 = np.zeros((len(x), n), dtype=np.float64)
    v0[:, : x.shape[1]] = x
    parts = []
    for r in range(rotations):
        v = v0 * np.array(_signs(n, r))
        for _ in range(max(1, (n - 1).bit_length())):
            even, odd = v[:, 0::2], v[:, 1::2]
            v = np.concatenate([even + odd, even - odd], axis=1)
        parts.append(v > 0.0)
    return np.packbits(np.concatenate(parts, axis=1), axis=1)


def query_classes(n_held_out: int) -> dict[str, list[str]]:
    rs, agent = load_retrieval_set(), load_agent_set()
    out = {
        "held-out user messages": held_out_queries(n_held_out),
        "workload topics": list(WORKLOAD_QUERIES),
        "retrieval.json": [q.query for q in rs.queries],
    }
    for kind in ("paraphrase", "identifier", "keyword"):
        out[f"agent set, {kind}"] = [q.query for q in agent.queries if q.kind == kind]
    return out


def recall_table(
    x: np.ndarray,
    v8: np.ndarray,
    classes: dict[str, np.ndarray],
    rotations_list: tuple[int, ...] = ROTATIONS,
    candidates: tuple[int, ...] = CANDIDATES,
) -> None:
    print(f"\n== recall@10 against the exact top 10, by query class ({len(x):,} vectors) ==")
    print(f"  {'bits':>5s} {'C':>5s}  " + "  ".join(f"{name[:22]:>22s}" for name in classes))
    exact = {name: [(q, x @ q) for q in qs if q.any()] for name, qs in classes.items()}
    kth = {name: [float(np.partition(-s, 9)[9]) * -1 for _, s in rows] for name, rows in exact.items()}

    def recall(name: str, pick: list[np.ndarray]) -> float:
        rows = exact[name]
        hits = [
            min(10, int((s[got] >= k - 1e-5).sum()))
            for (_, s), got, k in zip(rows, pick, kth[name], strict=True)
        ]
        return statistics.fmean(hits) / 10

    ceiling = {n: recall(n, [np.argsort(-(v8 @ q))[:10] for q, _ in rows]) for n, rows in exact.items()}
    print(f"  {'int8':>5s} {'all':>5s}  " + "  ".join(f"{ceiling[n]:22.3f}" for n in classes))
    for rotations in rotations_list:
        db_codes = codes(x, rotations)
        for i in range(20):
            assert db_codes[i].tobytes() == binary_code(x[i].tobytes(), rotations)
        q_codes = {n: codes(np.stack([q for q, _ in rows]), rotations) for n, rows in exact.items()}
        for c in candidates:
            row = []
            for name, rows in exact.items():
                pick = []
                for (q, _), qc in zip(rows, q_codes[name], strict=True):
                    ham = np.bitwise_count(np.bitwise_xor(db_codes, qc)).sum(axis=1, dtype=np.uint16)
                    cand = np.argpartition(ham, c)[:c]
                    pick.append(cand[np.argsort(-(v8[cand] @ q))[:10]])
                row.append(recall(name, pick))
            print(f"  {rotations * DIM:5d} {c:5d}  " + "  ".join(f"{r:22.3f}" for r in row), flush=True)


def latency_table(x: np.ndarray, reps: int) -> None:
    """vec0 first pass per code length and k, beside NumPy's scan, in one run; and bytes a code."""
    print(f"\n== first pass: vec0 KNN over {len(x):,} codes (in memory) against NumPy, median ms ==")
    rng = np.random.default_rng(5)
    queries = x[rng.choice(len(x), reps, replace=False)]
    np_ms = []
    for q in queries[:3]:  # warm: BLAS threads start on the first product
        x @ q
    for q in queries:
        t0 = time.perf_counter()
        sims = x @ q
        np.argpartition(-sims, 10)[:10]
        np_ms.append(time.perf_counter() - t0)
    print(f"  numpy scan (float32 matmul + top 10): {statistics.median(np_ms) * 1e3:.1f} ms")
    conn = sqlean.connect(":memory:", isolation_level=None)
    assert load_sqlite_vec(conn)
    print(f"  {'bits':>5s} " + " ".join(f"{'k=' + str(c):>8s}" for c in CANDIDATES) + "   bytes a message")
    for rotations in ROTATIONS:
        bits = rotations * DIM
        table = f"codes{bits}"
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING vec0(sid integer, role integer, created_at integer,"
            f" code bit[{bits}])"
        )
        packed = codes(x, rotations)
        conn.execute("BEGIN")
        conn.executemany(
            f"INSERT INTO {table} (rowid, sid, role, created_at, code) VALUES (?, ?, ?, ?, vec_bit(?))",
            ((i + 1, i // 200, i % 4, i, packed[i].tobytes()) for i in range(len(x))),
        )
        conn.execute("COMMIT")
        size = conn.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name LIKE ? ESCAPE '\\'", (f"{table}\\_%",)
        ).fetchone()[0]
        cells = []
        for c in CANDIDATES:
            times = []
            for q in codes(queries, rotations):
                t0 = time.perf_counter()
                sql = f"SELECT rowid FROM {table} WHERE code MATCH vec_bit(?) AND k = ?"
                conn.execute(sql, (q.tobytes(), c)).fetchall()
                times.append(time.perf_counter() - t0)
            cells.append(f"{statistics.median(times) * 1e3:8.1f}")
        print(f"  {bits:5d} " + " ".join(cells) + f"   {size / len(x):,.0f}")
        conn.execute(f"DROP TABLE {table}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--db", required=True, help="database A of bench_search --db (100,000 messages)")
    parser.add_argument("--n", type=int, default=100_000, help="messages bench_search built it with")
    parser.add_argument("--held-out", type=int, default=200)
    parser.add_argument("--reps", type=int, default=20, help="queries timed per latency cell")
    parser.add_argument(
        "--rotations", type=int, nargs="+", default=list(ROTATIONS), help="spreadings (384 bits each)"
    )
    parser.add_argument("--candidates", type=int, nargs="+", default=list(CANDIDATES))
    parser.add_argument("--recall-only", action="store_true", help="skip the vec0 latency table")
    args = parser.parse_args(argv)
    print(
        f"sqlite {sqlean.sqlite_version}, numpy {np.__version__}, {os.cpu_count()} cores,"
        f" load {os.getloadavg()}"
    )
    path = Path(args.db)
    data = sessions(args.n) + _set_sessions(load_retrieval_set()) + _set_sessions(load_agent_set())
    ids, x, _ = load_vectors(path, data)
    conn = sqlean.connect(str(path))
    stored = dict(conn.execute("SELECT id, embedding FROM message_vectors"))
    conn.close()
    v8 = np.stack([np.frombuffer(stored[int(i)], dtype=np.int8) for i in ids]).astype(np.float32)
    v8 /= np.linalg.norm(v8, axis=1, keepdims=True)
    emb = HashingEmbedder(DIM)
    classes = {
        name: np.stack([np.frombuffer(v.tobytes(), dtype=np.float32) for v in emb.embed_sync(qs)])
        for name, qs in query_classes(args.held_out).items()
    }
    recall_table(x, v8, classes, tuple(args.rotations), tuple(args.candidates))
    if not args.recall_only:
        latency_table(x, args.reps)
    print(f"  load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
