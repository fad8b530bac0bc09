"""Which backend a ``--db`` names: a file path opens SQLite, a ``postgresql://`` URL opens the
PostgreSQL backend (the ``postgres`` extra), for every command alike."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from axio_context.errors import DatabaseOpenError

from ..database import Database, open_database

#: The URL schemes that name a PostgreSQL database (libpq's).
SCHEMES = ("postgresql://", "postgres://")


class PostgresExtraMissingError(DatabaseOpenError):
    """A postgresql:// database was named but the ``postgres`` extra is not installed."""


def is_url(value: object) -> bool:
    """Whether ``value`` is a PostgreSQL URL rather than a file path."""
    return isinstance(value, str) and value.lower().startswith(SCHEMES)


def postgres_module() -> Any:
    """:mod:`axio_context_postgres.database`, or a one-line error naming the extra to install."""
    try:
        from axio_context_postgres import database
    except ImportError as exc:
        raise PostgresExtraMissingError(
            f"a postgresql:// database needs the postgres extra: pip install 'axio-context[postgres]' ({exc})"
        ) from None
    return database


@contextlib.asynccontextmanager
async def open_url(url: str) -> AsyncIterator[Database]:
    """Open the PostgreSQL database at ``url``: an object with the methods of :class:`Database`
    that the commands call (those only SQLite files have raise a one-line error)."""
    async with postgres_module().open_database(url) as db:
        yield cast(Database, db)  # duck-typed: the same methods, the same results


def opener(where: str | Path, **options: Any) -> contextlib.AbstractAsyncContextManager[Database]:
    """The ``async with`` that opens ``where``: a URL on PostgreSQL, else the SQLite file."""
    if is_url(where):
        return open_url(str(where))
    return open_database(where, **options)
