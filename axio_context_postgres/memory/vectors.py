"""Vector collections on PostgreSQL: :class:`PostgresVectorStore`, ravi's ``VectorStore`` with
pgvector.

Documents are rows of ``memory_documents`` (created with the first collection, once the
``vector`` extension is there): content, ``jsonb`` metadata and a ``vector`` embedding. A
collection's dimension is fixed, but the column is not (collections differ), so each collection
gets its own partial HNSW index over ``embedding::vector(dim)`` (pgvector's recipe for mixed
dimensions). A search takes :data:`DEFAULT_CANDIDATES` nearest by that index, with the metadata
filter inside the scan (pgvector 0.8's iterative scan goes on until enough rows pass it), then
ranks them by exact cosine, ties by id. A small collection is scanned exactly: the planner
prefers it, and then the result is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.embeddings import Embedder
from axio_context.memory.errors import DimensionMismatchError, InvalidInputError, MissingEmbeddingError
from axio_context.memory.metadata import MetadataFilter, compile_filter
from axio_context.memory.vectors import (
    DEFAULT_COLLECTION,
    CollectionInfo,
    Document,
    SearchResult,
    check_collection_name,
    check_embedder,
    check_embedding,
    check_limit,
    embed_missing,
)

from ..connection import Pool
from ..search import EF_SEARCH, HNSW_EF_CONSTRUCTION, HNSW_M, require_vector
from .common import decode_json, encode_json, now_ms, transaction
from .filters import filter_sql

__all__ = ["DEFAULT_CANDIDATES", "PostgresVectorStore"]

#: Candidates the index pass keeps for exact re-ranking, at least.
DEFAULT_CANDIDATES: Final = 100
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
    PRIMARY KEY (collection, id)
)
"""


async def _documents_exist(conn: Any) -> bool:
    return bool(await conn.fetchval("SELECT to_regclass('memory_documents') IS NOT NULL"))


async def _find(conn: Any, name: str) -> tuple[int, int, str] | None:
    row = await conn.fetchrow("SELECT id, dimension, embedder FROM memory_collections WHERE name = $1", name)
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


async def _ensure(
    conn: Any, name: str, dimension: int, embedder: str, created_at: int | None = None
) -> tuple[int, int, str]:
    """The collection (created with its index when absent), refusing another dimension."""
    found = await _find(conn, name)
    if found is None:
        await require_vector(conn)
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _CREATE_LOCK)
        await conn.execute(_DOCUMENTS)
        await conn.execute(
            "INSERT INTO memory_collections (name, dimension, embedder, created_at)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
            name,
            dimension,
            embedder,
            now_ms() if created_at is None else created_at,
        )
        found = await _find(conn, name)
        assert found is not None
        cid, dim = found[0], found[1]
        await conn.execute(
            f"CREATE INDEX IF NOT EXISTS memory_documents_hnsw_{cid} ON memory_documents"
            f" USING hnsw ((embedding::vector({dim})) vector_cosine_ops)"
            f" WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION}) WHERE collection = {cid}"
        )
    if found[1] != dimension:
        raise DimensionMismatchError(
            f"collection {name!r} exists with {found[1]} dimensions, not {dimension}"
        )
    return found


async def ensure_collection(conn: Any, name: str, dimension: int, embedder: str, created_at: int) -> int:
    """The id of collection ``name``, created (with its index) at ``created_at`` when absent, in
    the caller's transaction: how a copy brings a collection over with its creation time."""
    return (await _ensure(conn, name, dimension, embedder, created_at))[0]


def _document(row: Any, with_embedding: bool = True) -> Document:
    embedding = [float(x) for x in row["embedding"]] if with_embedding else None
    return Document(row["id"], row["content"], embedding, decode_json(row["metadata"]))


