"""The package's exceptions: one base class, one small named error per failure.

The library raises these; only the command line turns them into one-line messages and exit codes.
"""

from __future__ import annotations

__all__ = [
    "AxioContextError",
    "DecodeError",
    "EmbedderUnavailableError",
    "SearchQueryError",
    "SessionNotFoundError",
    "StoreClosedError",
]


class AxioContextError(Exception):
    """Base class of every error this package raises on purpose."""


class DecodeError(AxioContextError, ValueError):
    """Data that does not decode into blocks or messages; the text names the field."""


class SessionNotFoundError(AxioContextError, LookupError):
    """No session with that id (or id prefix) exists."""


class StoreClosedError(AxioContextError, RuntimeError):
    """The store or its connection was closed and cannot be used again."""


class SearchQueryError(AxioContextError, ValueError):
    """A raw FTS5 search query that SQLite could not parse; the text quotes the query and why."""


class EmbedderUnavailableError(AxioContextError, ImportError):
    """An optional embedding model is not installed; the text names the extra to install."""
