"""Vector collections on PostgreSQL: :class:`PostgresVectorStore`, ravi's ``VectorStore`` with
pgvector: the shared :class:`~axio_context.memory.vectors_sql.SQLVectorStore` over the plans below.

Documents are rows of ``memory_documents`` (created with the first collection, once the
``vector`` extension is there): content, ``jsonb`` metadata and a ``vector`` embedding. A
collection's dimension is fixed, but the column is not (collections differ), so each collection
gets its own partial HNSW index over ``embedding::vector(dim)`` (pgvector's recipe for mixed
dimensions). A search takes ``candidates`` nearest by that index, with the metadata filter
inside the scan (pgvector 0.8's iterative scan goes on until enough rows pass it), then ranks
them by exact cosine, ties by id. A small collection is scanned exactly: the planner prefers
it, and then the result is exact.
"""

from __future__ import annotations

from array import array
from typing import Any, Final

from axio_context.copying import CollectionRow, DocumentRow, canonical_json
from axio_context.embeddings import Embedder
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.errors import DimensionMismatchError
from axio_context.memory.metadata import matches
from axio_context.memory.transfer_sql import stored_json
from axio_context.memory.vectors import CollectionInfo, Document, SearchResult
from axio_context.memory.vectors_sql import (
    DEFAULT_CANDIDATES,
    Collection,
    NewDocument,
    SQLVectorStore,
    VectorQuery,
    find_collection,
)
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Rows, Value, decode_object
from axio_context.sql.expiry import live

from ..connection import Pool
from ..errors import VectorExtensionMissingError
from ..runner import PostgresRunner
from ..search import EF_SEARCH, ENABLE_VECTOR, HNSW_EF_CONSTRUCTION, HNSW_M
from .common import WHERE, now_ms
from .filters import filter_sql

__all__ = ["DEFAULT_CANDIDATES", "STATEMENTS", "PostgresVectorStore"]

#: Taken while creating the documents table or a collection's index: one creator at a time.
_CREATE_LOCK: Final = 0x6178696D  # "axim"

_DOCUMENTS: Final = """
CREATE TABLE IF NOT EXISTS memory_documents (
    collection bigint NOT NULL REFERENCES memory_collections (id) ON DELETE CASCADE,
    id text NOT NULL,
    content text NOT NULL,
    metadata jsonb NOT NULL,
    embedding vector NOT NULL,
    updated_at bigint NOT NULL,
    ttl_ms bigint,
    expires_at bigint,
    PRIMARY KEY (collection, id)
)
"""
#: The documents' expiry index (see axio_context.expiry and schema step 9).
_EXPIRY_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS memory_documents_expiry ON memory_documents (expires_at)"
    " WHERE expires_at IS NOT NULL"
)
_DOCUMENTS_EXIST: Final = "SELECT to_regclass('memory_documents') IS NOT NULL"


def _ensure(
    d: Dialect, name: str, dimension: int, embedder: str, created_at: int | None = None
) -> Plan[Collection]:
    """The collection (created with its index when absent), refusing another dimension."""
    found = yield from find_collection(d, name)
    if found is None:
        if not (yield Value("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')")):
            raise VectorExtensionMissingError(ENABLE_VECTOR)
        yield Execute("SELECT pg_advisory_xact_lock(?)", (_CREATE_LOCK,))
        yield Execute(_DOCUMENTS)
        yield Execute(_EXPIRY_INDEX)
        made = yield Value(
            "INSERT INTO memory_collections (name, dimension, embedder, created_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING RETURNING id",
            (name, dimension, embedder, now_ms() if created_at is None else created_at),
        )
        found = yield from find_collection(d, name)
        assert found is not None
        cid, dim = found[0], found[1]
        if made is not None:
            # An index of this id left by a collection deleted with its id reused (a table
            # emptied with RESTART IDENTITY) would cast this one's vectors to its dimension.
            yield Execute(f"DROP INDEX IF EXISTS memory_documents_hnsw_{cid}")
        yield Execute(
            f"CREATE INDEX IF NOT EXISTS memory_documents_hnsw_{cid} ON memory_documents"
            f" USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
            f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE collection = {cid}"
        )
    if found[1] != dimension:
        raise DimensionMismatchError(
            f"collection {name!r} exists with {found[1]} dimensions, not {dimension}"
        )
    return found