class PostgresVectorStore:
    """:class:`~axio_context.memory.VectorStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it). ``embedder`` computes missing
    document and text-query embeddings; ``candidates`` is how many the index pass keeps."""

    def __init__(
        self, pool: Pool, *, embedder: Embedder | None = None, candidates: int = DEFAULT_CANDIDATES
    ) -> None:
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidInputError(f"candidates is a whole number >= 1, got {candidates!r}")
        self._pool = pool
        self._embedder = embedder
        self._candidates = candidates

    @property
    def embedder(self) -> Embedder | None:
        """The embedder that computes missing document and query embeddings, if any."""
        return self._embedder

    def _label(self) -> str:
        return self._embedder.model if self._embedder is not None else ""

    async def _info(self, name: str) -> tuple[int, int, str] | None:
        async with transaction(self._pool, readonly=True) as conn:
            return await _find(conn, name)

    async def create_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create an empty collection of a fixed dimension (a no-op if it exists with that one)."""
        check_collection_name(name)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInputError(f"a collection dimension is a whole number >= 1, got {dimension!r}")
        async with transaction(self._pool) as conn:
            await _ensure(conn, name, dimension, embedder if embedder is not None else self._label())

    async def _write(self, documents: Sequence[Document], collection: str, replace: bool) -> list[str]:
        check_collection_name(collection)
        docs = list(documents)
        info = await self._info(collection)
        if info is not None:
            check_embedder(info[2], self._embedder, collection)
        checked = await embed_missing(docs, self._embedder, info[1] if info else None)
        if not checked:
            return []
        conflict = (
            "DO UPDATE SET content = excluded.content, metadata = excluded.metadata,"
            " embedding = excluded.embedding, updated_at = excluded.updated_at"
            if replace
            else "DO NOTHING"
        )
        now = now_ms()
        async with transaction(self._pool) as conn:
            # The collection may have been made by another writer since we looked: _ensure
            # re-checks its dimension inside this transaction.
            cid, _, _ = await _ensure(conn, collection, len(checked[0][1]), self._label())
            await conn.executemany(
                "INSERT INTO memory_documents (collection, id, content, metadata, embedding, updated_at)"
                " VALUES ($1, $2, $3, $4::jsonb, $5::real[]::vector, $6)"
                f" ON CONFLICT (collection, id) {conflict}",
                [(cid, d.id, d.content, encode_json(meta), list(vec), now) for d, vec, meta in checked],
            )
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
        async with transaction(self._pool, readonly=True) as conn:
            found = await _find(conn, collection)
            if found is None:
                return []
            rows = await conn.fetch(
                "SELECT d.id, d.content, d.metadata::text AS metadata, d.embedding::real[] AS embedding"
                " FROM unnest($2::text[]) WITH ORDINALITY AS a (id, n)"
                " JOIN memory_documents d ON d.collection = $1 AND d.id = a.id ORDER BY a.n",
                found[0],
                list(ids),
            )
        return [_document(r) for r in rows]

    async def delete(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> int:
        """Delete the documents with these ids; returns how many existed."""
        async with transaction(self._pool) as conn:
            found = await _find(conn, collection)
            if found is None:
                return 0
            gone = await conn.fetch(
                "DELETE FROM memory_documents WHERE collection = $1 AND id = ANY($2::text[]) RETURNING 1",
                found[0],
                list(set(ids)),
            )
        return len(gone)

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
        query = check_embedding(query_embedding, None, "query")
        async with transaction(self._pool, readonly=True) as conn:
            found = await _find(conn, collection)
            if found is None:
                return []
            cid, dimension, _ = found
            if dimension != len(query):
                raise DimensionMismatchError(
                    f"query has {len(query)} dimensions, the collection {collection!r} has {dimension}"
                )
            if limit == 0:
                return []
            await conn.execute(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, self._candidates, limit)}")
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            args: list[Any] = [list(query), cid, max(self._candidates, limit)]
            where = filter_sql(conditions, args)
            # A zero vector has no cosine: pgvector gives NaN, the contract 0 (distance 1).
            rows = await conn.fetch(
                "SELECT id, content, metadata::text AS metadata,"
                " CASE WHEN d = 'NaN'::float8 THEN 1.0 ELSE d END AS d FROM ("
                f"  SELECT id, content, metadata, embedding::vector({dimension}) <=> $1::real[]::vector AS d"
                f"  FROM memory_documents WHERE collection = $2 AND {where}"
                f"  ORDER BY embedding::vector({dimension}) <=> $1::real[]::vector LIMIT $3"
                ') c ORDER BY 4, id COLLATE "C"',
                *args,
            )
        return [
            SearchResult(r["id"], r["content"], 1.0 - float(r["d"]), decode_json(r["metadata"])) for r in rows
        ][:limit]

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
        info = await self._info(collection)
        if info is not None:
            check_embedder(info[2], self._embedder, collection)
        [vector] = await self._embedder.embed([query])
        return await self.search(vector, collection=collection, limit=limit, filter=filter)

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection, by name."""
        async with transaction(self._pool, readonly=True) as conn:
            count = (
                "(SELECT COUNT(*) FROM memory_documents d WHERE d.collection = c.id)"
                if await _documents_exist(conn)
                else "0"
            )
            rows = await conn.fetch(
                f"SELECT name, dimension, embedder, {count} FROM memory_collections c"
                ' ORDER BY name COLLATE "C"'
            )
        return [CollectionInfo(str(r[0]), int(r[1]), str(r[2]), int(r[3])) for r in rows]

    async def documents(self, collection: str = DEFAULT_COLLECTION, *, limit: int = 20) -> list[Document]:
        """The first ``limit`` documents of a collection by id, without their embeddings."""
        check_limit(limit)
        async with transaction(self._pool, readonly=True) as conn:
            found = await _find(conn, collection)
            if found is None:
                return []
            rows = await conn.fetch(
                "SELECT id, content, metadata::text AS metadata FROM memory_documents"
                ' WHERE collection = $1 ORDER BY id COLLATE "C" LIMIT $2',
                found[0],
                limit,
            )
        return [_document(r, with_embedding=False) for r in rows]
