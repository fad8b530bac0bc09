"""The first pass of semantic search in NumPy: the Hamming distance of the query's binary code to
every stored code, read from sqlite-vec's own chunk tables and kept in memory per connection;
the :data:`WIDE` nearest ranked by cosine of their int8 vectors (the caller re-scores the best
exactly in SQL).

Why not vec0's KNN: it picks each 1,024-code chunk's ``k`` nearest by ``k`` passes over the
chunk, so the candidates asked for, not the distances, set its cost (at 100,000 messages,
19 ms for 100 candidates and 216 ms for 800). Here the distances take 1.3 ms and picking the
nearest 6,400 by counting 0.25 ms, so enough candidates for recall cost less than vec0's 100
(``bench/bench_search.py``, ``bench/bench_codes.py``).

The codes stay sqlite-vec's: appends, deletes, prune and reindex maintain its ``vec0`` table as
before, and this module only reads the table's chunks: per chunk, a validity bitmap and the
rowids (``{table}_chunks``), the codes (``{table}_vector_chunks00``) and each integer metadata
column (``{table}_metadatachunksNN``). The layout is checked on every load (the table's columns,
blob sizes, and one code compared with what vec0 itself returns); anything else and
:func:`nearest` returns None, so the caller asks vec0 as before.

The copy (about 180 bytes a message: code, rowid, session, role and time; from a connection's
second search, within :data:`VECTOR_BYTES`, the int8 vectors too) is refreshed when the
connection has seen a change since its last search: ``PRAGMA data_version`` moves on another
connection's commit, ``total_changes()`` on its own writes, ``schema_version`` when a table was
made anew. A refresh re-reads the chunk rows (8 KB per 1,024 codes) and only the codes (and
vectors) of the chunks whose bitmap or rowids changed, so a search after an append reads one
chunk, not the table.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from typing import Any, Final

import msgspec
import numpy as np
import numpy.typing as npt

from ..store.indexing import CODES_TABLE
from ..store.vec import quantize, query_code

__all__ = ["CODE_BYTES", "VECTOR_BYTES", "WIDE", "CodeScan", "Filters", "held", "nearest"]

#: Codes nearest by Hamming distance ranked by cosine in memory, per search: enough that the
#: short queries of the labelled sets, whose tenth neighbour is at a cosine of 0.15 to 0.2 where
#: sign codes barely tell neighbours apart, keep 0.95 of their exact top 10 (bench_codes).
WIDE: Final = 6400
#: The most int8 vector bytes held per connection (about 700,000 messages of 384 dimensions).
VECTOR_BYTES: Final = 256 * 2**20
#: The most bytes of codes and their columns held per connection (about 5,900,000 messages at
#: 1,152 bits); a larger table is searched with vec0's own KNN.
CODE_BYTES: Final = 2**30

#: The metadata columns a search filters on (vec0 keeps each integer column in its own chunks).
_FILTERED: Final = ("sid", "role", "created_at")

_COLUMN = re.compile(r"^(\w+)\s+(?:(integer|int|float|double|text|boolean)|bit\[(\d+)\])$", re.IGNORECASE)
_CHUNK_SIZE = re.compile(r"^chunk_size\s*=\s*(\d+)$", re.IGNORECASE)


class LayoutError(Exception):
    """sqlite-vec's chunk tables are not laid out as this module reads them."""


def _word(nbytes: int) -> npt.DTypeLike:
    """The widest unsigned integer dividing a code's bytes (XOR and popcount run per word)."""
    for size, dtype in ((8, np.uint64), (4, np.uint32), (2, np.uint16)):
        if nbytes % size == 0:
            return dtype
    return np.uint8


