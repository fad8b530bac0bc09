"""Vector collections in the SQLite file: :class:`SQLiteVectorStore`, ravi's ``VectorStore``:
the shared :class:`~axio_context.memory.vectors_sql.SQLVectorStore` over the plans below.

Each document row of a large collection keeps a binary code of its embedding
(:func:`..store.vec.binary_code`, the one the message search uses; a small one's are empty, see
:mod:`.vector_codes`) and its JSON metadata; the float32 embedding sits in a table of
its own. A search is the message search's quantized-then-rescored path, with the metadata
filter inside the query: one pass over the collection's rows that match the filter (SQLite's
``json_type``/``json_extract`` in the ``WHERE``) orders them by Hamming distance of codes
(sqlite-vec's ``vec_distance_hamming``) and keeps ``candidates``; those are re-scored exactly
by cosine similarity. The filter being part of that pass, a filtered search returns ``limit``
hits whenever that many documents match. When the filtered rows are no more than
``candidates``, the result is exact. Without sqlite-vec the store re-scores every matching row
(exact, slower).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any, Final

import aiosqlite

from axio_context.copying import CollectionRow, DocumentRow, canonical_json
from axio_context.embeddings import Embedder
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.errors import DimensionMismatchError
from axio_context.memory.metadata import Condition
from axio_context.memory.transfer_sql import stored_json
from axio_context.memory.vectors import CollectionInfo, Document, SearchResult, cosine_similarity
from axio_context.memory.vectors_sql import (
    DEFAULT_CANDIDATES,
    NewDocument,
    SQLVectorStore,
    VectorQuery,
    find_collection,
)
from axio_context.sql import Dialect, ExecuteMany, Native, Plan, Row, Rows, Value, decode_object, encode_json
from axio_context.sql.expiry import live

from ..store.indexing import vec_available
from ..store.keys import now_ms
from ..store.runner import SQLiteRunner
from ..store.vec import binary_code, binary_codes
from . import vector_codes, vector_scan

__all__ = ["DEFAULT_CANDIDATES", "STATEMENTS", "SQLiteVectorStore", "Statements", "filter_sql"]

_NUMBER: Final = "json_type(metadata, ?) IN ('integer', 'real')"
_RANGE_SQL: Final = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_INT64: Final = range(-(2**63), 2**63)


def _number(value: Any) -> Any:
    # SQLite keeps a JSON integer past 64 bits as REAL, and cannot bind a Python int that large.
    return float(value) if isinstance(value, int) and value not in _INT64 else value


# Each comparison reads the value with ``->>`` first (one JSONB lookup, false for most rows) and
# checks its JSON type only then: SQLite stops at the first false term. ``->>`` alone would let
# true equal 1, a range take strings (TEXT sorts above numbers) and a string equal an array's text.
def _equal_sql(path: str, value: Any) -> tuple[str, list[Any]]:
    if value is None:
        return "json_type(metadata, ?) = 'null'", [path]
    if isinstance(value, bool):
        return f"json_type(metadata, ?) = '{'true' if value else 'false'}'", [path]
    if isinstance(value, str):
        return "((metadata ->> ?) = ? AND json_type(metadata, ?) = 'text')", [path, value, path]
    return f"((metadata ->> ?) = ? AND {_NUMBER})", [path, _number(value), path]


def filter_sql(conditions: Sequence[Condition]) -> tuple[str, list[Any]]:
    """The ``WHERE`` text (over a ``metadata`` column) and parameters of checked conditions,
    meaning exactly what :func:`axio_context.memory.metadata.matches` means."""
    parts: list[str] = []
    params: list[Any] = []
    for cond in conditions:
        path = f'$."{cond.field}"'
        if cond.op == "$eq":
            sql, ps = _equal_sql(path, cond.value)
        elif cond.op == "$in":
            pieces = [_equal_sql(path, v) for v in cond.value]
            sql = "(" + " OR ".join(p for p, _ in pieces) + ")" if pieces else "0"
            ps = [x for _, p in pieces for x in p]
        else:
            sql = f"((metadata ->> ?) {_RANGE_SQL[cond.op]} ? AND {_NUMBER})"
            ps = [path, _number(cond.value), path]
        parts.append(sql)
        params.extend(ps)
    return (" AND ".join(parts) or "1"), params


def _floats(blob: bytes) -> list[float]:
    vec = array("f")
    vec.frombytes(blob)
    return list(vec)


class Statements:
    """SQLite's :class:`~axio_context.memory.vectors_sql.VectorStatements`; remembers whether
    the connection has sqlite-vec (asked once, by the first search)."""

    def __init__(self) -> None:
        self.vec: bool | None = None

    def create(self, d: Dialect, name: str, dimension: int, embedder: str) -> Plan[None]:
        found = yield from find_collection(d, name)
        if found is None:
            cid = yield Value(
                "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)"
                " RETURNING id",
                (name, dimension, embedder, now_ms()),
            )
            yield Native(vector_codes.begin, (cid,))
        elif found[1] != dimension:
            raise DimensionMismatchError(
                f"collection {name!r} exists with {found[1]} dimensions, not {dimension}"
            )

    def write(
        self, d: Dialect, name: str, embedder: str, docs: list[NewDocument], replace: bool
    ) -> Plan[None]:
        dimension = len(docs[0][2])
        now = now_ms()
        found = yield from find_collection(d, name)
        if found is None:
            cid = yield Value(
                "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)"
                " RETURNING id",
                (name, dimension, embedder, now),
            )
            yield Native(vector_codes.begin, (cid,))
        else:
            cid, have, _ = found
            if have != dimension:  # created by another connection since the caller looked
                raise DimensionMismatchError(
                    f"embedding has {dimension} dimensions, the collection {name!r} has {have}"
                )
        conflict = (
            "DO UPDATE SET code = excluded.code, metadata = excluded.metadata,"
            " updated_at = excluded.updated_at, content = excluded.content"
            if replace
            else "DO NOTHING"
        )
        yield Native(vector_scan.mark_changed, (cid,))
        # Metadata is stored as JSONB, as the schema says, so a filter reads it without parsing
        # text (a 10% filter over 100,000 documents: 150 ms of text parsing). One executemany
        # per table instead of a statement per document (0.92 s of 1.3 s for
        # 10,000 documents). What each id ends as is what row-by-row inserts left: the first of
        # a batch's duplicates for add (later ones did nothing), the last for upsert.
        chosen: dict[str, NewDocument] = {}
        for row in docs:
            if replace or row[0] not in chosen:
                chosen[row[0]] = row
        # Each document's rowid is chosen here (a stored one kept, the next free ones for the
        # rest: the write holds the database), so the embeddings need no read of them back.
        stored = yield Rows(
            "SELECT id, rowid FROM memory_documents"
            " WHERE collection = ? AND id IN (SELECT value FROM json_each(?))",
            (cid, encode_json(list(chosen))),
        )
        rowids = {str(doc_id): int(rowid) for doc_id, rowid in stored}
        if not replace:
            for doc_id in rowids:
                chosen.pop(doc_id, None)
            if not chosen:
                return
        free = first = yield Value("SELECT coalesce(max(rowid), 0) + 1 FROM memory_documents")
        for doc_id in chosen:
            if doc_id not in rowids:
                rowids[doc_id] = free
                free += 1
        blobs = [vec.tobytes() for _, _, vec, _ in chosen.values()]
        codes = [vector_codes.UNCODED] * len(chosen)
        # Counted toward the codes' mark: the documents added (an upsert of stored ids adds none).
        if (yield Native(vector_codes.admit, (cid, free - first, dimension))):
            import numpy as np  # here, not at import: opening a connection stays free of NumPy

            codes = binary_codes(np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1))
        yield ExecuteMany(
            "INSERT INTO memory_documents (rowid, collection, id, code, metadata, updated_at, content)"
            f" VALUES (?, ?, ?, ?, jsonb(?), ?, ?) ON CONFLICT (collection, id) {conflict}",
            [
                (rowids[doc_id], cid, doc_id, code, d.json_arg(meta), now, content)
                for (doc_id, content, _, meta), code in zip(chosen.values(), codes, strict=True)
            ],
        )
        yield ExecuteMany(
            "INSERT OR REPLACE INTO memory_embeddings (rowid, embedding) VALUES (?, ?)",
            [(rowids[doc_id], blob) for doc_id, blob in zip(chosen, blobs, strict=True)],
        )

    def get(self, d: Dialect, name: str, ids: list[str]) -> Plan[list[Document]]:
        found = yield from find_collection(d, name)
        if found is None:
            return []
        rows = yield Rows(
            "SELECT d.id, d.content, json(d.metadata), e.embedding FROM json_each(?) AS j"
            " JOIN memory_documents AS d ON d.collection = ? AND d.id = j.value"
            " JOIN memory_embeddings AS e ON e.rowid = d.rowid ORDER BY j.key",
            (encode_json(ids), found[0]),
        )
        return [Document(str(i), str(t), _floats(blob), decode_object(m)) for i, t, m, blob in rows]

    def delete(self, d: Dialect, name: str, ids: list[str]) -> Plan[int]:
        found = yield from find_collection(d, name)
        if found is None:
            return 0
        gone = yield Rows(
            "DELETE FROM memory_documents WHERE collection = ? AND id IN (SELECT value FROM json_each(?))"
            " RETURNING rowid",
            (found[0], encode_json(ids)),
        )
        for (rowid,) in gone:
            yield Row("DELETE FROM memory_embeddings WHERE rowid = ?", (rowid,))
        if gone:
            yield Native(vector_scan.mark_changed, (found[0],))
        return len(gone)

    def search(self, d: Dialect, q: VectorQuery) -> Plan[list[SearchResult]]:
        name, query, conditions, limit, candidates = q
        where, params = filter_sql(conditions)
        found = yield from find_collection(d, name)
        if found is None:
            return []
        cid, dimension, _ = found
        if dimension != len(query):
            raise DimensionMismatchError(
                f"query has {len(query)} dimensions, the collection {name!r} has {dimension}"
            )
        if limit == 0:
            return []
        if self.vec is None:  # loads sqlite-vec if the connection's open deferred it
            self.vec = bool((yield Native(vec_available)))
        blob = query.tobytes()
        allowed = None
        if conditions:
            allowed = [
                int(r[0])
                for r in (
                    yield Rows(
                        f"SELECT rowid FROM memory_documents WHERE collection = ? AND {where}", (cid, *params)
                    )
                )
            ]
        scan = yield Native(vector_scan.nearest, (cid, dimension, blob, allowed, limit))
        if scan is not None:
            rows = yield Rows(
                "SELECT rowid, id, content, json(metadata) FROM memory_documents"
                " WHERE rowid IN (SELECT value FROM json_each(?))",
                (encode_json([rowid for rowid, _ in scan]),),
            )
            found_rows = {int(r[0]): r for r in rows}
            scored = [
                (score, str(found_rows[rowid][1]), str(found_rows[rowid][2]), str(found_rows[rowid][3]))
                for rowid, score in scan
                if rowid in found_rows
            ]
        elif self.vec and (yield Native(vector_codes.coded, (cid,))):
            # Exact re-scoring in SQLite (float32, as stored): in Python it cost more than the
            # coarse pass itself.
            rows = yield Rows(
                "SELECT d.id, d.content, json(d.metadata), 1.0 - vec_distance_cosine(e.embedding, ?)"
                " FROM memory_documents AS d JOIN memory_embeddings AS e ON e.rowid = d.rowid"
                " WHERE d.rowid IN (SELECT rowid FROM memory_documents"
                f" WHERE collection = ? AND {where}"
                " ORDER BY vec_distance_hamming(vec_bit(code), vec_bit(?)) LIMIT ?)",
                (blob, cid, *params, binary_code(blob), max(candidates, limit)),
            )
            scored = [(0.0 if s is None else float(s), str(i), str(t), str(m)) for i, t, m, s in rows]
        elif self.vec:  # a collection without codes (:mod:`.vector_codes`): every one re-scored
            rows = yield Rows(
                "SELECT d.id, d.content, json(d.metadata), 1.0 - vec_distance_cosine(e.embedding, ?)"
                " FROM memory_documents AS d JOIN memory_embeddings AS e ON e.rowid = d.rowid"
                f" WHERE d.collection = ? AND {where}",
                (blob, cid, *params),
            )
            scored = [(0.0 if s is None else float(s), str(i), str(t), str(m)) for i, t, m, s in rows]
        else:
            every = yield Rows(
                "SELECT d.id, d.content, json(d.metadata), e.embedding FROM memory_documents AS d"
                f" JOIN memory_embeddings AS e ON e.rowid = d.rowid WHERE d.collection = ? AND {where}",
                (cid, *params),
            )
            scored = [(cosine_similarity(query, _floats(v)), str(i), str(t), str(m)) for i, t, m, v in every]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [
            SearchResult(i, content, score, decode_object(meta)) for score, i, content, meta in scored[:limit]
        ]

    def collections(self, d: Dialect) -> Plan[list[CollectionInfo]]:
        rows = yield Rows(
            "SELECT name, dimension, embedder,"
            " (SELECT COUNT(*) FROM memory_documents AS d WHERE d.collection = c.id)"
            " FROM memory_collections AS c ORDER BY name"
        )
        return [CollectionInfo(str(r[0]), int(r[1]), str(r[2]), int(r[3])) for r in rows]

    def dump(self, d: Dialect) -> Plan[list[CollectionRow]]:
        out = []
        for cid, name, dimension, embedder, created_at in (
            yield Rows(
                "SELECT id, name, dimension, embedder, created_at FROM memory_collections ORDER BY name"
            )
        ):
            docs = yield Rows(
                "SELECT d.id, d.content, json(d.metadata), e.embedding, d.updated_at"
                " FROM memory_documents d JOIN memory_embeddings e ON e.rowid = d.rowid"
                f" WHERE d.collection = ? AND {live('d')} ORDER BY d.id",
                (cid, now_ms()),
            )
            rows = tuple(
                DocumentRow(str(i), str(t), canonical_json(m), bytes(v), int(u)) for i, t, m, v, u in docs
            )
            out.append(CollectionRow(str(name), int(dimension), str(embedder), int(created_at), rows))
        return out

    def load(self, d: Dialect, row: CollectionRow) -> Plan[None]:
        cid = yield Value(
            "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)"
            " RETURNING id",
            (row.name, row.dimension, row.embedder, row.created_at),
        )
        yield Native(vector_scan.mark_changed, (cid,))
        yield Native(vector_codes.begin, (cid,))
        for doc in row.documents:
            rowid = yield Value(
                "INSERT INTO memory_documents (collection, id, code, metadata, updated_at, content)"
                " VALUES (?, ?, ?, jsonb(?), ?, ?) RETURNING rowid",
                (
                    cid,
                    doc.id,
                    vector_codes.UNCODED,
                    stored_json(d, doc.metadata),
                    doc.updated_at,
                    doc.content,
                ),
            )
            yield Row(
                "INSERT INTO memory_embeddings (rowid, embedding) VALUES (?, ?)", (rowid, doc.embedding)
            )
        yield Native(vector_codes.admit, (cid, len(row.documents), row.dimension))  # codes them if large


#: The plans ``axio-context copy`` runs (dump and load; each store keeps its own, which
#: remembers whether its connection has sqlite-vec).
STATEMENTS: Final = Statements()


class SQLiteVectorStore(SQLVectorStore):
    """:class:`~axio_context.memory.VectorStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it). ``embedder`` computes missing
    document and text-query embeddings; ``candidates`` is how many documents the coarse pass keeps;
    ``ttl`` is the documents' expiry (:mod:`axio_context.expiry`).
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        embedder: Embedder | None = None,
        candidates: int = DEFAULT_CANDIDATES,
        ttl: TTLConfig = NO_TTL,
    ) -> None:
        runner = SQLiteRunner(conn)
        super().__init__(runner, Statements(), embedder=embedder, candidates=candidates, ttl=ttl)
