"""sqlite-vec on a connection: load it, prove it runs, binary codes for a fast coarse search,
and an exact fallback when the extension does not run.

Importing ``sqlite_vec`` proves little: some wheels ship a binary that fails to load, or loads
and misbehaves, on some platforms. :func:`load_sqlite_vec` therefore loads the extension and
runs a tiny real ``vec0`` KNN in the connection's ``temp`` schema (the database file is not
touched), returning False instead of raising when anything goes wrong. A store then keeps
working with :func:`brute_force_knn`: exact, pure Python, over the float32 BLOBs it keeps.
The same function re-scores binary-quantized candidates exactly.

Why binary codes of our own: an exact float ``vec0`` KNN over 100,000 x 384 vectors takes
about 75 ms here, and sqlite-vec's ``vec_quantize_binary`` (one sign bit per coordinate) loses
too much: 100 candidates by Hamming distance held about half of the true top 10, for random
and hashing-embedder vectors alike (the latter are two-thirds zeros, and a zero has no sign).
:func:`binary_code` first spreads the vector with fixed pseudo-random orthogonal maps (random
signs, then log2(d) butterfly stages), three times, and keeps the 3*d sign bits: 100 candidates
re-scored exactly then hold 99.7% of the true top 10 for real text (stdlib paragraphs) and
97.6% for the synthetic workload, in about 21 ms; i.i.d. random vectors, which have no real
neighbours, only 58%. ``bench/bench_vectors.py`` has the figures.
"""

from __future__ import annotations

import heapq
import importlib.util
import math
import os
from array import array
from collections.abc import Iterable, Sequence
from functools import lru_cache
from hashlib import blake2b
from typing import Any

__all__ = [
    "CODE_ROTATIONS",
    "binary_code",
    "binary_codes",
    "brute_force_knn",
    "code_bits",
    "is_int8",
    "load_deferred",
    "load_or_defer",
    "load_sqlite_vec",
    "probe_sqlite_vec",
    "quantize",
    "query_code",
    "unit_vector",
]

_PROBE_TABLE = "temp.axio_vec_probe"


#: The (driver, library) pairs whose probe passed in this process: the same library on the same
#: SQLite build answers the same, so later connections skip the probe (0.8 ms of a 0.24 ms load,
#: most of a cold open's sqlite-vec cost) and only check the functions are registered.
_PROVEN: set[tuple[str, str]] = set()


def load_or_defer(conn: Any) -> bool:
    """At a connection's open: whether sqlite-vec runs on it, loading it only when needed now.

    Loading costs 0.3-0.4 ms of every cold open, and only semantic search and its ``vec0`` codes
    table use it. When an earlier connection of this driver in this process proved the library
    and the database holds no ``vec0`` table yet, the load waits for the first
    :func:`load_deferred` (asked by every use of the codes); otherwise it is loaded now."""
    path = _cached_path()
    if path is None or (type(conn).__module__, path) not in _PROVEN or _has_vec_tables(conn):
        return load_sqlite_vec(conn)
    try:
        conn.axio_vec_deferred = True
    except AttributeError:  # a driver connection that takes no attributes: loaded now
        return load_sqlite_vec(conn)
    return True


def load_deferred(conn: Any) -> bool:
    """Load sqlite-vec on a connection whose open deferred it (:func:`load_or_defer`); False for
    any other connection, or when it does not load."""
    if not getattr(conn, "axio_vec_deferred", False):
        return False
    conn.axio_vec_deferred = False
    return load_sqlite_vec(conn)


def _has_vec_tables(conn: Any) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING vec0%' LIMIT 1"
        ).fetchone()
        is not None
    )


_path: list[str | None] = []


def _cached_path() -> str | None:
    """:func:`_extension_path`, looked up once per process (None: not installed)."""
    if not _path:
        try:
            _path.append(_extension_path())
        except ImportError:
            _path.append(None)
    return _path[0]