def _floats(values: Any) -> list[float]:
    return [float(x) for x in values]


class _Statements:
    """PostgreSQL's :class:`~axio_context.memory.vectors_sql.VectorStatements`."""

    def create(self, d: Dialect, name: str, dimension: int, embedder: str) -> Plan[None]:
        yield from _ensure(d, name, dimension, embedder)

    def write(
        self, d: Dialect, name: str, embedder: str, docs: list[NewDocument], replace: bool
    ) -> Plan[None]:
        conflict = (
            "DO UPDATE SET content = excluded.content, metadata = excluded.metadata,"
            " embedding = excluded.embedding, updated_at = excluded.updated_at"
            if replace
            else "DO NOTHING"
        )
        # The collection may have been made by another writer since the caller looked: _ensure
        # re-checks its dimension inside this transaction.
        cid, _, _ = yield from _ensure(d, name, len(docs[0][2]), embedder)
        now = now_ms()
        yield ExecuteMany(
            "INSERT INTO memory_documents (collection, id, content, metadata, embedding, updated_at)"
            f" VALUES (?, ?, ?, ?::jsonb, ?::real[]::vector, ?) ON CONFLICT (collection, id) {conflict}",
            [(cid, i, d.sealed(content), d.json_arg(meta), list(vec), now) for i, content, vec, meta in docs],
        )

    def get(self, d: Dialect, name: str, ids: list[str]) -> Plan[list[Document]]:
        found = yield from find_collection(d, name)
        if found is None:
            return []
        rows = yield Rows(
            "SELECT d.id, d.content, d.metadata::text, d.embedding::real[]"
            " FROM unnest(?::text[]) WITH ORDINALITY AS a (id, n)"
            " JOIN memory_documents d ON d.collection = ? AND d.id = a.id ORDER BY a.n",
            (ids, found[0]),
        )
        return [Document(str(i), str(t), _floats(v), decode_object(m)) for i, t, m, v in rows]

    def delete(self, d: Dialect, name: str, ids: list[str]) -> Plan[int]:
        found = yield from find_collection(d, name)
        if found is None:
            return 0
        gone = yield Rows(
            "DELETE FROM memory_documents WHERE collection = ? AND id = ANY(?::text[]) RETURNING 1",
            (found[0], ids),
        )
        return len(gone)

    def search(self, d: Dialect, q: VectorQuery) -> Plan[list[SearchResult]]:
        name, query, conditions, limit, candidates = q
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
        depth = max(candidates, limit)
        # ef_search is an integer setting up to 1,000; past it the index pass keeps what it may.
        yield Execute(f"SET LOCAL hnsw.ef_search = {min(max(EF_SEARCH, depth), 1000)}")
        yield Execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        vector = list(query)
        if conditions and (yield from d.sealing()):
            return (yield from _search_sealed(cid, dimension, vector, conditions, limit))
        where, args = filter_sql(conditions)
        # A zero vector has no cosine: pgvector gives NaN, the contract 0 (distance 1).
        rows = yield Rows(
            "SELECT id, content, metadata::text, CASE WHEN d = 'NaN'::float8 THEN 1.0 ELSE d END FROM ("
            f"  SELECT id, content, metadata, embedding::vector({dimension}) <=> ?::real[]::vector AS d"
            f"  FROM memory_documents WHERE collection = ? AND {where}"
            f"  ORDER BY embedding::vector({dimension}) <=> ?::real[]::vector LIMIT ?"
            ') c ORDER BY 4, id COLLATE "C" LIMIT ?',
            (vector, cid, *args, vector, depth, limit),
        )
        return [SearchResult(str(i), str(t), 1.0 - float(dist), decode_object(m)) for i, t, m, dist in rows]

    def collections(self, d: Dialect) -> Plan[list[CollectionInfo]]:
        count = (
            "(SELECT COUNT(*) FROM memory_documents d WHERE d.collection = c.id)"
            if (yield Value(_DOCUMENTS_EXIST))
            else "0"
        )
        rows = yield Rows(
            f'SELECT name, dimension, embedder, {count} FROM memory_collections c ORDER BY name COLLATE "C"'
        )
        return [CollectionInfo(str(r[0]), int(r[1]), str(r[2]), int(r[3])) for r in rows]

    def dump(self, d: Dialect) -> Plan[list[CollectionRow]]:
        collections = yield Rows(
            "SELECT id, name, dimension, embedder, created_at FROM memory_collections"
            ' ORDER BY name COLLATE "C"'
        )
        out = []
        for cid, name, dimension, embedder, created_at in collections:
            docs = yield Rows(
                "SELECT id, content, metadata::text, embedding::real[], updated_at FROM memory_documents"
                f' WHERE collection = ? AND {live()} ORDER BY id COLLATE "C"',
                (cid, now_ms()),
            )
            rows = tuple(
                DocumentRow(str(i), str(t), canonical_json(m), array("f", v).tobytes(), int(u))
                for i, t, m, v, u in docs
            )
            out.append(CollectionRow(str(name), int(dimension), str(embedder), int(created_at), rows))
        return out

    def load(self, d: Dialect, row: CollectionRow) -> Plan[None]:
        cid, _, _ = yield from _ensure(d, row.name, row.dimension, row.embedder, row.created_at)
        yield ExecuteMany(
            "INSERT INTO memory_documents (collection, id, content, metadata, embedding, updated_at)"
            " VALUES (?, ?, ?, ?::jsonb, ?::real[]::vector, ?)",
            [
                (
                    cid,
                    doc.id,
                    d.sealed(doc.content),
                    stored_json(d, doc.metadata),
                    _floats(array("f", doc.embedding)),
                    doc.updated_at,
                )
                for doc in row.documents
            ],
        )


