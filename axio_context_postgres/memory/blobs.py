"""The blob store on PostgreSQL: :class:`PostgresBlobStore`, ravi's ``BlobStore``.

Bytes are stored once per database, by SHA-256 (``memory_blob_data``), in pieces of
:data:`~axio_context.memory.blobs.CHUNK_SIZE` (``memory_blob_pieces``: a ``bytea`` is read whole,
so pieces are what lets a download stream); each key (``memory_blob_keys``) points at its bytes.
An upload is spooled to a temporary file while its hash and size are checked, then written in one
transaction; the bytes go when the last key holding them does. Keys and bytes are locked in a
fixed order (the key row, then the bytes row), so concurrent uploads of one key or one content
never interleave.

``presign_url`` gives ``axio-blob+postgresql:///<database>?key=<key>&expires=<unix time>``, which
:meth:`PostgresBlobStore.open_url` (or :func:`open_blob_url` with a pool on that database) reads
back until it expires. The URL carries no password: whoever opens it needs their own pool.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from collections.abc import AsyncIterator
from typing import IO, Any, Final
from urllib.parse import parse_qs, quote, unquote, urlsplit

from axio_context.copying import BlobRow
from axio_context.memory.blobs import (
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
from axio_context.memory.errors import BlobNotFoundError, InvalidInputError

from ..connection import Pool
from .common import now_ms, transaction

__all__ = ["URL_SCHEME", "PostgresBlobStore", "open_blob_url"]

URL_SCHEME: Final = "axio-blob+postgresql"

_INFO: Final = (
    "SELECT k.key, d.size, k.content_type, k.hash FROM memory_blob_keys k"
    " JOIN memory_blob_data d ON d.hash = k.hash"
)


def _info(row: Any) -> BlobInfo:
    return BlobInfo(str(row[0]), int(row[1]), str(row[2]), bytes(row[3]).hex())


def _missing(key: str) -> BlobNotFoundError:
    return BlobNotFoundError(f"no blob under key {key!r}")


async def _spool_pieces(spool: IO[bytes]) -> AsyncIterator[bytes]:
    spool.seek(0)
    while piece := await asyncio.to_thread(spool.read, CHUNK_SIZE):
        yield piece


async def _bytes_pieces(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), CHUNK_SIZE):
        yield data[start : start + CHUNK_SIZE]


class PostgresBlobStore:
    """:class:`~axio_context.memory.BlobStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it), blobs up to ``max_size`` bytes."""

    def __init__(self, pool: Pool, *, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._pool = pool
        self._max_size = check_max_size(max_size)

    @property
    def max_size(self) -> int:
        """The largest blob this store takes, in bytes."""
        return self._max_size

    async def connect(self) -> None:
        """Nothing to open: the pool is the caller's."""

    async def disconnect(self) -> None:
        """Nothing to release: the pool stays open (its owner closes it)."""

    async def _put(
        self,
        key: str,
        digest: bytes,
        size: int,
        content_type: str,
        pieces: AsyncIterator[bytes],
        created_at: int | None = None,
    ) -> BlobInfo:
        async with transaction(self._pool) as conn:
            old = await conn.fetchval("SELECT hash FROM memory_blob_keys WHERE key = $1 FOR UPDATE", key)
            # ON CONFLICT ... DO UPDATE locks an existing bytes row, so no one frees it under us.
            inserted = await conn.fetchval(
                "INSERT INTO memory_blob_data (hash, size) VALUES ($1, $2)"
                " ON CONFLICT (hash) DO UPDATE SET size = excluded.size RETURNING xmax = 0",
                digest,
                size,
            )
            if inserted:
                seq = 0
                async for piece in pieces:
                    await conn.execute(
                        "INSERT INTO memory_blob_pieces (hash, seq, data) VALUES ($1, $2, $3)",
                        digest,
                        seq,
                        piece,
                    )
                    seq += 1
            await conn.execute(
                "INSERT INTO memory_blob_keys (key, hash, content_type, created_at) VALUES ($1, $2, $3, $4)"
                " ON CONFLICT (key) DO UPDATE SET hash = excluded.hash, content_type = excluded.content_type,"
                " created_at = excluded.created_at",
                key,
                digest,
                content_type,
                now_ms() if created_at is None else created_at,
            )
            if old is not None and bytes(old) != digest:
                await _free(conn, bytes(old))
        return BlobInfo(key, size, content_type, digest.hex())

    async def upload(self, key: str, data: bytes, content_type: str = DEFAULT_CONTENT_TYPE) -> BlobInfo:
        """Store ``data`` under ``key``, replacing what the key held."""
        check_key(key)
        check_content_type(content_type)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInputError(f"blob data is bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) > self._max_size:
            raise too_large(key, self._max_size)
        return await self._put(
            key, hashlib.sha256(data).digest(), len(data), content_type, _bytes_pieces(data)
        )

    async def load_row(self, row: BlobRow) -> None:
        """Store a copied key with its bytes and creation time (for ``axio-context copy``)."""
        digest = hashlib.sha256(row.data).digest()
        await self._put(
            row.key, digest, len(row.data), row.content_type, _bytes_pieces(row.data), row.created_at
        )

    async def dump_rows(self) -> list[BlobRow]:
        """Every key with its bytes and creation time, by key (for ``axio-context copy``)."""
        async with transaction(self._pool, readonly=True) as conn:
            keys = await conn.fetch("SELECT key, content_type, created_at FROM memory_blob_keys ORDER BY key")
            out = []
            for k in keys:
                digest = await conn.fetchval("SELECT hash FROM memory_blob_keys WHERE key = $1", k[0])
                pieces = await conn.fetch(
                    "SELECT data FROM memory_blob_pieces WHERE hash = $1 ORDER BY seq", digest
                )
                out.append(BlobRow(k[0], k[1], int(k[2]), b"".join(p[0] for p in pieces)))
        return out

    async def upload_stream(
        self, key: str, source: BlobSource, content_type: str = DEFAULT_CONTENT_TYPE
    ) -> BlobInfo:
        """:meth:`upload` reading ``source`` chunk by chunk, through a temporary file."""
        check_key(key)
        check_content_type(content_type)
        with tempfile.TemporaryFile(prefix="axio-blob-") as spool:
            digest = hashlib.sha256()
            size = 0
            async for chunk in chunks_of(source):
                size += len(chunk)
                if size > self._max_size:
                    raise too_large(key, self._max_size)
                digest.update(chunk)
                await asyncio.to_thread(spool.write, chunk)
            return await self._put(key, digest.digest(), size, content_type, _spool_pieces(spool))

    async def download(self, key: str) -> tuple[bytes, str]:
        """``(data, content_type)`` stored under ``key``; :class:`BlobNotFoundError` if none."""
        check_key(key)
        async with transaction(self._pool, readonly=True) as conn:
            found = await conn.fetchrow("SELECT hash, content_type FROM memory_blob_keys WHERE key = $1", key)
            if found is None:
                raise _missing(key)
            pieces = await conn.fetch(
                "SELECT data FROM memory_blob_pieces WHERE hash = $1 ORDER BY seq", found["hash"]
            )
        return b"".join(p[0] for p in pieces), str(found["content_type"])

    async def download_stream(self, key: str, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The blob under ``key`` in chunks of at most ``chunk_size`` bytes, one piece read at a
        time, all from one snapshot (a concurrent replace does not mix two versions)."""
        check_key(key)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise InvalidInputError(f"chunk_size is a whole number >= 1, got {chunk_size!r}")
        async with transaction(self._pool, readonly=True) as conn:
            digest = await conn.fetchval("SELECT hash FROM memory_blob_keys WHERE key = $1", key)
            if digest is None:
                raise _missing(key)
            count = int(
                await conn.fetchval("SELECT COUNT(*) FROM memory_blob_pieces WHERE hash = $1", digest)
            )
            for seq in range(count):
                piece = await conn.fetchval(
                    "SELECT data FROM memory_blob_pieces WHERE hash = $1 AND seq = $2", digest, seq
                )
                for start in range(0, len(piece), chunk_size):
                    yield piece[start : start + chunk_size]

    async def stat(self, key: str) -> BlobInfo | None:
        """What is stored under ``key``, without its bytes; None if nothing."""
        check_key(key)
        async with transaction(self._pool, readonly=True) as conn:
            row = await conn.fetchrow(f"{_INFO} WHERE k.key = $1", key)
        return None if row is None else _info(row)

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed. Its bytes go once no other key holds them."""
        check_key(key)
        async with transaction(self._pool) as conn:
            old = await conn.fetchval("DELETE FROM memory_blob_keys WHERE key = $1 RETURNING hash", key)
            if old is not None:
                await _free(conn, bytes(old))
        return old is not None

    async def list_keys(self, prefix: str = "", *, limit: int | None = None) -> list[BlobInfo]:
        """The blobs whose keys start with ``prefix``, by key (code point order)."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"a key prefix is a string, got {type(prefix).__name__}")
        async with transaction(self._pool, readonly=True) as conn:
            rows = await conn.fetch(
                f'{_INFO} WHERE starts_with(k.key, $1) ORDER BY k.key COLLATE "C" LIMIT $2',
                prefix,
                None if limit is None else max(limit, 0),
            )
        return [_info(r) for r in rows]

    async def presign_url(self, key: str, expires_in: int = 3600) -> str:
        """``axio-blob+postgresql:///<database>?key=<key>&expires=<unix time>``, for :meth:`open_url`."""
        check_key(key)
        async with transaction(self._pool, readonly=True) as conn:
            if await conn.fetchval("SELECT 1 FROM memory_blob_keys WHERE key = $1", key) is None:
                raise _missing(key)
            database = await conn.fetchval("SELECT current_database()")
        expires = int(time.time()) + int(expires_in)
        return f"{URL_SCHEME}:///{quote(database, safe='')}?key={quote(key, safe='')}&expires={expires}"

    async def open_url(self, url: str) -> tuple[bytes, str]:
        """``(data, content_type)`` of a URL :meth:`presign_url` gave for this database."""
        return await open_blob_url(self._pool, url)


async def _free(conn: Any, digest: bytes) -> None:
    """Delete the bytes ``digest`` names if no key holds them any more."""
    # Lock the bytes row first: an upload that took it (ON CONFLICT DO UPDATE) commits before we
    # look, and the next statement's snapshot sees its key.
    if await conn.fetchval("SELECT 1 FROM memory_blob_data WHERE hash = $1 FOR UPDATE", digest) is None:
        return
    await conn.execute(
        "DELETE FROM memory_blob_data WHERE hash = $1"
        " AND NOT EXISTS (SELECT 1 FROM memory_blob_keys WHERE hash = $1)",
        digest,
    )


async def open_blob_url(pool: Pool, url: str) -> tuple[bytes, str]:
    """``(data, content_type)`` of a URL :meth:`PostgresBlobStore.presign_url` gave, read through
    ``pool`` (which must be on the database the URL names). Expired URLs are refused."""
    parts = urlsplit(url)
    if parts.scheme != URL_SCHEME or not parts.path.strip("/"):
        raise InvalidInputError(f"not an {URL_SCHEME}:// URL: {url!r}")
    query = parse_qs(parts.query)
    if "key" not in query:
        raise InvalidInputError(f"{URL_SCHEME} URL names no key: {url!r}")
    expires = query.get("expires", [""])[0]
    if expires and not expires.isdigit():
        raise InvalidInputError(f"{URL_SCHEME} URL has a bad expiry time {expires!r}: {url!r}")
    if expires and int(expires) < time.time():
        raise InvalidInputError(f"{URL_SCHEME} URL expired at {expires}: {url!r}")
    database = unquote(parts.path.strip("/"))
    async with transaction(pool, readonly=True) as conn:
        here = await conn.fetchval("SELECT current_database()")
    if here != database:
        raise InvalidInputError(f"{URL_SCHEME} URL is for database {database!r}, this pool is on {here!r}")
    return await PostgresBlobStore(pool).download(query["key"][0])
