"""Opening a PostgreSQL database: the URL, the asyncpg pool, and errors made into named ones.

:func:`connect` checks the URL, opens a pool (asyncpg's: see ``bench/bench_postgres.py`` for why
asyncpg), migrates the schema once, and registers pgvector's codec on every connection where the
``vector`` extension exists. :func:`translated` turns the driver's errors into this package's
(one line each): a server that is down, a refused password, a missing database, a connection
dropped mid-transaction (the server rolls it back, so nothing is half-written).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlsplit

import asyncpg

from axio_context.encryption import key_from_environment
from axio_context.errors import AxioContextError, DatabaseError, DatabaseNotFoundError
from axio_context.locations import shown_location
from axio_context.sealing import PayloadCipher

from .errors import (
    AuthenticationError,
    ConnectionLostError,
    PostgresURLError,
    ServerUnavailableError,
    TextNotStorableError,
)
from .schema import migrate
from .sealed import SealingConnection, check_key, open_on_read

__all__ = ["Pool", "connect", "is_postgres_url", "redacted", "translated"]

Pool = asyncpg.Pool

#: The URL schemes this backend takes (libpq's).
SCHEMES: Final = ("postgresql", "postgres")


def is_postgres_url(text: object) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://...``) rather than a file."""
    return isinstance(text, str) and text.split("://", 1)[0].lower() in SCHEMES and "://" in text


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***``, for messages
    (:func:`axio_context.locations.shown_location`)."""
    return shown_location(url)


def check_url(url: str) -> None:
    """Refuse (PostgresURLError) a URL that is not a well-formed ``postgresql://`` URL."""
    if not is_postgres_url(url):
        raise PostgresURLError(f"not a PostgreSQL URL (postgresql://user@host/db): {redacted(url)!r}")
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a port that is not a number
    except ValueError:
        # (the parser's own words would quote the part it choked on: part of a password)
        raise PostgresURLError(
            f"PostgreSQL URL {redacted(url)!r} does not parse: its host or port is not one"
            " (a password holding / ? # or @ is written percent-encoded: %2F %3F %23 %40)"
        ) from None


