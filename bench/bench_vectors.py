"""Vector search study: which sqlite-vec layout answers a 384-d KNN over 100,000 messages fast
enough (target: median < 25 ms) and exactly enough (recall@10 >= 0.95 against exact search).

Layouts, all in one on-disk database, queried warm, rowid = message id; C = candidates:

- ``float``             vec0 ``float[384]`` KNN (L2): exact, sqlite-vec's brute-force scan.
- ``int8+rescore``      vec0 ``int8[384]`` (own scale) KNN for C candidates, exact re-score.
- ``sign384+rescore``   vec0 ``bit[384]`` of ``vec_quantize_binary`` (one sign bit per
                        coordinate) for C candidates, exact re-score from a BLOB table.
- ``code1152+blob-py``   vec0 ``bit[1152]`` of :func:`binary_code` (signs of three fixed orthogonal
                        spreadings) for C candidates; their float32 BLOBs from a plain
                        ``rowid -> BLOB`` table; exact re-score in Python (``brute_force_knn``).
- ``code1152+blob-sql``  the same candidates re-scored in SQLite with ``vec_distance_l2``.
- ``code1152+aux``       the code and an auxiliary (``+``) float32 BLOB column in one vec0 table,
                        with a ``project`` metadata column: one query returns candidates and BLOBs.
- ``code1152+f32col``    vec0 with ``bit[1152]`` and ``float[384]`` columns: candidates from the
                        code, re-scored by a KNN on the float column restricted to them.
- ``numpy``             brute-force NumPy scan of the same float32 matrix (the reference).

Datasets: ``random`` (i.i.d. Gaussian, normalised: the worst case for any approximation),
``workload`` (HashingEmbedder vectors of bench/workload.py transcripts, whose 50-word vocabulary
makes every message look alike; queries are user messages of an unseen transcript) and
``stdlib`` (HashingEmbedder vectors of 100,000 distinct paragraphs of code and docstrings from
this Python's standard library: real text; queries are the first 120 characters of 200 held-out
paragraphs). Also prints recall@5 of each search mode on tests/data/retrieval.json.
Run: ``python -m bench.bench_vectors`` (``--help`` for sizes; about 10 minutes here).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import sqlean

from axio_context.embeddings import HashingEmbedder
from axio_context.messages import searchable_text
from axio_context_sqlite.store.vec import (
    CODE_ROTATIONS,
    _signs,
    binary_code,
    brute_force_knn,
    code_bits,
    load_sqlite_vec,
)

from .workload import iter_transcript

DIM = 384
K = 10


# --- data ------------------------------------------------------------------------------------------


def normalise(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1.0
    return (x / n).astype(np.float32)


def random_dataset(n: int, n_queries: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return normalise(rng.standard_normal((n, DIM))), normalise(rng.standard_normal((n_queries, DIM)))


def hashing_dataset(n: int, n_queries: int, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    path = cache / f"hashing-{n}-{n_queries}.npz" if cache else None
    if path and path.exists():
        data = np.load(path)
        return data["x"], data["q"]
    emb = HashingEmbedder(DIM)
    t0 = time.perf_counter()
    x = np.empty((n, DIM), dtype=np.float32)
    for i, msg in enumerate(iter_transcript(n, seed=7)):
        x[i] = np.frombuffer(emb.embed_one(searchable_text(msg)).tobytes(), dtype=np.float32)
    elapsed = time.perf_counter() - t0
    print(
        f"  embedded {n:,} messages with HashingEmbedder in {elapsed:.1f} s ({elapsed / n * 1e3:.2f} ms each)"
    )
    queries: list[np.ndarray] = []
    for msg in iter_transcript(n_queries * 8, seed=99):
        text = msg.text
        if msg.role == "user" and text:
            queries.append(np.frombuffer(emb.embed_one(text).tobytes(), dtype=np.float32))
        if len(queries) == n_queries:
            break
    q = np.stack(queries)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, x=x, q=q)
    return x, q


def stdlib_paragraphs() -> list[str]:
    """Distinct paragraphs (40-2,000 chars) of the running Python's standard library sources."""
    root = Path(sysconfig.get_paths()["stdlib"])
    seen: set[str] = set()
    out: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for para in re.split(r"\n\s*\n", text):
            para = para.strip()
            if 40 <= len(para) <= 2000 and para not in seen:
                seen.add(para)
                out.append(para)
    return out


