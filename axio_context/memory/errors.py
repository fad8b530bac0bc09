"""The named errors of the agent memory stores (vectors, blobs, graph, tasks).

Each is a :class:`~axio_context.errors.AxioContextError`; the ones about bad input are also
``ValueError`` (ravi's stores raise ``ValueError`` there) and the "not there" ones ``LookupError``.
Every one is raised before anything is written.
"""

from __future__ import annotations

from axio_context.errors import AxioContextError

__all__ = [
    "BlobKeyError",
    "BlobNotFoundError",
    "BlobTooLargeError",
    "DimensionMismatchError",
    "EmbedderMismatchError",
    "EntityNotFoundError",
    "FilterError",
    "InvalidEmbeddingError",
    "InvalidInputError",
    "MemoryStoreError",
    "MissingEmbeddingError",
    "TaskStatusError",
]


class MemoryStoreError(AxioContextError):
    """Base class of the memory stores' errors."""


class DimensionMismatchError(MemoryStoreError, ValueError):
    """An embedding whose length is not the collection's fixed dimension."""


class EmbedderMismatchError(MemoryStoreError, ValueError):
    """A collection recorded for one embedder used with another."""


class InvalidEmbeddingError(MemoryStoreError, ValueError):
    """An embedding holding NaN or infinity, or empty."""


class InvalidInputError(MemoryStoreError, ValueError):
    """An argument out of range or of the wrong kind: an empty id, a negative limit, metadata not JSON."""


class MissingEmbeddingError(MemoryStoreError, ValueError):
    """A document without an embedding, and no embedder to compute one."""


class FilterError(MemoryStoreError, ValueError):
    """A metadata filter with an unknown operator or a value that operator cannot take."""


class BlobKeyError(MemoryStoreError, ValueError):
    """A blob key that is empty, too long, or holds a NUL character."""


class BlobTooLargeError(MemoryStoreError, ValueError):
    """A blob larger than the store's size limit."""


class BlobNotFoundError(MemoryStoreError, LookupError):
    """No blob is stored under that key."""


class EntityNotFoundError(MemoryStoreError, LookupError):
    """A relationship whose source or target entity does not exist."""


class TaskStatusError(MemoryStoreError, ValueError):
    """A task status that is not one of :class:`~axio_context.memory.tasks.TaskStatus`."""
