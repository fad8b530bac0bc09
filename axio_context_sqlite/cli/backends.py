"""Which backend a ``--db`` names, for every command alike: whatever the registry opens
(:mod:`axio_context.backends.registry`: a path or ``sqlite://`` is SQLite, ``postgresql://``
PostgreSQL, another scheme its registered backend). The commands speak only the protocol
(:class:`axio_context.backends.OpenDatabase`) and never import a backend by name."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from axio_context.backends import BackendMissingError, OpenDatabase, is_url, open_database

__all__ = ["BackendMissingError", "OpenDatabase", "PostgresExtraMissingError", "is_url", "opener"]

#: The error a location whose backend is not installed gives (its old name, kept for importers).
PostgresExtraMissingError = BackendMissingError


def opener(
    where: str | Path, key: bytes | None = None, **options: Any
) -> contextlib.AbstractAsyncContextManager[OpenDatabase]:
    """The ``async with`` that opens ``where`` on its backend (``create``, ``readonly`` as
    :func:`axio_context.backends.open_database` takes them); ``key``: from ``--key-file`` (None:
    the environment's, which the SQLite backend reads itself)."""
    if key is not None:
        options["key"] = key
    return open_database(where, **options)