def stdlib_dataset(n: int, n_queries: int, cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    path = cache / f"stdlib-{n}-{n_queries}-v2.npz" if cache else None
    if path and path.exists():
        data = np.load(path)
        return data["x"], data["q"]
    texts = stdlib_paragraphs()
    if len(texts) < n + n_queries + 1000:
        sys.exit(
            f"only {len(texts):,} stdlib paragraphs here; "
            f"ask for --n {len(texts) - n_queries - 1000} or fewer"
        )
    order = np.random.default_rng(3).permutation(len(texts))
    emb = HashingEmbedder(DIM)
    t0 = time.perf_counter()
    rows: list[np.ndarray] = []
    skipped = 0
    for i in order[n_queries:]:
        v = np.frombuffer(emb.embed_one(texts[i]).tobytes(), dtype=np.float32)
        if not v.any():  # nothing to embed (only punctuation or function words): never indexed
            skipped += 1
            continue
        rows.append(v)
        if len(rows) == n:
            break
    x = np.stack(rows)
    print(
        f"  embedded {n:,} stdlib paragraphs in {time.perf_counter() - t0:.1f} s "
        f"({skipped} empty ones left out)"
    )
    q = np.stack(
        [np.frombuffer(emb.embed_one(texts[i][:120]).tobytes(), dtype=np.float32) for i in order[:n_queries]]
    )
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, x=x, q=q)
    return x, q


def codes(x: np.ndarray) -> np.ndarray:
    """:func:`binary_code` of every row, computed with NumPy (checked equal to it on a sample)."""
    n = x.shape[1] + (-x.shape[1]) % 8
    v0 = np.zeros((len(x), n))
    v0[:, : x.shape[1]] = x
    parts = []
    for r in range(CODE_ROTATIONS):
        v = v0 * np.array(_signs(n, r))
        for _ in range(max(1, (n - 1).bit_length())):
            even, odd = v[:, 0::2], v[:, 1::2]
            v = np.concatenate([even + odd, even - odd], axis=1)
        parts.append(v > 0.0)
    packed = np.packbits(np.concatenate(parts, axis=1), axis=1)
    for i in range(min(50, len(x))):
        assert packed[i].tobytes() == binary_code(x[i].tobytes()), "numpy and binary_code disagree"
    return packed


# --- layouts ---------------------------------------------------------------------------------------


def int8_scale(x: np.ndarray) -> float:
    return float(np.quantile(np.abs(x), 0.999))


def to_int8(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.rint(x / scale * 127.0), -127, 127).astype(np.int8)


def build(conn: Any, x: np.ndarray, projects: int) -> dict[str, float]:
    """Create and fill every layout's tables; returns seconds spent per table."""
    n = len(x)
    ids = range(1, n + 1)
    blobs = [row.tobytes() for row in x]
    scale = int8_scale(x)
    q8 = [row.tobytes() for row in to_int8(x, scale)]
    t0 = time.perf_counter()
    bq = [row.tobytes() for row in codes(x)]
    times: dict[str, float] = {"codes (numpy)": time.perf_counter() - t0}
    bits = code_bits(DIM)

    def timed(name: str, ddl: str, sql: str, rows: Any) -> None:
        t0 = time.perf_counter()
        conn.execute(ddl)
        conn.executemany(sql, rows)
        conn.commit()
        times[name] = time.perf_counter() - t0

    timed(
        "vectors",
        "CREATE TABLE vectors (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)",
        "INSERT INTO vectors (rowid, embedding) VALUES (?, ?)",
        zip(ids, blobs, strict=True),
    )
    timed(
        "vec_float",
        f"CREATE VIRTUAL TABLE vec_float USING vec0(embedding float[{DIM}])",
        "INSERT INTO vec_float (rowid, embedding) VALUES (?, ?)",
        zip(ids, blobs, strict=True),
    )
    timed(
        "vec_int8",
        f"CREATE VIRTUAL TABLE vec_int8 USING vec0(embedding int8[{DIM}])",
        "INSERT INTO vec_int8 (rowid, embedding) VALUES (?, vec_int8(?))",
        zip(ids, q8, strict=True),
    )
    timed(
        "vec_sign",
        f"CREATE VIRTUAL TABLE vec_sign USING vec0(embedding bit[{DIM}])",
        "INSERT INTO vec_sign (rowid, embedding) VALUES (?, vec_quantize_binary(?))",
        zip(ids, blobs, strict=True),
    )
    timed(
        "vec_code",
        f"CREATE VIRTUAL TABLE vec_code USING vec0(code bit[{bits}])",
        "INSERT INTO vec_code (rowid, code) VALUES (?, vec_bit(?))",
        zip(ids, bq, strict=True),
    )
    timed(
        "vec_code_aux",
        f"CREATE VIRTUAL TABLE vec_code_aux USING vec0(project integer, code bit[{bits}], +embedding blob)",
        "INSERT INTO vec_code_aux (rowid, project, code, embedding) VALUES (?, ?, vec_bit(?), ?)",
        ((i, i % projects, c, b) for i, c, b in zip(ids, bq, blobs, strict=True)),
    )
    timed(
        "vec_code_f32",
        f"CREATE VIRTUAL TABLE vec_code_f32 USING vec0(code bit[{bits}], embedding float[{DIM}])",
        "INSERT INTO vec_code_f32 (rowid, code, embedding) VALUES (?, vec_bit(?), ?)",
        zip(ids, bq, blobs, strict=True),
    )
    conn.execute("ANALYZE")
    conn.commit()
    return times