@contextlib.asynccontextmanager
async def translated(where: str) -> AsyncIterator[None]:
    """Run a database call with the driver's errors turned into this package's named ones."""
    try:
        yield
    except AxioContextError:
        raise
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError) as exc:
        raise AuthenticationError(f"{where}: the server refused the login: {exc}") from None
    except asyncpg.InvalidCatalogNameError as exc:
        raise DatabaseNotFoundError(f"{where}: {exc}") from None
    except (
        asyncpg.ConnectionDoesNotExistError,
        asyncpg.AdminShutdownError,
        asyncpg.CrashShutdownError,
        asyncpg.CannotConnectNowError,
        asyncpg.ConnectionFailureError,
    ) as exc:
        raise ConnectionLostError(
            f"{where}: the connection to the server was lost ({exc});"
            " the unfinished transaction was rolled back"
        ) from None
    except asyncpg.InternalClientError as exc:
        # What a connection the server closed under it can raise instead (a terminated backend).
        raise ConnectionLostError(
            f"{where}: the connection broke ({exc}); the unfinished transaction was rolled back"
        ) from None
    except asyncpg.InterfaceError as exc:
        if "closed" in str(exc) or "connection" in str(exc):
            raise ConnectionLostError(f"{where}: the connection is closed ({exc})") from None
        raise DatabaseError(f"{where}: {exc}") from None
    except (asyncpg.CharacterNotInRepertoireError, asyncpg.UntranslatableCharacterError) as exc:
        # A NUL in text, or a \u0000 escape in JSON: PostgreSQL stores neither.
        raise TextNotStorableError(f"{where}: PostgreSQL cannot store this text: {exc}") from None
    except asyncpg.PostgresError as exc:
        raise DatabaseError(f"{where}: {type(exc).__name__}: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise ServerUnavailableError(f"{where}: cannot reach the server ({exc.strerror or exc})") from None


async def has_vector(conn: Any) -> bool:
    """Whether the ``vector`` extension is installed in this database."""
    return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"))


async def _setup(conn: Any) -> None:
    if await has_vector(conn):
        from pgvector.asyncpg import register_vector

        await register_vector(conn)


def _setup_sealing(cipher: PayloadCipher | None) -> Callable[[Any], Awaitable[None]]:
    """The pool's ``init``: pgvector's codec, and the key every connection seals with."""

    async def setup(conn: Any) -> None:
        conn._axio_cipher = cipher
        if cipher is not None:
            await open_on_read(conn, cipher)
        await _setup(conn)

    return setup


async def _no_reset(conn: Any) -> None:
    """Release a connection as it is (see :func:`connect`)."""


class _Pool(asyncpg.Pool):  # type: ignore[misc]
    """asyncpg's pool, handing a connection back in place when nothing can interrupt that.

    asyncpg runs every release in a new task under ``asyncio.shield`` (so a cancelled caller
    cannot strand a connection half reset): a task and a loop iteration per call (an acquire
    and release 44 us that way, 22 us this way, load ~4.6). With no reset (see :func:`connect`)
    a connection outside a transaction, not being cancelled, not due to close, is released
    without awaiting anything, so there is no point at which a cancellation could land: that
    release is made directly. Any other (a transaction left open: a ROLLBACK to send) goes
    asyncpg's way.
    """

    async def release(self, connection: Any, *, timeout: float | None = None) -> None:  # noqa: ASYNC109 (asyncpg's signature)
        holder: Any = getattr(connection, "_holder", None)
        con: Any = getattr(connection, "_con", None)
        try:
            direct = (
                holder is not None
                and con is not None
                and holder._pool is self
                and holder._generation == self._generation
                and not con.is_closed()
                and not con.is_in_transaction()
                and con._top_xact is None
                and not con._protocol._is_cancelling()
                and con._protocol.queries_count < holder._max_queries
            )
        except AttributeError:  # another asyncpg than the one this was written against
            direct = False
        if not direct:
            await super().release(connection, timeout=timeout)
            return
        self._check_init()
        con._on_release()
        await holder.release(holder._timeout if timeout is None else timeout)


async def _try_create_vector(conn: Any) -> None:
    """Install pgvector where the server has it and the user may; without it search says so."""
    if await has_vector(conn):
        return
    available = await conn.fetchval(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
    )
    if not available:
        return
    with contextlib.suppress(asyncpg.InsufficientPrivilegeError, asyncpg.FeatureNotSupportedError):
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")


async def connect(
    url: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    connect_timeout: float = 10.0,
    key: bytes | str | None = None,
) -> asyncpg.Pool:
    """Open a pool on ``url`` (creating or upgrading the schema); the caller closes it.

    ``key``: the key its data is sealed under (:mod:`.sealed`; None: ``$AXIO_CONTEXT_KEY`` or
    its file, if set); an empty database opened with a key is encrypted from then on.
    Raises PostgresURLError, ServerUnavailableError, AuthenticationError, DatabaseNotFoundError
    or SchemaVersionError, each naming the database (its password hidden), and KeyRequiredError,
    WrongKeyError or NotEncryptedError when the key and the database do not match.
    """
    check_url(url)
    where = f"PostgreSQL at {redacted(url)}"
    if key is None:
        key = key_from_environment()
    cipher = None if key is None else PayloadCipher(key)
    async with translated(where):
        first = await asyncpg.connect(url, timeout=connect_timeout)
        try:
            await _try_create_vector(first)
            await migrate(first)
            await check_key(first, cipher, where)
        finally:
            await first.close()
        # No reset: the store keeps no session state on a connection (SET LOCAL only), so the
        # round trip asyncpg spends resetting each released connection buys nothing.
        # asyncpg.create_pool's defaults, but our pool class (see _Pool).
        pool = await _Pool(
            url,
            min_size=min_size,
            max_size=max_size,
            max_queries=50_000,
            max_inactive_connection_lifetime=300.0,
            loop=None,
            init=_setup_sealing(cipher),
            timeout=connect_timeout,
            reset=_no_reset,
            connection_class=SealingConnection,
            record_class=asyncpg.Record,
        )
        assert pool is not None
        return pool
