"""The blob store in the SQLite file: :class:`SQLiteBlobStore`, ravi's ``BlobStore``.

Bytes are stored once per database, by SHA-256, in the ``blobs`` table that messages' media
already use: the same bytes uploaded under two keys, or also held by an image block, are one
row. Each key holds one reference (``blobs.refs``), as each message referencing the bytes does,
so deleting a key frees the bytes only when no other key and no message holds them.

Blobs up to :data:`INLINE_MAX` bytes live in ``blobs.data``. Larger ones are written and read
in :data:`~axio_context.memory.blobs.CHUNK_SIZE` pieces (``memory_blob_chunks``): an upload is
spooled to a temporary file while its hash is computed, then copied in piece by piece inside
one transaction, and a download reads one piece per step, so neither holds the file in memory.
(sqlean's connection has no incremental BLOB I/O, hence pieces.) If a message later references
bytes stored in pieces, a trigger joins them into ``blobs.data``, where messages read media.

``presign_url`` gives ``axio-blob:///<database path>?key=<key>&expires=<unix time>``;
:func:`open_blob_url` opens it (read-only) and returns ``(bytes, content_type)`` until it expires.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import IO, Any, Final
from urllib.parse import parse_qs, quote, unquote, urlsplit

import aiosqlite

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

from ..store.calls import run
from ..store.connection import connect
from ..store.keys import now_ms
from ..store.transactions import read_tx, write_tx

__all__ = ["INLINE_MAX", "URL_SCHEME", "SQLiteBlobStore", "dump_rows", "load_row", "open_blob_url"]

#: Largest blob kept in one row; larger ones are stored in pieces.
INLINE_MAX: Final = CHUNK_SIZE
URL_SCHEME: Final = "axio-blob"

_Pieces = Callable[[], Iterator[bytes]]


def _info(row: Any) -> BlobInfo:
    return BlobInfo(str(row[0]), int(row[1]), str(row[2]), bytes(row[3]).hex())


def _put(
    c: Any,
    key: str,
    digest: bytes,
    size: int,
    content_type: str,
    pieces: _Pieces,
    created_at: int | None = None,
) -> BlobInfo:
    """Point ``key`` at the bytes ``pieces`` yields (``digest``, ``size``), storing them unless
    the database already has them, in one transaction."""
    with write_tx(c):
        row = c.execute("SELECT hash FROM memory_blob_keys WHERE key = ?", (key,)).fetchone()
        old = None if row is None else bytes(row[0])
        # The key's row first: the join trigger counts keys to tell a key's reference from a
        # message's.
        c.execute(
            "INSERT INTO memory_blob_keys (key, hash, size, content_type, created_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET hash = excluded.hash, size = excluded.size,"
            " content_type = excluded.content_type, created_at = excluded.created_at",
            (key, digest, size, content_type, now_ms() if created_at is None else created_at),
        )
        if old != digest:
            if c.execute("SELECT 1 FROM blobs WHERE hash = ?", (digest,)).fetchone() is not None:
                c.execute("UPDATE blobs SET refs = refs + 1 WHERE hash = ?", (digest,))
            elif size <= INLINE_MAX:
                c.execute(
                    "INSERT INTO blobs (hash, refs, data) VALUES (?, 1, ?)", (digest, b"".join(pieces()))
                )
            else:
                c.execute("INSERT INTO blobs (hash, refs, data) VALUES (?, 1, x'')", (digest,))
                for seq, piece in enumerate(pieces()):
                    c.execute(
                        "INSERT INTO memory_blob_chunks (hash, seq, data) VALUES (?, ?, ?)",
                        (digest, seq, piece),
                    )
            if old is not None:
                _release(c, old)
    return BlobInfo(key, size, content_type, digest.hex())


def dump_rows(c: Any) -> list[BlobRow]:
    """Every key with its bytes, by key (for ``axio-context copy``)."""
    with read_tx(c):
        keys = c.execute("SELECT key, content_type, created_at FROM memory_blob_keys ORDER BY key").fetchall()
        out = []
        for key, content_type, created_at in keys:
            found = _download(c, key)
            assert found is not None  # inside this snapshot
            out.append(BlobRow(key, content_type, int(created_at), found[0]))
        return out


def load_row(c: Any, row: BlobRow) -> None:
    """Store a copied key with its bytes and creation time, in one transaction."""
    data = row.data

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(data), CHUNK_SIZE):
            yield data[start : start + CHUNK_SIZE]

    _put(
        c,
        row.key,
        hashlib.sha256(data).digest(),
        len(data),
        row.content_type,
        pieces,
        row.created_at,
    )


def _release(c: Any, digest: bytes) -> None:
    c.execute("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", (digest,))
    c.execute("DELETE FROM blobs WHERE hash = ? AND refs <= 0", (digest,))  # its pieces go by trigger


def _delete(c: Any, key: str) -> bool:
    with write_tx(c):
        row = c.execute("DELETE FROM memory_blob_keys WHERE key = ? RETURNING hash", (key,)).fetchone()
        if row is None:
            return False
        _release(c, bytes(row[0]))
        return True


def _stat(c: Any, key: str) -> BlobInfo | None:
    row = c.execute(
        "SELECT key, size, content_type, hash FROM memory_blob_keys WHERE key = ?", (key,)
    ).fetchone()
    return None if row is None else _info(row)


def _download(c: Any, key: str) -> tuple[bytes, str] | None:
    with read_tx(c):
        row = c.execute(
            "SELECT k.hash, k.content_type, k.size, b.data FROM memory_blob_keys AS k"
            " JOIN blobs AS b ON b.hash = k.hash WHERE k.key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        data = bytes(row[3])
        if len(data) != int(row[2]):
            data = b"".join(
                bytes(r[0])
                for r in c.execute(
                    "SELECT data FROM memory_blob_chunks WHERE hash = ? ORDER BY seq", (row[0],)
                )
            )
        return data, str(row[1])


def _open_stream(c: Any, key: str) -> tuple[bytes, int, bytes | None] | None:
    """``(hash, size, inline data or None when stored in pieces)`` of the blob under ``key``."""
    row = c.execute(
        "SELECT k.hash, k.size, length(b.data) FROM memory_blob_keys AS k JOIN blobs AS b ON b.hash = k.hash"
        " WHERE k.key = ?",
        (key,),
    ).fetchone()
    if row is None:
        return None
    digest, size = bytes(row[0]), int(row[1])
    if int(row[2]) == size:
        data = c.execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()[0]
        return digest, size, bytes(data)
    return digest, size, None


def _piece(c: Any, digest: bytes, seq: int, key: str) -> bytes:
    row = c.execute(
        "SELECT data FROM memory_blob_chunks WHERE hash = ? AND seq = ?", (digest, seq)
    ).fetchone()
    if row is not None:
        return bytes(row[0])
    # Joined into blobs.data meanwhile (a message now references the bytes): read that piece.
    row = c.execute(
        "SELECT substr(data, ?, ?) FROM blobs WHERE hash = ? AND length(data) > 0",
        (seq * CHUNK_SIZE + 1, CHUNK_SIZE, digest),
    ).fetchone()
    if row is None:
        raise BlobNotFoundError(f"blob {key!r} was deleted while it was being read")
    return bytes(row[0])


def _list(c: Any, prefix: str, limit: int) -> list[BlobInfo]:
    sql = "SELECT key, size, content_type, hash FROM memory_blob_keys WHERE key >= ?"
    params: list[Any] = [prefix]
    if prefix and ord(prefix[-1]) < 0x10FFFF:
        sql += " AND key < ?"
        params.append(prefix[:-1] + chr(ord(prefix[-1]) + 1))
    sql += " AND substr(key, 1, ?) = ? ORDER BY key LIMIT ?"
    params += [len(prefix), prefix, limit]
    return [_info(r) for r in c.execute(sql, params)]


def _main_file(c: Any) -> str:
    for row in c.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2])
    return ""


def _spool_pieces(spool: IO[bytes]) -> _Pieces:
    def pieces() -> Iterator[bytes]:
        spool.seek(0)
        while piece := spool.read(CHUNK_SIZE):
            yield piece

    return pieces


def _bytes_pieces(data: bytes) -> _Pieces:
    def pieces() -> Iterator[bytes]:
        view = memoryview(data)
        for start in range(0, len(view), CHUNK_SIZE):
            yield bytes(view[start : start + CHUNK_SIZE])

    return pieces


class SQLiteBlobStore:
    """:class:`~axio_context.memory.BlobStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it), blobs up to ``max_size`` bytes."""

    def __init__(self, conn: aiosqlite.Connection, *, max_size: int = DEFAULT_MAX_SIZE) -> None:
        self._conn = conn
        self._max_size = check_max_size(max_size)

    @property
    def max_size(self) -> int:
        """The largest blob this store takes, in bytes."""
        return self._max_size

    async def connect(self) -> None:
        """Nothing to open: the store works on the connection it was given."""

    async def disconnect(self) -> None:
        """Nothing to close: the connection is the caller's."""

    async def upload(self, key: str, data: bytes, content_type: str = DEFAULT_CONTENT_TYPE) -> BlobInfo:
        """Store ``data`` under ``key``, replacing what the key held."""
        check_key(key)
        check_content_type(content_type)
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidInputError(f"blob data is bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) > self._max_size:
            raise too_large(key, self._max_size)
        digest = hashlib.sha256(data).digest()
        return await run(self._conn, _put, key, digest, len(data), content_type, _bytes_pieces(data))

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
                spool.write(chunk)
            spool.flush()
            return await run(self._conn, _put, key, digest.digest(), size, content_type, _spool_pieces(spool))

    async def download(self, key: str) -> tuple[bytes, str]:
        """``(data, content_type)`` stored under ``key``; :class:`BlobNotFoundError` if none."""
        check_key(key)
        found = await run(self._conn, _download, key)
        if found is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        return found

    async def download_stream(self, key: str, chunk_size: int = CHUNK_SIZE) -> AsyncIterator[bytes]:
        """The blob under ``key`` in chunks of at most ``chunk_size`` bytes, read piece by piece."""
        check_key(key)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise InvalidInputError(f"chunk_size is a whole number >= 1, got {chunk_size!r}")
        found = await run(self._conn, _open_stream, key)
        if found is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        digest, size, inline = found
        if inline is not None:
            for start in range(0, size, chunk_size):
                yield inline[start : start + chunk_size]
            return
        for seq in range((size + CHUNK_SIZE - 1) // CHUNK_SIZE):
            piece = await run(self._conn, _piece, digest, seq, key)
            for start in range(0, len(piece), chunk_size):
                yield piece[start : start + chunk_size]

    async def stat(self, key: str) -> BlobInfo | None:
        """What is stored under ``key``, without its bytes; None if nothing."""
        check_key(key)
        return await run(self._conn, _stat, key)

    async def delete(self, key: str) -> bool:
        """Remove ``key``; True if it existed. Its bytes go once no key or message holds them."""
        check_key(key)
        return await run(self._conn, _delete, key)

    async def list_keys(self, prefix: str = "", *, limit: int | None = None) -> list[BlobInfo]:
        """The blobs whose keys start with ``prefix``, by key."""
        if not isinstance(prefix, str):
            raise InvalidInputError(f"a key prefix is a string, got {type(prefix).__name__}")
        return await run(self._conn, _list, prefix, -1 if limit is None else max(limit, 0))

    async def presign_url(self, key: str, expires_in: int = 3600) -> str:
        """``axio-blob:///<database>?key=<key>&expires=<unix time>``, for :func:`open_blob_url`."""
        check_key(key)
        if await run(self._conn, _stat, key) is None:
            raise BlobNotFoundError(f"no blob under key {key!r}")
        path = await run(self._conn, _main_file)
        expires = int(time.time()) + int(expires_in)
        return f"{URL_SCHEME}://{quote(path)}?key={quote(key, safe='')}&expires={expires}"


async def open_blob_url(url: str) -> tuple[bytes, str]:
    """``(data, content_type)`` of a URL :meth:`SQLiteBlobStore.presign_url` gave: the database
    is opened read-only for the read. An expired URL or a missing blob is an error."""
    parts = urlsplit(url)
    if parts.scheme != URL_SCHEME or not parts.path:
        raise InvalidInputError(f"not an {URL_SCHEME}:// URL: {url!r}")
    query = parse_qs(parts.query)
    if "key" not in query:
        raise InvalidInputError(f"{URL_SCHEME} URL names no key: {url!r}")
    expires = query.get("expires", [""])[0]
    if expires and not expires.isdigit():
        raise InvalidInputError(f"{URL_SCHEME} URL has a bad expiry time {expires!r}: {url!r}")
    if expires and int(expires) < time.time():
        raise InvalidInputError(f"{URL_SCHEME} URL expired at {expires}: {url!r}")
    async with connect(unquote(parts.path), readonly=True) as conn:
        return await SQLiteBlobStore(conn).download(query["key"][0])
