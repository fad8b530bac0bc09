"""The blob store on any SQL backend, written once: :class:`SQLBlobStore` holds the rules (keys,
content types, the size limit, uploads spooled to a temporary file while their hash is taken,
downloads streamed a piece at a time, key listings by prefix, signed URLs) and runs the
backend's :class:`BlobStatements`, the plans of how it keeps the bytes (SQLite shares the
``blobs`` table with messages' media; PostgreSQL keeps pieces of its own).

A URL from :meth:`SQLBlobStore.presign_url` names the database, the key and an expiry time, and
carries an HMAC-SHA256 of the three under a secret kept in the database itself (made by the
first URL): it opens only where that database is readable, and editing the key or the expiry
(or dropping either) breaks the signature, so a URL cannot be stretched past the time it was
given for.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Final, NamedTuple, Protocol, TypeVar
from urllib.parse import parse_qs, quote, unquote, urlsplit

from axio_context.copying import BlobRow
from axio_context.expiry import DEFAULT, NO_TTL, TTL, TTLConfig, now_ms, resolve_ttl
from axio_context.sql import Dialect, Plan, Runner
from axio_context.sql.expiry import SWEEP_BATCH, count_due, in_batches, refresh

from .blob_expiry_sql import KEYS, delete_alive, if_alive, put_with_ttl
from .blobs import (
    CHUNK_SIZE,
    DEFAULT_CONTENT_TYPE,
    DEFAULT_MAX_SIZE,
    BlobInfo,
    BlobSource,
    check_content_type,
    check_key,
    check_max_size,
    chunks_of,
    too_large,
)
from .errors import BlobNotFoundError, InvalidInputError

__all__ = [
    "BlobStatements",
    "NewBlob",
    "Pieces",
    "SQLBlobStore",
    "bytes_pieces",
    "new_secret",
    "parse_url",
    "upper_bound",
]

T = TypeVar("T")

#: What a put reads the bytes from: called once, yields them in pieces of at most CHUNK_SIZE.
Pieces = Callable[[], Iterator[bytes]]
#: The largest row count a query is asked for (SQL's LIMIT is a signed 64-bit number).
_MOST: Final = 2**63 - 1
#: The longest a signed URL may be given for (ten years), so its expiry stays a sane number.
MAX_EXPIRES_IN: Final = 10 * 365 * 24 * 3600


class NewBlob(NamedTuple):
    """What a put writes: the key, the bytes' SHA-256 and size, the content type, the bytes in
    pieces, and the creation time (None: now)."""

    key: str
    digest: bytes
    size: int
    content_type: str
    pieces: Pieces
    created_at: int | None = None


class BlobStatements(Protocol):
    """The plans a backend gives :class:`SQLBlobStore` (each runs as one transaction)."""

    #: The URL scheme of this backend's signed URLs.
    scheme: str

    def put(self, d: Dialect, blob: NewBlob) -> Plan[None]:
        """Point ``blob.key`` at its bytes (stored unless the database has them), freeing what
        the key held."""
        ...

    def delete(self, d: Dialect, key: str) -> Plan[bool]:
        """Remove ``key`` (its bytes go once nothing holds them); whether it existed."""
        ...

    def stat(self, d: Dialect, key: str) -> Plan[BlobInfo | None]:
        """What ``key`` holds, without its bytes."""
        ...

    def read(self, d: Dialect, key: str) -> Plan[tuple[bytes, str] | None]:
        """``(data, content_type)`` under ``key``."""
        ...

    def opened(self, d: Dialect, key: str) -> Plan[tuple[bytes, int, bytes | None] | None]:
        """``(hash, size, the bytes when kept whole, else None)`` under ``key``."""
        ...

    def piece(self, d: Dialect, digest: bytes, seq: int, key: str) -> Plan[bytes]:
        """Piece ``seq`` of the bytes ``digest`` (BlobNotFoundError if they went meanwhile)."""
        ...

    def listing(
        self, d: Dialect, prefix: str, upper: str | None, limit: int | None, now: int
    ) -> Plan[list[BlobInfo]]:
        """Keys ``>= prefix`` and ``< upper`` (when given) that start with ``prefix``, by code
        point, leaving out keys expired at ``now`` (:func:`axio_context.sql.expiry.live`)."""
        ...

    def expire(self, d: Dialect, now: int, limit: int) -> Plan[int]:
        """Delete at most ``limit`` of the keys expired at ``now`` (:func:`~axio_context.sql.expiry.due`;
        their bytes go once nothing holds them); how many."""
        ...

    def rows(self, d: Dialect) -> Plan[list[BlobRow]]:
        """Every key with its bytes and creation time, by key (for ``axio-context copy``)."""
        ...

    def location(self, d: Dialect) -> Plan[str]:
        """What a URL names this database by (a file's path; a server database's name)."""
        ...

    def secret(self, d: Dialect, make: bool) -> Plan[str | None]:
        """The database's URL-signing secret (made and kept when ``make`` and absent)."""
        ...


