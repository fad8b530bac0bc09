"""Semantic search's first pass in memory (``search/codescan.py``), part by part, on a database
bench_search kept (``--db``): reading the codes into a connection's copy, the Hamming distances
with the nearest 6,400 picked, then ranking those by cosine with their vectors read from the file
(what a search does past ``VECTOR_BYTES``) and held in memory (below it).

Run: ``python -m bench.bench_codescan --db PATH`` (a 1,000,000-message database: about a minute).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from array import array
from collections.abc import Callable

import sqlean

from axio_context.embeddings import HashingEmbedder
from axio_context_sqlite.search import codescan
from axio_context_sqlite.store.files import RawConnection
from axio_context_sqlite.store.vec import load_sqlite_vec, quantize, query_code

from .bench_search import DIM, WORKLOAD_QUERIES


def median_ms(fn: Callable[[bytes], object], vectors: list[bytes], reps: int) -> float:
    times = []
    for v in vectors:
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(v)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--db", required=True, help="a database bench_search built with --db")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}; {args.db}")
    conn = sqlean.connect(f"file:{args.db}?mode=ro", uri=True, factory=RawConnection)
    assert load_sqlite_vec(conn)
    conn.execute("PRAGMA mmap_size = 4294967296")
    embedded = HashingEmbedder(DIM).embed_sync(WORKLOAD_QUERIES[:10])
    vectors = [array("f", v).tobytes() for v in embedded]
    t0 = time.perf_counter()
    scan = codescan._scan_for(conn, DIM)
    took = (time.perf_counter() - t0) * 1e3
    held = sum(a.nbytes for a in (scan.codes, scan.ids, scan.live, *scan.columns.values()))
    print(f"  codes read into the copy: {took:,.0f} ms, {held / 1e6:,.0f} MB held")
    nothing = codescan.Filters()

    def code(v: bytes) -> bytes:
        return query_code(v, scan.layout.code_bytes)

    ms = median_ms(lambda v: scan.search(conn, code(v), codescan.WIDE, nothing), vectors, args.reps)
    print(f"  distances, the nearest {codescan.WIDE:,} picked: {ms:.1f} ms")
    ms = median_ms(lambda v: scan.search(conn, code(v), 100, nothing, quantize(v)), vectors, args.reps)
    print(f"  and ranked by cosine, their vectors read from the file: {ms:.1f} ms")
    codescan.VECTOR_BYTES = 2**40  # the bench's own: hold them whatever their size
    t0 = time.perf_counter()
    scan.hold_vectors(conn)
    print(f"  vectors read into the copy: {(time.perf_counter() - t0) * 1e3:,.0f} ms")
    ms = median_ms(lambda v: scan.search(conn, code(v), 100, nothing, quantize(v)), vectors, args.reps)
    print(f"  and ranked by cosine, their vectors held: {ms:.1f} ms")
    conn.close()


if __name__ == "__main__":
    main()
