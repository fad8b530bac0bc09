"""Vector collections on any SQL backend, written once: :class:`SQLVectorStore` holds the rules
(names, dimensions, the embedder a collection was made with, missing embeddings computed before
anything is written, limits) and runs the backend's :class:`VectorStatements`, the plans of
what only that backend can do: how it keeps embeddings and how it finds the nearest (binary
codes re-scored by cosine on SQLite, pgvector's HNSW index on PostgreSQL)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any, Final, NamedTuple, Protocol

from axio_context.copying import CollectionRow
from axio_context.embeddings import Embedder
from axio_context.expiry import DEFAULT, NO_TTL, TTL, TTLConfig, now_ms, resolve_ttl
from axio_context.sql import Dialect, Plan, Row, Rows, Runner, decode_object
from axio_context.sql.expiry import SWEEP_BATCH, in_batches, live

from .errors import InvalidInputError, MissingEmbeddingError
from .metadata import Condition, MetadataFilter, compile_filter
from .vector_expiry_sql import (
    collections_live,
    count,
    get_live,
    refresh_docs,
    search_live,
    sweep,
    write_with_ttl,
)
from .vectors import (
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

__all__ = [
    "DEFAULT_CANDIDATES",
    "Collection",
    "NewDocument",
    "SQLVectorStore",
    "VectorQuery",
    "VectorStatements",
    "find_collection",
]

#: Candidates the coarse pass keeps for exact re-scoring, at least.
DEFAULT_CANDIDATES: Final = 100
#: The largest row count a query is asked for (SQL's LIMIT is a signed 64-bit number).
_MOST: Final = 2**63 - 1

#: A collection as stored: its id, dimension and the embedder its vectors came from ('' unknown).
Collection = tuple[int, int, str]
#: A checked document to write: id, content, float32 embedding, metadata (a JSON object).
NewDocument = tuple[str, str, "array[float]", dict[str, Any]]


class VectorQuery(NamedTuple):
    """A checked search: the collection, the float32 query, the filter's conditions, how many
    hits, and how many candidates the coarse pass keeps."""

    collection: str
    vector: array[float]
    conditions: list[Condition]
    limit: int
    candidates: int


class VectorStatements(Protocol):
    """The plans a backend gives :class:`SQLVectorStore` (each runs as one transaction), for
    what only it can do: keep embeddings and find the nearest."""

    def create(self, d: Dialect, name: str, dimension: int, embedder: str) -> Plan[None]:
        """Make the collection when absent; DimensionMismatchError if it has another dimension."""
        ...

    def write(
        self, d: Dialect, name: str, embedder: str, docs: list[NewDocument], replace: bool
    ) -> Plan[None]:
        """Insert (or replace) the documents, making the collection when absent, its dimension
        re-checked inside the transaction."""
        ...

    def get(self, d: Dialect, name: str, ids: list[str]) -> Plan[list[Document]]:
        """The documents with these ids that exist, in the order asked, with embeddings."""
        ...

    def delete(self, d: Dialect, name: str, ids: list[str]) -> Plan[int]:
        """Delete the documents with these ids; how many existed."""
        ...

    def search(self, d: Dialect, q: VectorQuery) -> Plan[list[SearchResult]]:
        """The ``q.limit`` best by cosine among the documents matching ``q.conditions``, ties by
        id (DimensionMismatchError for a query of another dimension; [] for no collection)."""
        ...

    def collections(self, d: Dialect) -> Plan[list[CollectionInfo]]:
        """Every collection, by name (code point order)."""
        ...

    def dump(self, d: Dialect) -> Plan[list[CollectionRow]]:
        """Every collection with its documents and embeddings, by name (for ``axio-context copy``)."""
        ...

    def load(self, d: Dialect, row: CollectionRow) -> Plan[None]:
        """Create a collection the database lacks, with its documents (for ``axio-context copy``)."""
        ...


def find_collection(d: Dialect, name: str) -> Plan[Collection | None]:
    """The collection called ``name``, or None."""
    row = yield Row("SELECT id, dimension, embedder FROM memory_collections WHERE name = ?", (name,))
    return None if row is None else (int(row[0]), int(row[1]), str(row[2]))


def _documents(d: Dialect, name: str, limit: int) -> Plan[list[Document]]:
    found = yield from find_collection(d, name)
    if found is None:
        return []
    rows = yield Rows(
        f"SELECT id, content, {d.json_text('metadata')} FROM memory_documents WHERE collection = ?"
        f" AND {live()} ORDER BY {d.by_code_point('id')} LIMIT ?",
        (found[0], now_ms(), limit),
    )
    return [Document(str(i), str(t), None, decode_object(m)) for i, t, m in rows]


class SQLVectorStore:
    """:class:`~axio_context.memory.VectorStore` in a SQL database. ``embedder`` computes
    missing document and text-query embeddings; ``candidates`` is how many documents the coarse
    pass keeps for exact re-scoring; ``ttl`` is the documents' expiry (:mod:`axio_context.expiry`)."""

    def __init__(
        self,
        runner: Runner,
        statements: VectorStatements,
        *,
        embedder: Embedder | None = None,
        candidates: int = DEFAULT_CANDIDATES,
        ttl: TTLConfig = NO_TTL,
    ) -> None:
        if isinstance(candidates, bool) or not isinstance(candidates, int) or candidates < 1:
            raise InvalidInputError(f"candidates is a whole number >= 1, got {candidates!r}")
        if not isinstance(ttl, TTLConfig):
            raise InvalidInputError(f"ttl is a TTLConfig, got {type(ttl).__name__}")
        self._ttl = ttl
        self._runner = runner
        self._sql = statements
        self._embedder = embedder
        self._candidates = min(candidates, _MOST)

    @property
    def embedder(self) -> Embedder | None:
        """The embedder that computes missing document and query embeddings, if any."""
        return self._embedder

    def _label(self) -> str:
        return self._embedder.model if self._embedder is not None else ""

    async def create_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create an empty collection of a fixed dimension (a no-op if it exists with that one)."""
        check_collection_name(name)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInputError(f"a collection dimension is a whole number >= 1, got {dimension!r}")
        label = embedder if embedder is not None else self._label()
        await self._runner.write(self._sql.create, name, dimension, label)

    @property
    def ttl(self) -> TTLConfig:
        """The documents' expiry: the default TTL and whether reads refresh."""
        return self._ttl

    async def count_expired(self) -> int:
        """How many documents have expired and wait for a sweep."""
        return await self._runner.read(count, now_ms())

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Delete the expired documents (with their embeddings); how many went
        (``batch`` at most per transaction)."""
        return await in_batches(self._runner, sweep, self._sql.delete, now_ms(), batch=batch)

    async def _seen(self, name: str, ids: list[str], refresh_ttl: bool | None) -> None:
        if ids and self._ttl.refresh(refresh_ttl):
            await self._runner.write(refresh_docs, name, ids, now_ms())

    async def _write(
        self, documents: Sequence[Document], collection: str, replace: bool, ttl: TTL = DEFAULT
    ) -> list[str]:
        check_collection_name(collection)
        ttl_ms = resolve_ttl(ttl, self._ttl)
        docs = list(documents)
        found = await self._runner.read(find_collection, collection)
        if found is not None:
            check_embedder(found[2], self._embedder, collection)
        checked = await embed_missing(docs, self._embedder, None if found is None else found[1])
        if checked:
            rows = [(d.id, d.content, vec, meta) for d, vec, meta in checked]
            ids = list(dict.fromkeys(d.id for d in docs))
            args = (self._label(), rows, replace)
            await self._runner.write(
                write_with_ttl,
                self._sql.write,
                self._sql.delete,
                collection,
                args,
                ids,
                replace,
                ttl_ms,
                now_ms(),
            )
        return [d.id for d in docs]

    async def add(
        self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION, ttl: TTL = DEFAULT
    ) -> list[str]:
        """Insert the documents whose ids are absent (present ones are kept); returns their ids.
        ``ttl``: seconds the new ones live (None: until deleted; DEFAULT: the store's)."""
        return await self._write(documents, collection, False, ttl)

    async def upsert(
        self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION, ttl: TTL = DEFAULT
    ) -> list[str]:
        """Insert or replace the documents (each then lives ``ttl`` seconds); returns their ids."""
        return await self._write(documents, collection, True, ttl)

    async def get(
        self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION, refresh_ttl: bool | None = None
    ) -> list[Document]:
        """The documents with these ids that exist (and have not expired), in the order asked."""
        found = await self._runner.read(get_live, self._sql.get, collection, [str(i) for i in ids], now_ms())
        await self._seen(collection, [doc.id for doc in found], refresh_ttl)
        return found

    async def delete(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> int:
        """Delete the documents with these ids; returns how many existed."""
        return await self._runner.write(self._sql.delete, collection, sorted({str(i) for i in ids}))

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
        q = VectorQuery(collection, query, conditions, min(limit, _MOST), self._candidates)
        hits = await self._runner.read(search_live, self._sql.search, q, now_ms())
        await self._seen(collection, [h.id for h in hits], None)
        return hits

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
        found = await self._runner.read(find_collection, collection)
        if found is not None:
            check_embedder(found[2], self._embedder, collection)
        [vector] = await self._embedder.embed([query])
        return await self.search(vector, collection=collection, limit=limit, filter=filter)

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection, by name (its count leaves out expired documents)."""
        return await self._runner.read(collections_live, self._sql.collections, now_ms())

    async def documents(self, collection: str = DEFAULT_COLLECTION, *, limit: int = 20) -> list[Document]:
        """The first ``limit`` documents of a collection by id, without their embeddings."""
        check_limit(limit)
        return await self._runner.read(_documents, collection, min(limit, _MOST))