TABLES = ("vectors", "vec_float", "vec_int8", "vec_sign", "vec_code", "vec_code_aux", "vec_code_f32")


def table_sizes(conn: Any) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
        owner = max((t for t in TABLES if name == t or name.startswith(t + "_")), key=len, default=None)
        if owner is not None:
            sizes[owner] = sizes.get(owner, 0) + size
    return sizes


Search = Callable[[np.ndarray], list[int]]


def layouts(conn: Any, x: np.ndarray, candidates: int) -> dict[str, Search]:
    scale = int8_scale(x)
    c = candidates

    def float_knn(q: np.ndarray) -> list[int]:
        rows = conn.execute(
            "SELECT rowid FROM vec_float WHERE embedding MATCH ? AND k = ?", (q.tobytes(), K)
        ).fetchall()
        return [r[0] for r in rows]

    def rescore_from_blobs(q: np.ndarray, cand: list[Any]) -> list[int]:
        rows = conn.execute(
            "SELECT rowid, embedding FROM vectors WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([r[0] for r in cand]),),
        ).fetchall()
        return [r for r, _ in brute_force_knn(q.tobytes(), rows, K)]

    def int8(q: np.ndarray) -> list[int]:
        q8 = to_int8(q[None, :], scale)[0].tobytes()
        sql = "SELECT rowid FROM vec_int8 WHERE embedding MATCH vec_int8(?) AND k = ?"
        return rescore_from_blobs(q, conn.execute(sql, (q8, c)).fetchall())

    def sign(q: np.ndarray) -> list[int]:
        sql = "SELECT rowid FROM vec_sign WHERE embedding MATCH vec_quantize_binary(?) AND k = ?"
        return rescore_from_blobs(q, conn.execute(sql, (q.tobytes(), c)).fetchall())

    def code_blob_py(q: np.ndarray) -> list[int]:
        sql = "SELECT rowid FROM vec_code WHERE code MATCH vec_bit(?) AND k = ?"
        return rescore_from_blobs(q, conn.execute(sql, (binary_code(q.tobytes()), c)).fetchall())

    def code_blob_sql(q: np.ndarray) -> list[int]:
        rows = conn.execute(
            "WITH cand AS (SELECT rowid FROM vec_code WHERE code MATCH vec_bit(:code) AND k = :c) "
            "SELECT v.rowid FROM cand JOIN vectors v ON v.rowid = cand.rowid "
            "ORDER BY vec_distance_l2(v.embedding, :q), v.rowid LIMIT :k",
            {"code": binary_code(q.tobytes()), "q": q.tobytes(), "c": c, "k": K},
        ).fetchall()
        return [r[0] for r in rows]

    def code_aux(q: np.ndarray) -> list[int]:
        rows = conn.execute(
            "SELECT rowid, embedding FROM vec_code_aux WHERE code MATCH vec_bit(?) AND k = ?",
            (binary_code(q.tobytes()), c),
        ).fetchall()
        return [r for r, _ in brute_force_knn(q.tobytes(), rows, K)]

    def code_f32col(q: np.ndarray) -> list[int]:
        cand = conn.execute(
            "SELECT rowid FROM vec_code_f32 WHERE code MATCH vec_bit(?) AND k = ?",
            (binary_code(q.tobytes()), c),
        ).fetchall()
        rows = conn.execute(
            "SELECT rowid FROM vec_code_f32 WHERE embedding MATCH ? AND k = ? "
            "AND rowid IN (SELECT value FROM json_each(?))",
            (q.tobytes(), K, json.dumps([r[0] for r in cand])),
        ).fetchall()
        return [r[0] for r in rows]

    return {
        "float": float_knn,
        f"int8+rescore C={c}": int8,
        f"sign384+rescore C={c}": sign,
        f"code1152+blob-py C={c}": code_blob_py,
        f"code1152+blob-sql C={c}": code_blob_sql,
        f"code1152+aux C={c}": code_aux,
        f"code1152+f32col C={c}": code_f32col,
    }