def _search_sealed(
    cid: int, dimension: int, vector: list[float], conditions: Any, limit: int
) -> Plan[list[SearchResult]]:
    """A filtered search under a key: the metadata is sealed, so the server cannot hold it to the
    filter; every document of the collection is read nearest first and filtered here (exact)."""
    rows = yield Rows(
        "SELECT id, content, metadata::text, CASE WHEN d = 'NaN'::float8 THEN 1.0 ELSE d END FROM ("
        f"  SELECT id, content, metadata, embedding::vector({dimension}) <=> ?::real[]::vector AS d"
        '  FROM memory_documents WHERE collection = ?) c ORDER BY 4, id COLLATE "C"',
        (vector, cid),
    )
    hits = []
    for i, t, m, dist in rows:
        meta = decode_object(m)
        if matches(meta, conditions):
            hits.append(SearchResult(str(i), str(t), 1.0 - float(dist), meta))
            if len(hits) == limit:
                break
    return hits


#: The plans ``axio-context copy`` runs (dump and load).
STATEMENTS: Final = _Statements()


class PostgresVectorStore(SQLVectorStore):
    """:class:`~axio_context.memory.VectorStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it). ``embedder`` computes missing
    document and text-query embeddings; ``candidates`` is how many the index pass keeps; ``ttl`` is
    the documents' expiry (:mod:`axio_context.expiry`)."""

    def __init__(
        self,
        pool: Pool,
        *,
        embedder: Embedder | None = None,
        candidates: int = DEFAULT_CANDIDATES,
        ttl: TTLConfig = NO_TTL,
    ) -> None:
        runner = PostgresRunner(pool, WHERE)
        super().__init__(runner, STATEMENTS, embedder=embedder, candidates=candidates, ttl=ttl)
