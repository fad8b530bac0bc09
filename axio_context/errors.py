"""The package's exceptions: one base class, one small named error per failure.

The library raises these; only the command line turns them into one-line messages and exit codes.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousSessionError",
    "AxioContextError",
    "CheckpointError",
    "CheckpointsUnsupportedError",
    "CorruptDataError",
    "CorruptDatabaseError",
    "DatabaseError",
    "DatabaseLockedError",
    "DatabaseNotFoundError",
    "DatabaseOpenError",
    "DecodeError",
    "DestinationExistsError",
    "EmbedderDimensionError",
    "EmbedderUnavailableError",
    "EmbeddingMismatchError",
    "MessageNotFoundError",
    "NoEmbeddingsError",
    "NotAnAxioDatabaseError",
    "ReadOnlyDatabaseError",
    "SchemaVersionError",
    "SearchQueryError",
    "SessionExistsError",
    "SessionNotFoundError",
    "StoreClosedError",
    "SummarizerError",
    "SummarizerHTTPError",
    "SummarizerResponseError",
    "SummarizerTimeoutError",
    "TokenCountError",
    "TranscriptError",
    "UnknownModelError",
    "VecUnavailableError",
]


class AxioContextError(Exception):
    """Base class of every error this package raises on purpose."""


class DecodeError(AxioContextError, ValueError):
    """Data that does not decode into blocks or messages; the text names the field."""


class LimitError(AxioContextError, ValueError):
    """A history limit that is not a whole number of messages, 0 or more."""


class SessionOwnerError(AxioContextError, ValueError):
    """A session another framework's adapter (or plain axio code) writes, opened by an adapter."""


class SessionNotFoundError(AxioContextError, LookupError):
    """No session with that id (or id prefix) exists."""


class StoreClosedError(AxioContextError, RuntimeError):
    """The store or its connection was closed and cannot be used again."""


class CheckpointError(AxioContextError, ValueError):
    """A checkpoint that cannot be stored: its position lies outside the transcript, or it is malformed."""


class CheckpointsUnsupportedError(AxioContextError, NotImplementedError):
    """The wrapped store keeps no checkpoints (it does not implement ``CheckpointStore``)."""


class SummarizerError(AxioContextError, RuntimeError):
    """A summarizer could not produce a summary (unreachable server, refused request, bad reply)."""


class SummarizerTimeoutError(SummarizerError, TimeoutError):
    """The summarizer's endpoint did not answer within the timeout."""


class SummarizerHTTPError(SummarizerError):
    """The summarizer's endpoint answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class SummarizerResponseError(SummarizerError):
    """The summarizer's endpoint answered with something that is not a chat completion."""


class TokenCountError(AxioContextError, ValueError):
    """A token count that is not a whole number, or a total outside 0..2**63-1; nothing changed."""


class UnknownModelError(AxioContextError, LookupError):
    """A model name missing from the table of known context windows."""


class DatabaseError(AxioContextError):
    """A database could not be used; the message says which file and why."""


class DatabaseNotFoundError(DatabaseError, FileNotFoundError):
    """The database file does not exist (and this operation does not create one)."""


class DatabaseOpenError(DatabaseError):
    """The database file or its folder cannot be opened or created."""


class DatabaseLockedError(DatabaseError):
    """Another connection held the write lock for longer than the busy timeout."""


class ReadOnlyDatabaseError(DatabaseError):
    """A write was attempted on a read-only database file, folder or connection."""


class CorruptDatabaseError(DatabaseError):
    """The file is not a database, or its contents are damaged."""


class SchemaVersionError(DatabaseError):
    """The database was written by a newer version of axio-context than this one."""


class CorruptDataError(DatabaseError, DecodeError):
    """A stored row does not decode; the message names the session and position."""


class SearchQueryError(AxioContextError, ValueError):
    """A search query that cannot run: raw FTS5 syntax SQLite rejects, or past a search limit."""


class EmbedderUnavailableError(AxioContextError, ImportError):
    """An optional embedding model is not installed; the text names the extra to install."""


class AmbiguousSessionError(AxioContextError, LookupError):
    """A session id prefix matches more than one session; the message lists the candidates."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class SessionExistsError(AxioContextError, ValueError):
    """An imported session's id is already in the database and neither replace nor new ids was asked."""


class TranscriptError(DecodeError):
    """An export file that does not parse or validate; the message names the line or field."""


class NotAnAxioDatabaseError(DatabaseError):
    """The file given to migrate is not a database written by axio-context-sqlite."""


class DestinationExistsError(AxioContextError, FileExistsError):
    """A file to be written (a backup, an export) already exists and overwriting was not asked."""


class EmbeddingMismatchError(AxioContextError, ValueError):
    """Vectors from another embedding model or dimension than the one the database records."""


class EmbedderDimensionError(EmbeddingMismatchError):
    """An embedder declares a dimension that is not a positive integer (0 would embed nothing)."""


class NoEmbeddingsError(AxioContextError, LookupError):
    """Semantic search needs embeddings that are not there yet; ``reindex`` computes them."""


class MessageNotFoundError(AxioContextError, LookupError):
    """No message at that position of the session."""


class VecUnavailableError(AxioContextError, RuntimeError):
    """An operation needs sqlite-vec, which does not run on this connection."""
