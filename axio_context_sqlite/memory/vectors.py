"""Vector collections in the SQLite file: :class:`SQLiteVectorStore`, ravi's ``VectorStore``.

Each document row keeps a binary code of its embedding (:func:`..store.vec.binary_code`, the
one the message search uses) and its JSON metadata; the float32 embedding sits in a table of
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
import msgspec

from axio_context.embeddings import Embedder
from axio_context.memory.errors import DimensionMismatchError, InvalidInputError, MissingEmbeddingError
from axio_context.memory.metadata import Condition, MetadataFilter, compile_filter
from axio_context.memory.vectors import (
    DEFAULT_COLLECTION,
    CollectionInfo,
    Document,
    SearchResult,
    check_collection_name,
    check_embedder,
    check_embedding,
    check_limit,
    cosine_similarity,
    embed_missing,
)

from ..store.calls import run
from ..store.keys import now_ms
from ..store.transactions import read_tx, write_tx
from ..store.vec import binary_code

__all__ = ["DEFAULT_CANDIDATES", "SQLiteVectorStore", "filter_sql"]

#: Candidates the coarse (binary code) pass keeps for exact re-scoring, at least.
DEFAULT_CANDIDATES: Final = 100

_JSON: Final = msgspec.json.Encoder()
_META: Final = msgspec.json.Decoder(dict[str, Any])
_NUMBER: Final = "json_type(metadata, ?) IN ('integer', 'real')"
_RANGE_SQL: Final = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


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
    return f"((metadata ->> ?) = ? AND {_NUMBER})", [path, value, path]


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
            ps = [path, cond.value, path]
        parts.append(sql)
        params.extend(ps)
    return (" AND ".join(parts) or "1"), params


def _collection(c: Any, name: str) -> tuple[int, int, str] | None:
    row = c.execute(
        "SELECT id, dimension, embedder FROM memory_collections WHERE name = ?", (name,)
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


def _collection_info(c: Any, name: str) -> tuple[int, str] | None:
    found = _collection(c, name)
    return None if found is None else (found[1], found[2])


def _create(c: Any, name: str, dimension: int, embedder: str) -> None:
    with write_tx(c):
        found = _collection(c, name)
        if found is None:
            c.execute(
                "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)",
                (name, dimension, embedder, now_ms()),
            )
        elif found[1] != dimension:
            raise DimensionMismatchError(
                f"collection {name!r} exists with {found[1]} dimensions, not {dimension}"
            )


def _write(
    c: Any,
    name: str,
    embedder: str,
    rows: list[tuple[str, str, bytes, str]],
    replace: bool,
) -> None:
    """Insert (or replace) ``(id, content, float32 blob, metadata JSON)`` rows in one transaction."""
    dimension = len(rows[0][2]) // 4
    coded = [(i, content, blob, binary_code(blob), meta) for i, content, blob, meta in rows]
    now = now_ms()
    with write_tx(c):
        found = _collection(c, name)
        if found is None:
            cid = c.execute(
                "INSERT INTO memory_collections (name, dimension, embedder, created_at) VALUES (?, ?, ?, ?)"
                " RETURNING id",
                (name, dimension, embedder, now),
            ).fetchone()[0]
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
        for doc_id, content, blob, code, meta in coded:
            row = c.execute(
                "INSERT INTO memory_documents (collection, id, code, metadata, updated_at, content)"
                f" VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (collection, id) {conflict} RETURNING rowid",
                (cid, doc_id, code, meta, now, content),
            ).fetchone()
            if row is not None:
                c.execute(
                    "INSERT OR REPLACE INTO memory_embeddings (rowid, embedding) VALUES (?, ?)",
                    (row[0], blob),
                )


def _get(c: Any, name: str, ids: list[str]) -> list[tuple[str, str, str, bytes]]:
    with read_tx(c):
        found = _collection(c, name)
        if found is None:
            return []
        return [
            (str(r[0]), str(r[1]), str(r[2]), bytes(r[3]))
            for r in c.execute(
                "SELECT d.id, d.content, json(d.metadata), e.embedding FROM json_each(?) AS j"
                " JOIN memory_documents AS d ON d.collection = ? AND d.id = j.value"
                " JOIN memory_embeddings AS e ON e.rowid = d.rowid ORDER BY j.key",
                (_JSON.encode(ids).decode(), found[0]),
            )
        ]


def _delete(c: Any, name: str, ids: list[str]) -> int:
    with write_tx(c):
        found = _collection(c, name)
        if found is None:
            return 0
        rowids = [
            r[0]
            for r in c.execute(
                "DELETE FROM memory_documents WHERE collection = ? AND id IN (SELECT value FROM json_each(?))"
                " RETURNING rowid",
                (found[0], _JSON.encode(sorted(set(ids))).decode()),
            ).fetchall()
        ]
        c.executemany("DELETE FROM memory_embeddings WHERE rowid = ?", [(r,) for r in rowids])
        return len(rowids)


def _search(
    c: Any,
    name: str,
    query: bytes,
    conditions: list[Condition],
    limit: int,
    candidates: int,
    vec: bool,
) -> list[tuple[float, str, str, str]]:
    where, params = filter_sql(conditions)
    with read_tx(c):
        found = _collection(c, name)
        if found is None:
            return []
        cid, dimension, _ = found
        if dimension != len(query) // 4:
            raise DimensionMismatchError(
                f"query has {len(query) // 4} dimensions, the collection {name!r} has {dimension}"
            )
        if limit == 0:
            return []
        if vec:
            # Exact re-scoring in SQLite (float32, as stored): in Python it cost more than the
            # coarse pass itself.
            rows = c.execute(
                "SELECT d.id, d.content, json(d.metadata), 1.0 - vec_distance_cosine(e.embedding, ?)"
                " FROM memory_documents AS d JOIN memory_embeddings AS e ON e.rowid = d.rowid"
                " WHERE d.rowid IN (SELECT rowid FROM memory_documents"
                f" WHERE collection = ? AND {where}"
                " ORDER BY vec_distance_hamming(vec_bit(code), vec_bit(?)) LIMIT ?)",
                (query, cid, *params, binary_code(query), max(candidates, limit)),
            ).fetchall()
            scored = [(0.0 if s is None else float(s), str(i), str(t), str(m)) for i, t, m, s in rows]
        else:
            q = array("f")
            q.frombytes(query)
            scored = []
            for doc_id, content, meta, blob in c.execute(
                "SELECT d.id, d.content, json(d.metadata), e.embedding FROM memory_documents AS d"
                f" JOIN memory_embeddings AS e ON e.rowid = d.rowid WHERE d.collection = ? AND {where}",
                (cid, *params),
            ):
                v = array("f")
                v.frombytes(blob)
                scored.append((cosine_similarity(q, v), str(doc_id), str(content), str(meta)))
    scored.sort(key=lambda t: (-t[0], t[1]))
    return scored[:limit]


def _collections(c: Any) -> list[tuple[str, int, str, int]]:
    return [
        (str(r[0]), int(r[1]), str(r[2]), int(r[3]))
        for r in c.execute(
            "SELECT name, dimension, embedder,"
            " (SELECT COUNT(*) FROM memory_documents AS d WHERE d.collection = c.id)"
            " FROM memory_collections AS c ORDER BY name"
        )
    ]


def _documents(c: Any, name: str, limit: int) -> list[tuple[str, str, str]]:
    with read_tx(c):
        found = _collection(c, name)
        if found is None:
            return []
        return [
            (str(r[0]), str(r[1]), str(r[2]))
            for r in c.execute(
                "SELECT id, content, json(metadata) FROM memory_documents WHERE collection = ?"
                " ORDER BY id LIMIT ?",
                (found[0], limit),
            )
        ]


def _has_vec(c: Any) -> bool:
    try:
        c.execute("SELECT vec_distance_hamming(vec_bit(x'00'), vec_bit(x'00'))").fetchone()
    except Exception:
        return False
    return True


class SQLiteVectorStore:
    """:class:`~axio_context.memory.VectorStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it). ``embedder`` computes missing
    document and text-query embeddings; ``candidates`` is how many documents the coarse pass keeps.
    """

    def __init__(
        self,
        conn: aiosqlite.Connection,
        *,
        embedder: Embedder | None = None,
        candidates: int = DEFAULT_CANDIDATES,
    ) -> None:
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidInputError(f"candidates is a whole number >= 1, got {candidates!r}")
        self._conn = conn
        self._embedder = embedder
        self._candidates = candidates
        self._vec: bool | None = None

    @property
    def embedder(self) -> Embedder | None:
        """The embedder that computes missing document and query embeddings, if any."""
        return self._embedder

    async def create_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create an empty collection of a fixed dimension (a no-op if it exists with that one)."""
        check_collection_name(name)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInputError(f"a collection dimension is a whole number >= 1, got {dimension!r}")
        label = embedder if embedder is not None else self._label()
        await run(self._conn, _create, name, dimension, label)

    def _label(self) -> str:
        return self._embedder.model if self._embedder is not None else ""

    async def _write(self, documents: Sequence[Document], collection: str, replace: bool) -> list[str]:
        check_collection_name(collection)
        docs = list(documents)
        info = await run(self._conn, _collection_info, collection)
        if info is not None:
            check_embedder(info[1], self._embedder, collection)
        checked = await embed_missing(docs, self._embedder, info[0] if info else None)
        if checked:
            rows = [(d.id, d.content, vec.tobytes(), _JSON.encode(meta).decode()) for d, vec, meta in checked]
            await run(self._conn, _write, collection, self._label(), rows, replace)
        return [d.id for d in docs]

    async def add(self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION) -> list[str]:
        """Insert the documents whose ids are absent (present ones are kept); returns their ids."""
        return await self._write(documents, collection, replace=False)

    async def upsert(
        self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION
    ) -> list[str]:
        """Insert or replace the documents; returns their ids."""
        return await self._write(documents, collection, replace=True)

    async def get(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> list[Document]:
        """The documents with these ids that exist, in the order asked."""
        rows = await run(self._conn, _get, collection, list(ids))
        out = []
        for doc_id, content, meta, blob in rows:
            vec = array("f")
            vec.frombytes(blob)
            out.append(Document(doc_id, content, list(vec), _META.decode(meta)))
        return out

    async def delete(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> int:
        """Delete the documents with these ids; returns how many existed."""
        return await run(self._conn, _delete, collection, list(ids))

    async def search(
        self,
        query_embedding: Sequence[float],
        *,
        collection: str = DEFAULT_COLLECTION,
        limit: int = 5,
        filter: MetadataFilter | None = None,
    ) -> list[SearchResult]:
        """The ``limit`` documents nearest the query among those matching ``filter``."""
        conditions = compile_filter(filter)
        check_limit(limit)
        query = check_embedding(query_embedding, None, "query").tobytes()
        if self._vec is None:
            self._vec = await run(self._conn, _has_vec)
        rows = await run(
            self._conn, _search, collection, query, conditions, limit, self._candidates, self._vec
        )
        return [SearchResult(i, content, score, _META.decode(meta)) for score, i, content, meta in rows]

    async def search_text(
        self,
        query: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        limit: int = 5,
        filter: MetadataFilter | None = None,
    ) -> list[SearchResult]:
        """:meth:`search` with ``query`` embedded by the store's embedder."""
        if self._embedder is None:
            raise MissingEmbeddingError("search_text needs an embedder; this store has none")
        compile_filter(filter)
        info = await run(self._conn, _collection_info, collection)
        if info is not None:
            check_embedder(info[1], self._embedder, collection)
        [vector] = await self._embedder.embed([query])
        return await self.search(vector, collection=collection, limit=limit, filter=filter)

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection, by name."""
        return [CollectionInfo(*row) for row in await run(self._conn, _collections)]

    async def documents(self, collection: str = DEFAULT_COLLECTION, *, limit: int = 20) -> list[Document]:
        """The first ``limit`` documents of a collection by id, without their embeddings."""
        check_limit(limit)
        rows = await run(self._conn, _documents, collection, limit)
        return [Document(i, content, None, _META.decode(meta)) for i, content, meta in rows]
