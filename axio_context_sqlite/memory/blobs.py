"""The blob store in the SQLite file: :class:`SQLiteBlobStore`, ravi's ``BlobStore``: the shared
:class:`~axio_context.memory.blobs_sql.SQLBlobStore` over the plans below.

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

``presign_url`` gives a signed ``axio-blob:///<database path>?key=...&expires=...&sig=...``;
:func:`open_blob_url` opens the file read-only and returns ``(bytes, content_type)`` until it
expires.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import aiosqlite

from axio_context.copying import BlobRow
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.blobs import CHUNK_SIZE, DEFAULT_MAX_SIZE, BlobInfo
from axio_context.memory.blobs_sql import NewBlob, SQLBlobStore, bytes_pieces, new_secret, parse_url
from axio_context.memory.errors import BlobNotFoundError
from axio_context.sql import Dialect, Execute, ExecuteMany, Plan, Row, Rows, Value
from axio_context.sql.expiry import due, live

from ..store.connection import connect
from ..store.keys import now_ms
from ..store.runner import SQLITE, SQLiteRunner, drive

__all__ = [
    "INLINE_MAX",
    "STATEMENTS",
    "URL_SCHEME",
    "SQLiteBlobStore",
    "dump_rows",
    "load_row",
    "open_blob_url",
]

#: Largest blob kept in one row; larger ones are stored in pieces.
INLINE_MAX: Final = CHUNK_SIZE
URL_SCHEME: Final = "axio-blob"
_SECRET: Final = "blob_url_secret"


def _info(row: Any) -> BlobInfo:
    return BlobInfo(str(row[0]), int(row[1]), str(row[2]), bytes(row[3]).hex())


def _release(digest: bytes) -> Plan[None]:
    yield Execute("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", (digest,))
    yield Execute("DELETE FROM blobs WHERE hash = ? AND refs <= 0", (digest,))  # its pieces go by trigger


class _Statements:
    """SQLite's :class:`~axio_context.memory.blobs_sql.BlobStatements`."""

    scheme = URL_SCHEME

    def put(self, d: Dialect, blob: NewBlob) -> Plan[None]:
        key, digest, size, content_type, pieces, created_at = blob
        row = yield Row("SELECT hash FROM memory_blob_keys WHERE key = ?", (key,))
        old = None if row is None else bytes(row[0])
        # The key's row first: the join trigger counts keys to tell a key's reference from a
        # message's.
        yield Execute(
            "INSERT INTO memory_blob_keys (key, hash, size, content_type, created_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET hash = excluded.hash, size = excluded.size,"
            " content_type = excluded.content_type, created_at = excluded.created_at",
            (key, digest, size, content_type, now_ms() if created_at is None else created_at),
        )
        if old == digest:
            return
        if (yield Value("SELECT 1 FROM blobs WHERE hash = ?", (digest,))) is not None:
            yield Execute("UPDATE blobs SET refs = refs + 1 WHERE hash = ?", (digest,))
        elif size <= INLINE_MAX:
            yield Execute(
                "INSERT INTO blobs (hash, refs, data) VALUES (?, 1, ?)", (digest, b"".join(pieces()))
            )
        else:
            yield Execute("INSERT INTO blobs (hash, refs, data) VALUES (?, 1, x'')", (digest,))
            for seq, piece in enumerate(pieces()):
                yield Execute(
                    "INSERT INTO memory_blob_chunks (hash, seq, data) VALUES (?, ?, ?)", (digest, seq, piece)
                )
        if old is not None:
            yield from _release(old)

    def delete(self, d: Dialect, key: str) -> Plan[bool]:
        row = yield Row("DELETE FROM memory_blob_keys WHERE key = ? RETURNING hash", (key,))
        if row is None:
            return False
        yield from _release(bytes(row[0]))
        return True

    def stat(self, d: Dialect, key: str) -> Plan[BlobInfo | None]:
        row = yield Row("SELECT key, size, content_type, hash FROM memory_blob_keys WHERE key = ?", (key,))
        return None if row is None else _info(row)

    def read(self, d: Dialect, key: str) -> Plan[tuple[bytes, str] | None]:
        row = yield Row(
            "SELECT k.hash, k.content_type, k.size, b.data FROM memory_blob_keys AS k"
            " JOIN blobs AS b ON b.hash = k.hash WHERE k.key = ?",
            (key,),
        )
        if row is None:
            return None
        data = bytes(row[3])
        if len(data) != int(row[2]):
            pieces = yield Rows("SELECT data FROM memory_blob_chunks WHERE hash = ? ORDER BY seq", (row[0],))
            data = b"".join(bytes(p[0]) for p in pieces)
        return data, str(row[1])

    def opened(self, d: Dialect, key: str) -> Plan[tuple[bytes, int, bytes | None] | None]:
        row = yield Row(
            "SELECT k.hash, k.size, length(b.data) FROM memory_blob_keys AS k"
            " JOIN blobs AS b ON b.hash = k.hash WHERE k.key = ?",
            (key,),
        )
        if row is None:
            return None
        digest, size = bytes(row[0]), int(row[1])
        if int(row[2]) != size:
            return digest, size, None
        return digest, size, bytes((yield Value("SELECT data FROM blobs WHERE hash = ?", (digest,))))

    def piece(self, d: Dialect, digest: bytes, seq: int, key: str) -> Plan[bytes]:
        data = yield Value("SELECT data FROM memory_blob_chunks WHERE hash = ? AND seq = ?", (digest, seq))
        if data is None:
            # Joined into blobs.data meanwhile (a message now references the bytes): read that piece.
            data = yield Value(
                "SELECT substr(data, ?, ?) FROM blobs WHERE hash = ? AND length(data) > 0",
                (seq * CHUNK_SIZE + 1, CHUNK_SIZE, digest),
            )
        if data is None:
            raise BlobNotFoundError(f"blob {key!r} was deleted while it was being read")
        return bytes(data)

    def listing(
        self, d: Dialect, prefix: str, upper: str | None, limit: int | None, now: int
    ) -> Plan[list[BlobInfo]]:
        sql = f"SELECT key, size, content_type, hash FROM memory_blob_keys WHERE {live()} AND key >= ?"
        args: list[Any] = [now, prefix]
        if upper is not None:
            sql += " AND key < ?"
            args.append(upper)
        sql += " AND substr(key, 1, ?) = ? ORDER BY key LIMIT ?"
        args += [len(prefix), prefix, -1 if limit is None else limit]
        return [_info(r) for r in (yield Rows(sql, args))]

    def expire(self, d: Dialect, now: int, limit: int) -> Plan[int]:
        gone = yield Rows(
            f"DELETE FROM memory_blob_keys WHERE {due('memory_blob_keys', 'key')} RETURNING hash",
            (now, limit),
        )
        if gone:
            digests = [(bytes(r[0]),) for r in gone]
            yield ExecuteMany("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", digests)
            yield ExecuteMany("DELETE FROM blobs WHERE hash = ? AND refs <= 0", sorted(set(digests)))
        return len(gone)

    def rows(self, d: Dialect) -> Plan[list[BlobRow]]:
        keys = yield Rows(
            f"SELECT key, content_type, created_at FROM memory_blob_keys WHERE {live()} ORDER BY key",
            (now_ms(),),
        )
        out = []
        for key, content_type, created_at in keys:
            found = yield from self.read(d, key)
            assert found is not None  # inside this snapshot
            out.append(BlobRow(str(key), str(content_type), int(created_at), found[0]))
        return out

    def location(self, d: Dialect) -> Plan[str]:
        for row in (yield Rows("PRAGMA database_list")):
            if row[1] == "main":
                return str(row[2])
        return ""

    def secret(self, d: Dialect, make: bool) -> Plan[str | None]:
        found = yield Value("SELECT value FROM settings WHERE key = ?", (_SECRET,))
        if found is None and make:
            found = new_secret()
            yield Execute("INSERT INTO settings (key, value) VALUES (?, ?)", (_SECRET, found))
        return None if found is None else str(found)


