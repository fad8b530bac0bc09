"""Vector collections (ravi's ``VectorStore``): documents searched by meaning, in named collections.

A :class:`Document` has an id, its text, an embedding and free JSON metadata. ``add`` inserts
the documents whose ids are absent and leaves present ones as they are; ``upsert`` inserts or
replaces. A document without an embedding is embedded by the store's embedder, else the call is
a :class:`~.errors.MissingEmbeddingError` (a ``ValueError``, as in ravi). A collection's
dimension (and the embedder that made its vectors, when known) is fixed by its first document;
a vector of another length is a :class:`~.errors.DimensionMismatchError`.

Search ranks by cosine similarity (``score``, higher is nearer), ties by id. A ``filter`` keeps
only documents whose metadata matches, and is applied before ranking, so a filtered search still
returns ``limit`` hits when that many match; the grammar is :mod:`.metadata`'s.

This module holds the embedding rules (:func:`check_embedding`, :func:`embed_missing`) and
:class:`InMemoryVectorStore`; the SQLite version is
:class:`axio_context_sqlite.memory.SQLiteVectorStore`.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import operator
from array import array
from collections.abc import Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable

import msgspec

from ..embeddings import Embedder
from .embedding_check import check_embedding, first_not_finite, not_finite, sized_float32
from .errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    InvalidInputError,
    MissingEmbeddingError,
)
from .metadata import MetadataFilter, check_metadata, compile_filter, matches

__all__ = [
    "DEFAULT_COLLECTION",
    "CollectionInfo",
    "Document",
    "InMemoryVectorStore",
    "SearchResult",
    "VectorStore",
    "check_collection_name",
    "check_embedder",
    "check_embedding",
    "check_limit",
    "client_embedder",
    "cosine_similarity",
    "embed_missing",
]

DEFAULT_COLLECTION: Final = "default"


class Document(msgspec.Struct):
    """A text with its embedding and free JSON metadata (ravi's ``Document``)."""

    id: str
    content: str
    embedding: list[float] | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class SearchResult(msgspec.Struct, frozen=True):
    """One hit of :meth:`VectorStore.search`: cosine similarity as ``score``, higher is nearer."""

    id: str
    content: str
    score: float
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class CollectionInfo(msgspec.Struct, frozen=True):
    """A collection: its fixed dimension, the embedder its vectors came from ('' unknown), size."""

    name: str
    dimension: int
    embedder: str
    documents: int


@runtime_checkable
class VectorStore(Protocol):
    """Documents searched by meaning, in named collections (ravi's ``VectorStore``)."""

    async def create_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create an empty collection of a fixed dimension (a no-op if it exists with that one);
        ``embedder`` names the model of its vectors (default: the store's embedder's)."""
        ...

    async def add(self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION) -> list[str]:
        """Insert the documents whose ids are absent (present ones are kept); returns their ids."""
        ...

    async def upsert(
        self, documents: Sequence[Document], *, collection: str = DEFAULT_COLLECTION
    ) -> list[str]:
        """Insert or replace the documents; returns their ids."""
        ...

    async def get(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> list[Document]:
        """The documents with these ids that exist, in the order asked."""
        ...

    async def delete(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> int:
        """Delete the documents with these ids; returns how many existed."""
        ...

    async def search(
        self,
        query_embedding: Sequence[float],
        *,
        collection: str = DEFAULT_COLLECTION,
        limit: int = 5,
        filter: MetadataFilter | None = None,
    ) -> list[SearchResult]:
        """The ``limit`` documents nearest the query among those matching ``filter``."""
        ...

    async def search_text(
        self,
        query: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        limit: int = 5,
        filter: MetadataFilter | None = None,
    ) -> list[SearchResult]:
        """:meth:`search` with ``query`` embedded by the store's embedder."""
        ...

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection, by name."""
        ...


def check_collection_name(name: str) -> str:
    """``name`` if it is a usable collection name (a non-empty string)."""
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"a collection name is a non-empty string, got {name!r}")
    return name


def cosine_similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine of the angle between ``a`` and ``b``; 0.0 when either is all zeros."""
    if len(a) != len(b):
        raise DimensionMismatchError(f"vectors of {len(a)} and {len(b)} dimensions have no cosine")
    dot = float(sum(map(operator.mul, a, b)))
    na = math.sqrt(sum(map(operator.mul, a, a)))
    nb = math.sqrt(sum(map(operator.mul, b, b)))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return dot / (na * nb)


async def embed_missing(
    documents: Sequence[Document], embedder: Embedder | None, dimension: int | None
) -> list[tuple[Document, array[float], dict[str, Any]]]:
    """Each document with its checked float32 embedding (computed by ``embedder`` when absent)
    and a JSON copy of its metadata; raises before anything is written."""
    missing = [d for d in documents if d.embedding is None]
    if missing and embedder is None:
        raise MissingEmbeddingError(
            f"document {missing[0].id!r} has no embedding and the store has no embedder to compute one"
        )
    computed: dict[int, Sequence[float]] = {}
    if missing:
        assert embedder is not None
        vectors = await embedder.embed([d.content for d in missing])
        computed = {id(d): v for d, v in zip(missing, vectors, strict=True)}
    out: list[tuple[Document, array[float], dict[str, Any]]] = []
    for doc in documents:
        if not isinstance(doc.id, str) or not doc.id:
            raise InvalidInputError(f"a document id is a non-empty string, got {doc.id!r}")
        if not isinstance(doc.content, str):
            raise InvalidInputError(
                f"document {doc.id!r}: content is a string, got {type(doc.content).__name__}"
            )
        raw = doc.embedding if doc.embedding is not None else computed[id(doc)]
        vec = sized_float32(raw, dimension, f"document {doc.id!r}: ")
        if dimension is None:
            dimension = len(vec)
        out.append((doc, vec, check_metadata(doc.metadata, f"document {doc.id!r}")))
    bad = first_not_finite([vec for _, vec, _ in out])  # one NumPy pass: a sum each was half the check
    if bad is not None:
        raise not_finite(f"document {out[bad][0].id!r}: ")
    return out


def check_embedder(recorded: str, embedder: Embedder | None, collection: str) -> None:
    """Refuse a collection whose vectors came from another embedder than the store's."""
    if embedder is not None and recorded and recorded != embedder.model:
        raise EmbedderMismatchError(
            f"collection {collection!r} holds vectors of embedder {recorded!r}, this store embeds "
            f"with {embedder.model!r}"
        )


class _ClientEmbedder:
    """ravi's embedding client as an :class:`Embedder`: its ``embed(texts)`` (sync or async),
    named by its ``model`` (or ``model_name``) where it has one, else by its class."""

    def __init__(self, client: Any) -> None:
        self.client = client
        name = getattr(client, "model", None) or getattr(client, "model_name", None)
        self.model: str = name if isinstance(name, str) else type(client).__qualname__
        self.dimension: int = int(getattr(client, "dimension", 0) or 0)

    async def embed(self, texts: Sequence[str]) -> list[Any]:
        vectors = self.client.embed(list(texts))
        if inspect.isawaitable(vectors):
            vectors = await vectors
        return list(vectors)


def client_embedder(client: object) -> Embedder:
    """``client`` as an :class:`Embedder`: itself when it is one, else wrapped (ravi's
    ``embedding_client``, which need have only ``embed(texts)``)."""
    if isinstance(client, Embedder) and isinstance(getattr(client, "model", None), str):
        return client
    if not callable(getattr(client, "embed", None)):
        raise TypeError(f"an embedding client needs embed(texts); {type(client).__name__} has none")
    return cast(Embedder, _ClientEmbedder(client))


def check_limit(limit: int) -> int:
    """``limit`` if it is a usable result count (0 gives no results)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidInputError(f"limit is a whole number >= 0, got {limit!r}")
    return limit


# --- in memory -------------------------------------------------------------------------------------


class _Stored(msgspec.Struct):
    content: str
    vector: array[float]
    metadata: dict[str, Any]


class _Collection(msgspec.Struct):
    dimension: int
    embedder: str
    docs: dict[str, _Stored]


class InMemoryVectorStore:
    """:class:`VectorStore` in a dict, exact cosine search: for tests and small sets (ravi's name)."""

    def __init__(self, embedder: Embedder | None = None, *, embedding_client: object | None = None) -> None:
        """``embedding_client=`` is ravi's name for ``embedder`` (any object with ``embed(texts)``)."""
        if embedding_client is not None:
            if embedder is not None:
                raise TypeError("InMemoryVectorStore() got both 'embedder' and ravi's 'embedding_client'")
            embedder = client_embedder(embedding_client)
        self._embedder = embedder
        self._collections: dict[str, _Collection] = {}
        self._lock = asyncio.Lock()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder that computes missing document and query embeddings, if any."""
        return self._embedder

    async def create_collection(self, name: str, dimension: int, *, embedder: str | None = None) -> None:
        """Create an empty collection of a fixed dimension (a no-op if it exists with that one)."""
        check_collection_name(name)
        if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
            raise InvalidInputError(f"a collection dimension is a whole number >= 1, got {dimension!r}")
        async with self._lock:
            have = self._collections.get(name)
            if have is not None:
                if have.dimension != dimension:
                    raise DimensionMismatchError(
                        f"collection {name!r} exists with {have.dimension} dimensions, not {dimension}"
                    )
                return
            label = embedder if embedder is not None else (self._embedder.model if self._embedder else "")
            self._collections[name] = _Collection(dimension, label, {})

    async def _write(self, documents: Sequence[Document], collection: str, replace: bool) -> list[str]:
        check_collection_name(collection)
        docs = list(documents)
        async with self._lock:
            have = self._collections.get(collection)
            if have is not None:
                check_embedder(have.embedder, self._embedder, collection)
            checked = await embed_missing(docs, self._embedder, have.dimension if have else None)
            if not checked:
                return []
            if have is None:
                label = self._embedder.model if self._embedder else ""
                have = self._collections[collection] = _Collection(len(checked[0][1]), label, {})
            for doc, vec, meta in checked:
                if replace or doc.id not in have.docs:
                    have.docs[doc.id] = _Stored(doc.content, vec, meta)
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
        have = self._collections.get(collection)
        if have is None:
            return []
        out = []
        for i in ids:
            s = have.docs.get(i)
            if s is not None:
                out.append(Document(i, s.content, list(s.vector), check_metadata(s.metadata)))
        return out

    async def delete(self, ids: Sequence[str], *, collection: str = DEFAULT_COLLECTION) -> int:
        """Delete the documents with these ids; returns how many existed."""
        have = self._collections.get(collection)
        if have is None:
            return 0
        return sum(have.docs.pop(i, None) is not None for i in set(ids))

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
        have = self._collections.get(collection)
        query = check_embedding(query_embedding, have.dimension if have else None, "query")
        if have is None or limit == 0:
            return []
        scored = [
            (cosine_similarity(query, s.vector), i, s)
            for i, s in have.docs.items()
            if matches(s.metadata, conditions)
        ]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [SearchResult(i, s.content, score, dict(s.metadata)) for score, i, s in scored[:limit]]

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
        have = self._collections.get(collection)
        if have is not None:
            check_embedder(have.embedder, self._embedder, collection)
        [vector] = await self._embedder.embed([query])
        return await self.search(vector, collection=collection, limit=limit, filter=filter)

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection, by name."""
        return [
            CollectionInfo(name, c.dimension, c.embedder, len(c.docs))
            for name, c in sorted(self._collections.items())
        ]