class _Layout:
    """What the ``CREATE VIRTUAL TABLE`` statement says: the code width and which metadata
    chunk table holds each filtered column."""

    def __init__(self, sql: str) -> None:
        inside = sql[sql.index("(") + 1 : sql.rindex(")")]
        metadata: list[str] = []
        bits, self.chunk_size = 0, 1024  # vec0's default chunk size
        for part in (p.strip() for p in inside.split(",")):
            if (option := _CHUNK_SIZE.match(part)) is not None:
                self.chunk_size = int(option.group(1))
                continue
            m = _COLUMN.match(part)
            if m is None:
                raise LayoutError(f"unexpected column {part!r}")
            if m.group(3):
                bits = int(m.group(3))
            else:
                metadata.append(m.group(1).lower())
        if bits == 0 or bits % 8 or any(name not in metadata for name in _FILTERED):
            raise LayoutError("no bit column, or a filtered column missing")
        if self.chunk_size <= 0 or self.chunk_size % 8:
            raise LayoutError("an unexpected chunk size")
        self.sql = sql
        self.code_bytes = bits // 8
        # only integer metadata columns have chunk tables of 8 bytes a row; a text column
        # (an outdated table's project) has its own, counted in the numbering all the same
        self.metadata = {name: metadata.index(name) for name in _FILTERED}


class Filters(msgspec.Struct, frozen=True):
    """What a semantic search leaves out: by role, time, owning session, id ranges (a fork's
    lineage), and one message."""

    role: int | None = None
    since_ms: int | None = None
    sids: Sequence[int] | None = None
    ranges: Sequence[tuple[int, int]] | None = None
    exclude: int | None = None


