"""sqlite-vec on a connection: load it, prove it runs, and an exact fallback when it does not.

Importing ``sqlite_vec`` proves little: some wheels ship a binary that fails to load, or loads
and misbehaves, on some platforms. :func:`load_sqlite_vec` therefore loads the extension and
runs a tiny real ``vec0`` KNN in the connection's ``temp`` schema (the database file is not
touched), returning False instead of raising when anything goes wrong. A store then keeps
working with :func:`brute_force_knn`: exact, pure Python, over the float32 BLOBs it keeps.
The same function re-scores binary-quantized candidates exactly.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

import sqlite_vec  # type: ignore[import-untyped]

__all__ = ["brute_force_knn", "load_sqlite_vec", "probe_sqlite_vec"]

_PROBE_TABLE = "temp.axio_vec_probe"


def load_sqlite_vec(conn: Any) -> bool:
    """Load sqlite-vec into a DB-API connection (sqlean or another driver that allows extensions)
    and probe it; True only when a real KNN query ran and returned the right answer."""
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
    except Exception:
        return False
    return probe_sqlite_vec(conn)


def probe_sqlite_vec(conn: Any) -> bool:
    """True when sqlite-vec on ``conn`` answers a 3-row ``vec0`` KNN correctly; never raises.

    Runs in the ``temp`` schema and drops its table, so it writes nothing to the database file;
    a transaction the driver opened implicitly for it is committed (it holds only the probe's
    temp-table work); a transaction the caller already had is left open and untouched.
    """
    try:
        was_in_transaction = bool(conn.in_transaction)
    except Exception:
        return False
    rows: list[Any] | None
    try:
        rows = _probe(conn)
    except Exception:
        rows = None
    try:
        if not was_in_transaction and conn.in_transaction:
            conn.commit()
    except Exception:
        rows = None
    if rows is None or len(rows) != 2:
        return False
    try:
        (id1, d1), (id2, d2) = ((int(r[0]), float(r[1])) for r in rows)
    except (TypeError, ValueError):
        return False
    # Nearest to (0,1,0,0): itself at 0, then (0.6,0.8,0,0) at sqrt(0.36 + 0.04).
    return id1 == 2 and id2 == 3 and abs(d1) < 1e-6 and abs(d2 - math.sqrt(0.4)) < 1e-5


def _probe(conn: Any) -> list[Any]:
    conn.execute(f"DROP TABLE IF EXISTS {_PROBE_TABLE}")
    conn.execute(f"CREATE VIRTUAL TABLE {_PROBE_TABLE} USING vec0(v float[4])")
    try:
        conn.executemany(
            f"INSERT INTO {_PROBE_TABLE}(rowid, v) VALUES (?, ?)",
            [
                (1, array("f", [1.0, 0.0, 0.0, 0.0]).tobytes()),
                (2, array("f", [0.0, 1.0, 0.0, 0.0]).tobytes()),
                (3, array("f", [0.6, 0.8, 0.0, 0.0]).tobytes()),
            ],
        )
        return list(
            conn.execute(
                f"SELECT rowid, distance FROM {_PROBE_TABLE} WHERE v MATCH ? AND k = 2 ORDER BY distance",
                (array("f", [0.0, 1.0, 0.0, 0.0]).tobytes(),),
            ).fetchall()
        )
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {_PROBE_TABLE}")


def _as_vector(value: bytes | Sequence[float]) -> Sequence[float]:
    if isinstance(value, bytes | bytearray | memoryview):
        vec = array("f")
        vec.frombytes(value)
        return vec
    return value


def brute_force_knn(
    query: Sequence[float], rows: Iterable[tuple[int, bytes | Sequence[float]]], k: int
) -> list[tuple[int, float]]:
    """The ``k`` rows nearest ``query`` by Euclidean (L2) distance, as vec0 reports it: exact.

    ``rows`` are ``(rowid, vector)`` with the vector as a float32 BLOB or a sequence of floats;
    the result is ``(rowid, distance)`` nearest first, ties broken by the smaller rowid. Cost is
    one C-level ``math.dist`` per row: a few milliseconds per thousand 384-d vectors.
    """
    if k <= 0:
        return []
    q = _as_vector(query)
    dim = len(q)

    def scored() -> Iterable[tuple[float, int]]:
        for rowid, value in rows:
            vec = _as_vector(value)
            if len(vec) != dim:
                raise ValueError(f"row {rowid} has a {len(vec)}-d vector, the query is {dim}-d")
            yield math.dist(q, vec), rowid

    return [(rowid, dist) for dist, rowid in heapq.nsmallest(k, scored())]