def load_sqlite_vec(conn: Any) -> bool:
    """Load sqlite-vec into a DB-API connection (sqlean or another driver that allows extensions)
    and probe it; True only when a real KNN query ran and returned the right answer (on this
    connection, or on an earlier one of the same driver and library in this process)."""
    try:
        path = _extension_path()
        conn.enable_load_extension(True)
        try:
            conn.load_extension(path)
        finally:
            conn.enable_load_extension(False)
    except Exception:
        return False
    proven = (type(conn).__module__, path)
    if proven in _PROVEN:
        try:
            conn.execute("SELECT vec_version()").fetchone()
        except Exception:
            return False
        return True
    ok = probe_sqlite_vec(conn)
    if ok:
        _PROVEN.add(proven)
    return ok


def _extension_path() -> str:
    """The loadable library the ``sqlite-vec`` package ships, found without importing the package:
    its ``__init__`` imports NumPy whenever it is installed (for a helper this module does not
    use), 50 ms on every connection opened, while only semantic search needs NumPy."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("sqlite-vec is not installed")
    return os.path.join(spec.submodule_search_locations[0], "vec0")


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


#: Independent spreadings whose sign bits make one code: 3 gives 3*d bits (1,152 for 384-d).
#: Measured on 100,000 x 384 (bench/bench_vectors.py): with 100 candidates re-scored, 2 kept
#: recall@10 at 0.990 on real text and 0.945 on the synthetic workload; 3 kept 0.997 and 0.976
#: for about the same latency, since sqlite-vec's cost grows with k more than with bits.
CODE_ROTATIONS = 3


def _padded(dimension: int) -> int:
    return dimension + (-dimension) % 8  # whole bytes per rotation


def code_bits(dimension: int, rotations: int = CODE_ROTATIONS) -> int:
    """Length in bits of :func:`binary_code` for ``dimension``: the ``bit[N]`` of the vec0 column."""
    return rotations * _padded(dimension)


@lru_cache(maxsize=16)
def _signs(dimension: int, rotation: int) -> tuple[float, ...]:
    out = []
    for i in range(dimension):
        digest = blake2b(f"axio-code\x1f{rotation}\x1f{i}".encode(), digest_size=1).digest()
        out.append(1.0 if digest[0] & 1 else -1.0)
    return tuple(out)


def _spread(v: list[float], signs: tuple[float, ...]) -> list[float]:
    """An orthogonal map (up to scale): random signs, then ceil(log2 n) constant-geometry
    butterflies, each turning pairs (2i, 2i+1) into their sum and difference."""
    v = [x * s for x, s in zip(v, signs, strict=True)]
    n = len(v)
    for _ in range(max(1, (n - 1).bit_length())):
        even, odd = v[0::2], v[1::2]
        v = [a + b for a, b in zip(even, odd, strict=True)] + [a - b for a, b in zip(even, odd, strict=True)]
    return v


def binary_code(vector: bytes | Sequence[float], rotations: int = CODE_ROTATIONS) -> bytes:
    """The bit code of a vector for a ``vec0`` ``bit[code_bits(d)]`` column (insert and query
    with ``vec_bit(?)``): the signs of ``rotations`` fixed orthogonal spreadings of it.

    Two vectors' Hamming distance then tracks the angle between them whatever their shape
    (sparse hashing vectors, dense model vectors). Deterministic everywhere: the maps come from
    BLAKE2b, the arithmetic is additions and sign flips. Pure Python, about 0.3 ms for 384-d.
    """
    values = list(_as_vector(vector))
    n = _padded(len(values))
    values.extend([0.0] * (n - len(values)))
    bits = 0
    for r in range(rotations):
        for x in _spread(values, _signs(n, r)):
            bits = (bits << 1) | (x > 0.0)
    return bits.to_bytes(rotations * n // 8, "big")


def query_code(vector: bytes, code_bytes: int) -> bytes:
    """:func:`binary_code` of a float32 query vector with ``code_bytes`` bytes, in NumPy (0.5 ms
    in Python): the same float64 sums in the same order, so the same bits. NumPy is imported
    here, by the first semantic search, not by every connection that loads this module."""
    import numpy as np

    values = np.frombuffer(vector, dtype=np.float32).astype(np.float64)
    n = len(values) + (-len(values)) % 8
    values = np.concatenate([values, np.zeros(n - len(values))])
    parts = []
    for rotation in range(8 * code_bytes // n):
        v = values * np.asarray(_signs(n, rotation))
        for _ in range(max(1, (n - 1).bit_length())):
            even, odd = v[0::2], v[1::2]
            v = np.concatenate([even + odd, even - odd])
        parts.append(v > 0.0)
    return np.packbits(np.concatenate(parts)).tobytes()


def binary_codes(vectors: Any, rotations: int = CODE_ROTATIONS, chunk: int = 256) -> list[bytes]:
    """:func:`binary_code` of each row of a float32 matrix (``(n, d)``, NumPy) at once: the same
    float64 sums in the same order, so the same bits (a test compares), in about 9 us a 384-d
    vector against 1.2 ms one at a time in Python. Rows go ``chunk`` at a time through two
    scratch buffers, so the butterflies stay in cache and allocate nothing."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    rows, dimension = matrix.shape
    n = _padded(dimension)
    half = n // 2
    levels = max(1, (n - 1).bit_length())
    signs = [np.asarray(_signs(n, r)) for r in range(rotations)]
    out = np.empty((rows, rotations * n // 8), dtype=np.uint8)
    first, second = np.empty((chunk, n)), np.empty((chunk, n))
    for start in range(0, rows, chunk):
        block = matrix[start : start + chunk]
        k = len(block)
        bits = np.empty((k, rotations * n), dtype=bool)
        for r in range(rotations):
            v, w = first[:k], second[:k]
            v[:, :dimension] = block
            v[:, dimension:] = 0.0
            v *= signs[r]
            for _ in range(levels):
                np.add(v[:, 0::2], v[:, 1::2], out=w[:, :half])
                np.subtract(v[:, 0::2], v[:, 1::2], out=w[:, half:])
                v, w = w, v
            np.greater(v, 0.0, out=bits[:, r * n : (r + 1) * n])
        out[start : start + k] = np.packbits(bits, axis=1)
    return [row.tobytes() for row in out]


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
    the result is ``(rowid, distance)`` nearest first, ties broken by the smaller rowid. A row
    whose distance is NaN (its vector, or the query, holds NaN) is left out, as sqlite-vec's
    NULL distance is. Cost is one C-level ``math.dist`` per row: a few milliseconds per
    thousand 384-d vectors.
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
            dist = math.dist(q, vec)
            if not math.isnan(dist):
                yield dist, rowid

    return [(rowid, dist) for dist, rowid in heapq.nsmallest(k, scored())]


# --- stored vectors: int8 ----------------------------------------------------------------------
#
# An embedding is stored as one signed byte per coordinate, scaled so that its largest coordinate
# is +-127 (a quarter of float32's space: 384 bytes for 384 dimensions). The scale is not kept:
# every comparison is by cosine, which no positive scale changes, so sqlite-vec compares two
# int8 vectors directly (``vec_distance_cosine(vec_int8(a), vec_int8(b))``). Measured on 100,000
# hashing-embedder vectors (bench/bench_search.py), re-scoring from int8 keeps recall@10
# against the float32 ranking above 0.99. Databases written before hold float32 BLOBs
# (4 bytes a coordinate); the length tells them apart, and ``reindex`` converts them.


def quantize(vector: bytes | Sequence[float]) -> bytes:
    """The int8 form of a non-zero finite vector: each coordinate times 127 / max |x|, rounded."""
    values = _as_vector(vector)
    top = max(map(abs, values), default=0.0)
    if not top or not math.isfinite(top):
        raise ValueError("only a non-zero finite vector can be quantized")
    scale = 127.0 / top
    return array("b", [max(-127, min(127, round(x * scale))) for x in values]).tobytes()


def is_int8(blob: bytes, dimension: int) -> bool:
    """Whether a stored embedding is int8 (one byte a coordinate) rather than float32."""
    return len(blob) == dimension


def unit_vector(blob: bytes, dimension: int) -> list[float]:
    """A stored embedding (int8 or float32) as floats of norm 1 (a float32 one as stored)."""
    if not is_int8(blob, dimension):
        return list(_as_vector(blob))
    values = array("b", bytes(blob))
    norm = math.sqrt(math.fsum(x * x for x in values)) or 1.0
    return [x / norm for x in values]