STATEMENTS: Final = _Statements()


def dump_rows(c: Any) -> list[BlobRow]:
    """Every key with its bytes, by key (for ``axio-context copy``; on the worker thread, inside
    the caller's read transaction)."""
    return drive(c, STATEMENTS.rows(SQLITE))


def load_row(c: Any, row: BlobRow) -> None:
    """Store a copied key with its bytes and creation time (on the worker thread, inside the
    caller's write transaction)."""
    digest = hashlib.sha256(row.data).digest()
    pieces = bytes_pieces(row.data)
    blob = NewBlob(row.key, digest, len(row.data), row.content_type, pieces, row.created_at)
    drive(c, STATEMENTS.put(SQLITE, blob))


class SQLiteBlobStore(SQLBlobStore):
    """:class:`~axio_context.memory.BlobStore` in the database ``conn`` (from
    :func:`axio_context_sqlite.connect`; the caller closes it), blobs up to ``max_size`` bytes;
    ``ttl`` is its expiry (:mod:`axio_context.expiry`)."""

    def __init__(
        self, conn: aiosqlite.Connection, *, max_size: int = DEFAULT_MAX_SIZE, ttl: TTLConfig = NO_TTL
    ) -> None:
        super().__init__(SQLiteRunner(conn), STATEMENTS, max_size=max_size, ttl=ttl)


async def open_blob_url(url: str) -> tuple[bytes, str]:
    """``(data, content_type)`` of a URL :meth:`SQLiteBlobStore.presign_url` gave: the database
    it names is opened read-only for the read. An edited, expired or unsigned URL is refused."""
    path = parse_url(URL_SCHEME, url)[0]
    async with connect(path, readonly=True) as conn:
        return await SQLiteBlobStore(conn).open_url(url)