def upper_bound(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix`` (None: no bound), made
    of valid code points only (the next after U+D7FF is U+E000, a surrogate being no text)."""
    while prefix:
        last = ord(prefix[-1])
        if last < 0x10FFFF:
            following = 0xE000 if 0xD800 <= last + 1 <= 0xDFFF else last + 1
            return prefix[:-1] + chr(following)
        prefix = prefix[:-1]
    return None


def new_secret() -> str:
    """A fresh URL-signing secret."""
    return secrets.token_hex(32)


def _signature(secret: str, scheme: str, location: str, key: str, expires: int) -> str:
    message = "\n".join((scheme, location, key, str(expires))).encode("utf-8", "surrogatepass")
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def _spool_pieces(spool: IO[bytes]) -> Pieces:
    def pieces() -> Iterator[bytes]:
        spool.seek(0)
        while piece := spool.read(CHUNK_SIZE):
            yield piece

    return pieces


def bytes_pieces(data: bytes) -> Pieces:
    """``data`` as :data:`Pieces`."""

    def pieces() -> Iterator[bytes]:
        view = memoryview(data)
        for start in range(0, len(view), CHUNK_SIZE):
            yield bytes(view[start : start + CHUNK_SIZE])

    return pieces


def parse_url(scheme: str, url: str) -> tuple[str, str, str, str]:
    """``(location, key, expires, sig)`` of a signed blob URL of ``scheme``, checked for shape
    only (InvalidInputError naming what is missing); :meth:`SQLBlobStore.open_url` checks the rest."""
    if not isinstance(url, str):
        raise InvalidInputError(f"a blob URL is a string, got {type(url).__name__}")
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.scheme != scheme or not parts.path:
        raise InvalidInputError(f"not an {scheme}:// URL")
    if not all(len(query.get(name, ())) == 1 for name in ("key", "expires", "sig")):
        raise InvalidInputError(f"{scheme} URL needs one key, one expires and one sig")
    expires = query["expires"][0]
    if not expires.isdigit() or len(expires) > 12:
        raise InvalidInputError(f"{scheme} URL has a bad expiry time")
    return unquote(parts.path), query["key"][0], expires, query["sig"][0]


class SQLBlobStore:
    """:class:`~axio_context.memory.BlobStore` in a SQL database, blobs up to ``max_size`` bytes;
    ``ttl`` is its expiry (:mod:`axio_context.expiry`: a default TTL, refresh on read)."""

    def __init__(
        self,
        runner: Runner,
        statements: BlobStatements,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        ttl: TTLConfig = NO_TTL,
    ) -> None:
        self._runner = runner
        self._sql = statements
        self._max_size = check_max_size(max_size)
        if not isinstance(ttl, TTLConfig):
            raise InvalidInputError(f"ttl is a TTLConfig, got {type(ttl).__name__}")
        self._ttl = ttl

    @property
    def ttl(self) -> TTLConfig:
        """The store's expiry: its default TTL and whether reads refresh."""
        return self._ttl

    async def _read(
        self, fn: Callable[..., Plan[T]], key: str, refresh_ttl: bool | None, *args: object
    ) -> T | None:
        found = await self._runner.read(if_alive, fn, key, *args)
        if found is not None and self._ttl.refresh(refresh_ttl):
            await self._runner.write(refresh, KEYS, "key", [key], now_ms())
        return found

    async def count_expired(self) -> int:
        """How many keys have expired and wait for a sweep."""
        return await self._runner.read(count_due, KEYS, now_ms())

    async def sweep_expired(self, *, batch: int = SWEEP_BATCH) -> int:
        """Delete the expired keys (their bytes go once nothing holds them); how many went
        (``batch`` at most per transaction)."""
        return await in_batches(self._runner, self._sql.expire, now_ms(), batch=batch)

    @property
    def max_size(self) -> int:
        """The largest blob this store takes, in bytes."""
        return self._max_size

    async def connect(self) -> None:
        """Nothing to open: the store works on the connection or pool it was given."""

    async def disconnect(self) -> None:
        """Nothing to close: the connection or pool is the caller's."""

    async def _put(
        self,
        key: str,
        digest: bytes,
        size: int,
        content_type: str,
        pieces: Pieces,
        created_at: int | None = None,
        ttl_ms: int | None = None,
    ) -> BlobInfo:
        blob = NewBlob(key, digest, size, content_type, pieces, created_at)
        await self._runner.write(put_with_ttl, self._sql.put, blob, ttl_ms)
        return BlobInfo(key, size, content_type, digest.hex())

    async def upload(
        self, key: str, data: bytes, content_type: str = DEFAULT_CONTENT_TYPE, *, ttl: TTL = DEFAULT
    ) -> BlobInfo:
        """Store ``data`` under ``key``, replacing what the key held; ``ttl`` seconds to live
        (None: until deleted; DEFAULT: the store's)."""
        check_key(key)
        check_content_type(content_type)
        ttl_ms = resolve_ttl(ttl, self._ttl)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInputError(f"blob data is bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) > self._max_size:
            raise too_large(key, self._max_size)
        return await self._put(
            key, hashlib.sha256(data).digest(), len(data), content_type, bytes_pieces(data), None, ttl_ms
        )

    async def upload_stream(
        self, key: str, source: BlobSource, content_type: str = DEFAULT_CONTENT_TYPE, *, ttl: TTL = DEFAULT
    ) -> BlobInfo:
        """:meth:`upload` reading ``source`` chunk by chunk, through a temporary file."""
        check_key(key)
        check_content_type(content_type)
        ttl_ms = resolve_ttl(ttl, self._ttl)
        with tempfile.TemporaryFile(prefix="axio-blob-") as spool:
            digest = hashlib.sha256()
            size = 0
            async for chunk in chunks_of(source):
                size += len(chunk)
                if size > self._max_size:
                    raise too_large(key, self._max_size)
                digest.update(chunk)
                spool.write(chunk)
            spool.flush()
            return await self._put(
                key, digest.digest(), size, content_type, _spool_pieces(spool), None, ttl_ms
            )

    async def download(self, key: str, *, refresh_ttl: bool | None = None) -> tuple[bytes, str]:
        """``(data, content_type)`` stored under ``key``; :class:`BlobNotFoundError` if none (or
        expired). ``refresh_ttl`` overrides the store's ``refresh_on_read``."""
        check_key(key)
        found = await self._read(self._sql.read, key, refresh_ttl)
        if found is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        return found

    async def download_stream(self, key: str, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The blob under ``key`` in chunks of at most ``chunk_size`` bytes, read a piece at a
        time (by its hash: a concurrent replace of the key never mixes two contents)."""
        check_key(key)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise InvalidInputError(f"chunk_size is a whole number >= 1, got {chunk_size!r}")
        found = await self._read(self._sql.opened, key, None)
        if found is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        digest, size, whole = found
        if whole is not None:
            for start in range(0, size, chunk_size):
                yield whole[start : start + chunk_size]
            return
        for seq in range((size + CHUNK_SIZE - 1) // CHUNK_SIZE):
            piece = await self._runner.read(self._sql.piece, digest, seq, key)
            for start in range(0, len(piece), chunk_size):
                yield piece[start : start + chunk_size]

    async def stat(self, key: str, *, refresh_ttl: bool | None = None) -> BlobInfo | None:
        """What is stored under ``key``, without its bytes; None if nothing (or expired)."""
        check_key(key)
        return await self._read(self._sql.stat, key, refresh_ttl)

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed (and had not expired). Its bytes go once nothing
        else holds them."""
        check_key(key)
        return await self._runner.write(delete_alive, self._sql.delete, key)

    async def list_keys(self, prefix: str = "", *, limit: int | None = None) -> list[BlobInfo]:
        """The blobs whose keys start with ``prefix``, by key (code point order)."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"a key prefix is a string, got {type(prefix).__name__}")
        try:
            prefix.encode("utf-8")
        except UnicodeEncodeError:
            return []  # a lone surrogate: no key holds one (check_key refuses them)
        bound = None if limit is None else min(max(limit, 0), _MOST)
        return await self._runner.read(self._sql.listing, prefix, upper_bound(prefix), bound, now_ms())

    async def dump_rows(self) -> list[BlobRow]:
        """Every key with its bytes and creation time, by key (for ``axio-context copy``)."""
        return await self._runner.read(self._sql.rows)

    async def load_row(self, row: BlobRow) -> None:
        """Store a copied key with its bytes and creation time (for ``axio-context copy``)."""
        data = row.data
        await self._put(
            row.key,
            hashlib.sha256(data).digest(),
            len(data),
            row.content_type,
            bytes_pieces(data),
            row.created_at,
        )

    async def presign_url(self, key: str, expires_in: int = 3600) -> str:
        """A signed URL for the blob under ``key`` that :meth:`open_url` reads until
        ``expires_in`` seconds from now (at most ten years; a negative one gives a URL that has
        already expired)."""
        check_key(key)
        if (
            isinstance(expires_in, bool)
            or not isinstance(expires_in, int)
            or not -MAX_EXPIRES_IN <= expires_in <= MAX_EXPIRES_IN
        ):
            raise InvalidInputError(
                f"expires_in is a whole number of seconds of at most {MAX_EXPIRES_IN:,}, got {expires_in!r}"
            )
        if await self.stat(key) is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        secret = await self._runner.write(self._sql.secret, True)
        assert secret is not None
        location = await self._runner.read(self._sql.location)
        expires = int(time.time()) + expires_in
        sig = _signature(secret, self._sql.scheme, location, key, expires)
        return f"{self._sql.scheme}://{quote(location)}?key={quote(key, safe='')}&expires={expires}&sig={sig}"

    async def open_url(self, url: str) -> tuple[bytes, str]:
        """``(data, content_type)`` of a URL :meth:`presign_url` gave for this database; an
        edited, unsigned or expired URL, or one for another database, is refused."""
        scheme = self._sql.scheme
        location, key, expires, sig = parse_url(scheme, url)
        if location != await self._runner.read(self._sql.location):
            raise InvalidInputError(f"{scheme} URL is for another database")
        secret = await self._runner.read(self._sql.secret, False)
        if secret is None or not hmac.compare_digest(
            sig, _signature(secret, scheme, location, key, int(expires))
        ):
            raise InvalidInputError(
                f"{scheme} URL signature does not match: it was edited or is not from this database"
            )
        if int(expires) < time.time():
            raise InvalidInputError(
                f"{scheme} URL expired at {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(int(expires)))} UTC"
            )
        return await self.download(key)