# --- measuring -------------------------------------------------------------------------------------


def exact(x: np.ndarray, q: np.ndarray, k: int = K) -> tuple[list[int], float, float]:
    """NumPy brute force: top-k rowids by L2 (x and q unit vectors: by dot product), the k-th
    similarity, and the seconds it took."""
    t0 = time.perf_counter()
    d = x @ q
    top = np.argpartition(-d, k)[:k]
    top = top[np.lexsort((top, -d[top]))]
    elapsed = time.perf_counter() - t0
    return [int(i) + 1 for i in top], float(d[top[-1]]), elapsed


def tie_aware_recall(x: np.ndarray, q: np.ndarray, got: list[int], kth_sim: float) -> float:
    """Share of the k results that are as near as the exact k-th neighbour: real text has exact
    duplicates (the same docstring twice), and any one of equal vectors is a right answer."""
    if not got:
        return 0.0
    sims = x[np.asarray(got[:K]) - 1] @ q
    return min(int(np.sum(sims >= kth_sim - 1e-5)), K) / K


def measure(
    search: Search, x: np.ndarray, queries: np.ndarray, kth: list[float]
) -> tuple[float, float, float]:
    for q in queries[:3]:
        search(q)  # warm the page cache and statement cache
    times: list[float] = []
    recalls: list[float] = []
    for q, kth_sim in zip(queries, kth, strict=True):
        t0 = time.perf_counter()
        got = search(q)
        times.append(time.perf_counter() - t0)
        recalls.append(tie_aware_recall(x, q, got, kth_sim))
    times.sort()
    return (
        statistics.median(times) * 1e3,
        times[int(0.95 * (len(times) - 1))] * 1e3,
        statistics.fmean(recalls),
    )


def filtered_study(conn: Any, x: np.ndarray, queries: np.ndarray, projects: int, candidates: int) -> None:
    """code1152+aux with a ``project = ?`` metadata filter (1 project of ``projects``) vs exact there."""
    pid = 3
    mask = (np.arange(1, len(x) + 1) % projects) == pid
    sub = x[mask]
    times: list[float] = []
    recalls: list[float] = []
    for q in queries:
        kth_sim = float(np.sort(sub @ q)[-K])
        t0 = time.perf_counter()
        rows = conn.execute(
            "SELECT rowid, embedding FROM vec_code_aux WHERE code MATCH vec_bit(?) AND k = ? AND project = ?",
            (binary_code(q.tobytes()), candidates, pid),
        ).fetchall()
        got = [r for r, _ in brute_force_knn(q.tobytes(), rows, K)]
        times.append(time.perf_counter() - t0)
        recalls.append(tie_aware_recall(x, q, got, kth_sim))
    times.sort()
    print(
        f"  {'code1152+aux project=? C=' + str(candidates):28s} {statistics.median(times) * 1e3:8.1f} "
        f"{times[int(0.95 * (len(times) - 1))] * 1e3:8.1f} {statistics.fmean(recalls):9.3f}"
        f"   ({mask.sum():,} rows in the project)"
    )


def session_scan_study(conn: Any, queries: np.ndarray, rows_in_session: int) -> None:
    """Exact Python KNN over one session's BLOBs (the fallback and the session_id filter)."""
    times: list[float] = []
    for q in queries[:50]:
        t0 = time.perf_counter()
        rows = conn.execute(
            "SELECT rowid, embedding FROM vectors WHERE rowid BETWEEN ? AND ?",
            (5000, 5000 + rows_in_session - 1),
        ).fetchall()
        brute_force_knn(q.tobytes(), rows, K)
        times.append(time.perf_counter() - t0)
    times.sort()
    print(
        f"  {'brute_force_knn ' + format(rows_in_session, ',') + ' rows':28s} "
        f"{statistics.median(times) * 1e3:8.1f} {times[int(0.95 * (len(times) - 1))] * 1e3:8.1f} {1.0:9.3f}"
        "   (exact, pure Python: sqlite-vec fallback / one session)"
    )


