"""Agent memory beside the conversation (ravi's storage protocols): vector collections, a blob
store, a graph store and a task store, each a protocol with an in-memory version here and a
SQLite version in :mod:`axio_context_sqlite.memory` (the same file as the sessions).

The names follow ravi's agents layer, so code written against ravi's in-memory stores moves here
by changing imports. :mod:`axio_context.memory.testing` holds one contract suite per protocol.
"""

from .blobs import BlobInfo, BlobSource, BlobStore, InMemoryFileStore
from .errors import (
    BlobKeyError,
    BlobNotFoundError,
    BlobTooLargeError,
    DimensionMismatchError,
    EmbedderMismatchError,
    EntityNotFoundError,
    FilterError,
    InvalidEmbeddingError,
    InvalidInputError,
    MemoryStoreError,
    MissingEmbeddingError,
    TaskStatusError,
)
from .expiring import ExpiredCounts, StoreExpiry
from .graph import CypherCapable, Entity, GraphCounts, GraphStore, InMemoryGraphStore, Relationship, SubGraph
from .metadata import MetadataFilter
from .tasks import GlobalTaskStore, InMemoryTaskStore, Task, TaskList, TaskStatus, TaskStore
from .vectors import CollectionInfo, Document, InMemoryVectorStore, SearchResult, VectorStore

#: ravi's other name for the in-memory blob store.
InMemoryBlobStore = InMemoryFileStore

__all__ = [
    "BlobInfo",
    "BlobKeyError",
    "BlobNotFoundError",
    "BlobSource",
    "BlobStore",
    "BlobTooLargeError",
    "CollectionInfo",
    "CypherCapable",
    "DimensionMismatchError",
    "Document",
    "EmbedderMismatchError",
    "Entity",
    "EntityNotFoundError",
    "ExpiredCounts",
    "FilterError",
    "GlobalTaskStore",
    "GraphCounts",
    "GraphStore",
    "InMemoryBlobStore",
    "InMemoryFileStore",
    "InMemoryGraphStore",
    "InMemoryTaskStore",
    "InMemoryVectorStore",
    "InvalidEmbeddingError",
    "InvalidInputError",
    "MemoryStoreError",
    "MetadataFilter",
    "MissingEmbeddingError",
    "Relationship",
    "SearchResult",
    "StoreExpiry",
    "SubGraph",
    "Task",
    "TaskList",
    "TaskStatus",
    "TaskStatusError",
    "TaskStore",
    "VectorStore",
]