class CodeScan:
    """One connection's copy of the codes table and, from its second search and within
    :data:`VECTOR_BYTES`, of the int8 vectors, by chunk slot: see the module docstring."""

    def __init__(self, layout: _Layout, dimension: int, schema: int) -> None:
        self.layout, self.dimension, self.schema = layout, dimension, schema
        self.chunk_size = layout.chunk_size
        self.rows = 0  # rows in use: the slots up to the highest one taken, whole
        self.token: tuple[int, int, int] | None = None
        self.searches = 0
        self.slots: dict[int, int] = {}  # chunk_id -> slot
        self.keys: dict[int, bytes] = {}  # chunk_id -> validity + rowids, to see what changed
        self.latest = b""  # the newest chunk's codes: vec0 reuses a freed slot only there
        self.word = _word(layout.code_bytes)
        self.words = layout.code_bytes // np.dtype(self.word).itemsize
        # word-major (one row per word of the code): a distance is then a sum over a few long
        # contiguous runs, 3.4x faster than summing each code's words (100,000 codes)
        self.codes = np.zeros((self.words, 0), dtype=self.word)
        self.ids = np.zeros(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)
        self.dead = np.zeros(0, dtype=np.int64)  # rows in use that hold no live code
        self.columns = {name: np.zeros(0, dtype=np.int64) for name in _FILTERED}
        self.vectors: npt.NDArray[np.int8] | None = None  # held from the second search

    def _grow(self, slots: int) -> None:
        rows = slots * self.chunk_size
        if rows <= len(self.ids):
            return
        rows = max(rows, 2 * len(self.ids))

        def grown(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            b = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
            b[: len(a)] = a
            return b

        codes = np.zeros((self.words, rows), dtype=self.word)
        codes[:, : self.codes.shape[1]] = self.codes
        self.codes, self.ids, self.live = codes, grown(self.ids), grown(self.live)
        self.columns = {name: grown(a) for name, a in self.columns.items()}
        if self.vectors is not None:
            self.vectors = grown(self.vectors)

    def refresh(self, c: Any) -> None:
        """Re-read what changed since the last search (every chunk on the first)."""
        table, n = CODES_TABLE, self.chunk_size
        changed: list[tuple[int, bytes, bytes]] = []
        seen: list[int] = []
        for chunk_id, validity, rowids in c.execute(f"SELECT chunk_id, validity, rowids FROM {table}_chunks"):
            seen.append(chunk_id)
            if len(validity) != n // 8 or len(rowids) != 8 * n:
                raise LayoutError("chunk bitmap or rowids of an unexpected size")
            if self.keys.get(chunk_id) != validity + rowids:
                changed.append((chunk_id, validity, rowids))
        if len(seen) * n * (self.layout.code_bytes + 8 * (1 + len(_FILTERED))) > CODE_BYTES:
            raise LayoutError(f"{len(seen) * n:,} codes are more than a connection holds")
        for chunk_id in set(self.slots) - set(seen):  # a chunk vec0 dropped
            slot = self.slots.pop(chunk_id)
            self.keys.pop(chunk_id)
            self.live[slot * n : (slot + 1) * n] = False
        newest = seen[-1] if seen else None
        if newest is not None and all(chunk_id != newest for chunk_id, _, _ in changed):
            # a message deleted and stored again can take its old slot in the newest chunk:
            # the same bitmap and rowids, another code
            size = n * self.layout.code_bytes
            if self._blobs(c, f"{table}_vector_chunks00", "vectors", [newest], size)[newest] != self.latest:
                validity, rowids = c.execute(
                    f"SELECT validity, rowids FROM {table}_chunks WHERE chunk_id = ?", (newest,)
                ).fetchone()
                changed.append((newest, validity, rowids))
        if changed:
            self._read(c, changed, newest)
        self.rows = (max(self.slots.values()) + 1) * n if self.slots else 0
        self.dead = np.flatnonzero(~self.live[: self.rows])

    def _read(self, c: Any, changed: list[tuple[int, bytes, bytes]], newest: int | None) -> None:
        table, n = CODES_TABLE, self.chunk_size
        new = [chunk_id for chunk_id, _, _ in changed if chunk_id not in self.slots]
        free = sorted(set(range(len(self.slots) + len(new))) - set(self.slots.values()))
        self.slots.update(zip(new, free, strict=False))
        self._grow(max(self.slots.values()) + 1)
        ids = [chunk_id for chunk_id, _, _ in changed]
        codes = self._blobs(c, f"{table}_vector_chunks00", "vectors", ids, n * self.layout.code_bytes)
        columns = {
            name: self._blobs(c, f"{table}_metadatachunks{index:02d}", "data", ids, 8 * n)
            for name, index in self.layout.metadata.items()
        }
        for chunk_id, validity, rowids in changed:
            rows = slice(self.slots[chunk_id] * n, (self.slots[chunk_id] + 1) * n)
            self.codes[:, rows] = np.frombuffer(codes[chunk_id], dtype=self.word).reshape(n, self.words).T
            self.ids[rows] = np.frombuffer(rowids, dtype=np.int64)
            self.live[rows] = np.unpackbits(
                np.frombuffer(validity, dtype=np.uint8), bitorder="little"
            ).astype(bool)
            for name in _FILTERED:
                self.columns[name][rows] = np.frombuffer(columns[name][chunk_id], dtype=np.int64)
            self.keys[chunk_id] = validity + rowids
            if chunk_id == newest:
                self.latest = codes[chunk_id]
        if self.vectors is not None:
            slots = [self.slots[chunk_id] for chunk_id in ids]
            self._hold(c, np.concatenate([np.arange(s * n, (s + 1) * n) for s in slots]))

    def hold_vectors(self, c: Any) -> None:
        """Read every live row's int8 vector into memory, if they fit in :data:`VECTOR_BYTES`."""
        if self.vectors is not None or len(self.ids) * self.dimension > VECTOR_BYTES:
            return
        self.vectors = np.zeros((len(self.ids), self.dimension), dtype=np.int8)
        self._hold(c, np.arange(self.rows))

    def _hold(self, c: Any, rows: npt.NDArray[np.intp]) -> None:
        assert self.vectors is not None
        rows = rows[self.live[rows]]
        self.vectors[rows] = 0
        self._fetch(c, self.ids[rows], self.vectors, rows, whole=4 * len(rows) > self.rows)

    def _fetch(
        self,
        c: Any,
        ids: npt.NDArray[np.int64],
        out: npt.NDArray[np.int8],
        at: npt.NDArray[np.intp],
        whole: bool = False,
    ) -> None:
        """Write the int8 vector of message ``ids[i]`` into ``out[at[i]]`` (left as it is where
        one has none), from ``message_vectors``: a float32 vector of an older database quantized
        as sqlite-vec compares it. ``whole``: in one pass over the table (most of it is wanted)."""
        dim = self.dimension
        order = np.argsort(ids)
        wanted = ids[order]
        if whole:
            source = c.execute("SELECT id, embedding FROM message_vectors")
        else:
            source = c.execute(
                "SELECT id, embedding FROM message_vectors WHERE id IN (SELECT value FROM json_each(?))",
                (msgspec.json.encode(wanted.tolist()).decode(),),
            )
        found: list[tuple[int, bytes]] = []
        for mid, blob in source:
            if len(blob) == dim:
                found.append((mid, blob))
            elif len(blob) == 4 * dim:
                with contextlib.suppress(ValueError):  # zeros or NaN: nothing to compare
                    found.append((mid, quantize(bytes(blob))))
        if not found or not len(wanted):
            return
        mids = np.fromiter((mid for mid, _ in found), dtype=np.int64, count=len(found))
        where = np.minimum(np.searchsorted(wanted, mids), len(wanted) - 1)
        hit = np.flatnonzero(wanted[where] == mids)
        packed = b"".join(found[i][1] for i in hit)
        out[at[order[where[hit]]]] = np.frombuffer(packed, dtype=np.int8).reshape(len(hit), dim)

    @staticmethod
    def _blobs(c: Any, table: str, column: str, ids: Sequence[int], size: int) -> dict[int, bytes]:
        """One blob per chunk id, each of ``size`` bytes: looked up by id when a few are wanted
        (a search after an append), else in one pass over the table (the first search)."""
        wanted = set(ids)
        if len(wanted) > 16:
            rows = c.execute(f"SELECT rowid, {column} FROM {table}")
        else:
            marks = ",".join("?" * len(wanted))
            rows = c.execute(f"SELECT rowid, {column} FROM {table} WHERE rowid IN ({marks})", sorted(wanted))
        out: dict[int, bytes] = {}
        for chunk_id, blob in rows:
            if chunk_id in wanted:
                if len(blob) != size:
                    raise LayoutError(f"{table} holds a blob of an unexpected size")
                out[int(chunk_id)] = blob
        if len(out) != len(wanted):
            raise LayoutError(f"{table} lacks a chunk")
        return out

    def check(self, c: Any) -> None:
        """Compare one stored code with what vec0 itself returns for its rowid."""
        live = np.flatnonzero(self.live)
        if not len(live):
            return
        row = int(live[-1])
        got = c.execute(f"SELECT code FROM {CODES_TABLE} WHERE rowid = ?", (int(self.ids[row]),)).fetchone()
        if got is None or bytes(got[0]) != self.codes[:, row].tobytes():
            raise LayoutError("a code read from the chunks differs from vec0's")

    def _passing(self, f: Filters) -> npt.NDArray[np.bool_]:
        rows = self.rows
        keep = self.live[:rows]
        if f.role is not None:
            keep = keep & (self.columns["role"][:rows] == f.role)
        if f.since_ms is not None:
            keep = keep & (self.columns["created_at"][:rows] >= f.since_ms)
        if f.sids is not None:
            keep = keep & np.isin(self.columns["sid"][:rows], np.asarray(f.sids, dtype=np.int64))
        ids = self.ids[:rows]
        if f.ranges is not None:
            inside = np.zeros(rows, dtype=bool)
            for lo, hi in f.ranges:
                inside |= (ids >= lo) & (ids < hi)
            keep = keep & inside
        if f.exclude is not None:
            keep = keep & (ids != f.exclude)
        return keep

    def search(
        self, c: Any, code: bytes, count: int, f: Filters, query: bytes | None = None, wide: int = 0
    ) -> tuple[list[int], bool]:
        """The rowids to re-score exactly, and whether that is every code passing the filters.

        Without ``query``: the ``count`` nearest ``code`` by Hamming distance, nearest first.
        With ``query`` (the int8 vector): the ``wide`` (default :data:`WIDE`) nearest by Hamming
        distance ranked by cosine with it (from the vectors in memory, or read for them), and
        the ``count`` best.
        """
        filtered = any(v is not None for v in (f.role, f.since_ms, f.sids, f.ranges, f.exclude))
        keep = self._passing(f) if filtered else None
        passing = int(np.count_nonzero(keep)) if keep is not None else self.rows - len(self.dead)
        wide = count if query is None else max(count, wide or WIDE)
        if wide >= passing:
            pick = np.flatnonzero(keep if keep is not None else self.live[: self.rows])
        else:
            far = 8 * self.layout.code_bytes + 1  # farther than any code: a row not to pick
            distance = np.zeros(self.rows, dtype=np.uint16)
            for word, q in zip(self.codes[:, : self.rows], np.frombuffer(code, dtype=self.word), strict=True):
                distance += np.bitwise_count(word ^ q)
            distance[~keep if keep is not None else self.dead] = far
            # distances are small integers: the nearest ``wide`` by counting, in a fifth of the
            # time of a partition (every row up to the distance that reaches ``wide``, then as
            # many at that distance as are still wanted, by position)
            reach = int(np.searchsorted(np.cumsum(np.bincount(distance, minlength=far + 1)), wide))
            below = np.flatnonzero(distance < reach)
            pick = np.concatenate([below, np.flatnonzero(distance == reach)[: wide - len(below)]])
            if query is None:
                pick = pick[np.lexsort((self.ids[pick], distance[pick]))]
        if query is not None and len(pick) > count:
            if self.vectors is not None:
                vectors = self.vectors[pick].astype(np.float32)
            else:
                held = np.zeros((len(pick), self.dimension), dtype=np.int8)
                self._fetch(c, self.ids[pick], held, np.arange(len(pick)))
                vectors = held.astype(np.float32)
            q = np.frombuffer(query, dtype=np.int8).astype(np.float32)
            with np.errstate(invalid="ignore", divide="ignore"):
                cosine = (vectors @ q) / np.sqrt(np.einsum("ij,ij->i", vectors, vectors))
            # a vector of zeros, or of NaN (stored before those were refused): last
            pick = pick[np.argsort(-np.nan_to_num(cosine, nan=-2.0), kind="stable")[:count]]
        return [int(i) for i in self.ids[pick]], count >= passing


#: The attribute a connection keeps its copy in (:class:`..store.files.RawConnection` takes one).
_ATTRIBUTE: Final = "axio_codescan"


def held(c: Any) -> CodeScan | None:
    """This connection's copy, if it keeps one."""
    scan: CodeScan | None = getattr(c, _ATTRIBUTE, None)
    return scan


def _keep(c: Any, scan: CodeScan | None) -> None:
    with contextlib.suppress(AttributeError):  # the driver's own connection keeps none
        setattr(c, _ATTRIBUTE, scan)


def _scan_for(c: Any, dimension: int) -> CodeScan:
    """This connection's copy, refreshed; a new one when the schema changed (a codes table
    dropped and made again holds other codes under the same chunk ids). A connection that cannot
    keep one (the driver's own class) gets a fresh copy each search."""
    version, schema = (
        int(c.execute(f"PRAGMA {p}").fetchone()[0]) for p in ("data_version", "schema_version")
    )
    token = (version, schema, int(c.total_changes))
    scan = held(c)
    if scan is None or scan.schema != schema or scan.dimension != dimension:
        row = c.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (CODES_TABLE,)
        ).fetchone()
        if row is None:
            raise LayoutError("no codes table")
        scan = CodeScan(_Layout(str(row[0])), dimension, schema)
        scan.refresh(c)
        scan.check(c)
    elif scan.token != token:
        scan.refresh(c)
    scan.token = token
    scan.searches += 1
    if scan.searches == 2:
        # a connection that searches again is a long-lived one (an agent, the browser): the
        # vectors are worth reading once; a command line's one search reads only its candidates'
        scan.hold_vectors(c)
    _keep(c, scan)
    return scan


def nearest(
    c: Any, vector: bytes, count: int, filters: Filters, rescore: bool = False
) -> tuple[list[int], bool] | None:
    """:meth:`CodeScan.search` on this connection's codes for a float32 query ``vector`` (with
    ``rescore``: ranked by cosine); None when their layout is not the one this module reads (the
    caller then asks vec0)."""
    dimension = len(vector) // 4
    try:
        scan = _scan_for(c, dimension)
    except (LayoutError, ValueError):
        _keep(c, None)
        return None
    code = query_code(vector, scan.layout.code_bytes)
    return scan.search(c, code, count, filters, quantize(vector) if rescore else None)