def run_dataset(name: str, x: np.ndarray, queries: np.ndarray, args: argparse.Namespace) -> None:
    print(f"\n== dataset {name}: {len(x):,} x {x.shape[1]} float32, {len(queries)} queries ==")
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = Path(tmp) / "vectors.db"
        conn = sqlean.connect(path)
        if not load_sqlite_vec(conn):
            sys.exit("sqlite-vec did not load and run on this machine")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA cache_size=-262144")  # 256 MiB: the study is about CPU, not I/O
        times = build(conn, x, args.projects)
        sizes = table_sizes(conn)
        print("  build: " + ", ".join(f"{k} {v:.1f} s" for k, v in times.items()))
        print("  size:  " + ", ".join(f"{t} {sizes.get(t, 0) / 1e6:.0f} MB" for t in TABLES))
        kth: list[float] = []
        np_times: list[float] = []
        for q in queries:
            _, kth_sim, secs = exact(x, q)
            kth.append(kth_sim)
            np_times.append(secs)
        np_times.sort()
        print(f"  {'layout':28s} {'median':>8s} {'p95':>8s} {'recall@10':>9s}   (ms)")
        print(
            f"  {'numpy brute force':28s} {statistics.median(np_times) * 1e3:8.1f} "
            f"{np_times[int(0.95 * (len(np_times) - 1))] * 1e3:8.1f} {1.0:9.3f}"
        )
        seen: set[str] = set()
        for i, c in enumerate(args.candidates):
            for label, search in layouts(conn, x, c).items():
                if label in seen or (i > 0 and label.startswith(("int8", "sign384", "code1152+f32col"))):
                    continue  # the slow or failing layouts are shown at the first C only
                seen.add(label)
                med, p95, recall = measure(search, x, queries, kth)
                print(f"  {label:28s} {med:8.1f} {p95:8.1f} {recall:9.3f}")
        for c in args.candidates:
            filtered_study(conn, x, queries, args.projects, c)
        session_scan_study(conn, queries, 1000)
        conn.close()


def retrieval_figures() -> None:
    """Recall@5 of each mode on tests/data/retrieval.json (in-memory FTS5 + sqlite-vec)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.retrieval_set import build_index, evaluate, load_retrieval_set

    rs = load_retrieval_set()
    emb = HashingEmbedder(DIM)
    conn = sqlean.connect(":memory:")
    load_sqlite_vec(conn)
    build_index(conn, rs, embedder=emb)
    print(
        f"\n== labelled set tests/data/retrieval.json: "
        f"{len(rs.messages)} messages, {len(rs.queries)} queries =="
    )
    kinds = sorted({q.kind for q in rs.queries})
    print(f"  {'recall@5':10s} {'all':>6s} " + " ".join(f"{k:>10s}" for k in kinds))
    for mode in ("keyword", "semantic", "hybrid"):
        per_kind = [evaluate(conn, rs, emb, mode, kinds={k}) for k in kinds]  # type: ignore[arg-type]
        overall = evaluate(conn, rs, emb, mode)  # type: ignore[arg-type]
        print(f"  {mode:10s} {overall:6.3f} " + " ".join(f"{v:10.3f}" for v in per_kind))
    conn.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=100_000, help="vectors per dataset")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, nargs="+", default=[100, 64])
    parser.add_argument("--projects", type=int, default=100, help="distinct project ids (filter study)")
    parser.add_argument(
        "--datasets",
        nargs="+",
        default=["stdlib", "workload", "random"],
        choices=["stdlib", "workload", "random"],
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="keep HashingEmbedder vectors here between runs"
    )
    parser.add_argument("--tmp", default=None, help="directory for the database file")
    args = parser.parse_args(argv)
    print(
        f"sqlite {sqlean.sqlite_version}, sqlite-vec, numpy {np.__version__}, "
        f"{os.cpu_count()} cores; latency per query, warm"
    )
    for name in args.datasets:
        if name == "random":
            x, q = random_dataset(args.n, args.queries)
        elif name == "workload":
            x, q = hashing_dataset(args.n, args.queries, args.cache)
        else:
            x, q = stdlib_dataset(args.n, args.queries, args.cache)
        run_dataset(name, x, q, args)
    retrieval_figures()


if __name__ == "__main__":
    main()
