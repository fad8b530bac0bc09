"""The blob store on PostgreSQL: :class:`PostgresBlobStore`, ravi's ``BlobStore``: the shared
:class:`~axio_context.memory.blobs_sql.SQLBlobStore` over the plans below.

Bytes are stored once per database, by SHA-256 (``memory_blob_data``), in pieces of
:data:`~axio_context.memory.blobs.CHUNK_SIZE` (``memory_blob_pieces``: a ``bytea`` is read whole,
so pieces are what lets a download stream); each key (``memory_blob_keys``) points at its bytes.
An upload is spooled to a temporary file while its hash and size are checked, then written in one
transaction; the bytes go when the last key holding them does. Keys and bytes are locked in a
fixed order (the key row, then the bytes row), so concurrent uploads of one key or one content
never interleave.

``presign_url`` gives a signed ``axio-blob+postgresql:///<database>?key=...&expires=...&sig=...``,
which :meth:`PostgresBlobStore.open_url` (or :func:`open_blob_url` with a pool on that database)
reads back until it expires. The URL carries no password: whoever opens it needs their own pool.
"""

from __future__ import annotations

from typing import Any, Final

from axio_context.copying import BlobRow
from axio_context.expiry import NO_TTL, TTLConfig
from axio_context.memory.blobs import DEFAULT_MAX_SIZE, BlobInfo
from axio_context.memory.blobs_sql import NewBlob, SQLBlobStore, new_secret
from axio_context.memory.errors import BlobNotFoundError
from axio_context.sql import Dialect, Execute, Plan, Row, Rows, Value
from axio_context.sql.expiry import due, live

from ..connection import Pool
from ..runner import PostgresRunner
from .common import WHERE, now_ms

__all__ = ["STATEMENTS", "URL_SCHEME", "PostgresBlobStore", "open_blob_url"]

URL_SCHEME: Final = "axio-blob+postgresql"
_SECRET: Final = "blob_url_secret"
_INFO: Final = (
    "SELECT k.key, d.size, k.content_type, k.hash FROM memory_blob_keys k"
    " JOIN memory_blob_data d ON d.hash = k.hash"
)


def _info(row: Any) -> BlobInfo:
    return BlobInfo(str(row[0]), int(row[1]), str(row[2]), bytes(row[3]).hex())


def _free(digest: bytes) -> Plan[None]:
    """Delete the bytes ``digest`` names if no key holds them any more."""
    # Lock the bytes row first: an upload that took it (ON CONFLICT DO UPDATE) commits before we
    # look, and the next statement's snapshot sees its key.
    if (yield Value("SELECT 1 FROM memory_blob_data WHERE hash = ? FOR UPDATE", (digest,))) is None:
        return
    yield Execute(
        "DELETE FROM memory_blob_data WHERE hash = ?"
        " AND NOT EXISTS (SELECT 1 FROM memory_blob_keys WHERE hash = ?)",
        (digest, digest),
    )


class _Statements:
    """PostgreSQL's :class:`~axio_context.memory.blobs_sql.BlobStatements`."""

    scheme = URL_SCHEME

    def put(self, d: Dialect, blob: NewBlob) -> Plan[None]:
        key, digest, size, content_type, pieces, created_at = blob
        old = yield Value("SELECT hash FROM memory_blob_keys WHERE key = ? FOR UPDATE", (key,))
        # ON CONFLICT ... DO UPDATE locks an existing bytes row, so no one frees it under us.
        inserted = yield Value(
            "INSERT INTO memory_blob_data (hash, size) VALUES (?, ?)"
            " ON CONFLICT (hash) DO UPDATE SET size = excluded.size RETURNING xmax = 0",
            (digest, size),
        )
        if inserted:
            for seq, piece in enumerate(pieces()):
                yield Execute(
                    "INSERT INTO memory_blob_pieces (hash, seq, data) VALUES (?, ?, ?)",
                    (digest, seq, d.sealed(piece)),
                )
        yield Execute(
            "INSERT INTO memory_blob_keys (key, hash, content_type, created_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET hash = excluded.hash, content_type = excluded.content_type,"
            " created_at = excluded.created_at",
            (key, digest, content_type, now_ms() if created_at is None else created_at),
        )
        if old is not None and bytes(old) != digest:
            yield from _free(bytes(old))

    def delete(self, d: Dialect, key: str) -> Plan[bool]:
        old = yield Value("DELETE FROM memory_blob_keys WHERE key = ? RETURNING hash", (key,))
        if old is None:
            return False
        yield from _free(bytes(old))
        return True

    def stat(self, d: Dialect, key: str) -> Plan[BlobInfo | None]:
        row = yield Row(f"{_INFO} WHERE k.key = ?", (key,))
        return None if row is None else _info(row)

    def read(self, d: Dialect, key: str) -> Plan[tuple[bytes, str] | None]:
        found = yield Row("SELECT hash, content_type FROM memory_blob_keys WHERE key = ?", (key,))
        if found is None:
            return None
        pieces = yield Rows("SELECT data FROM memory_blob_pieces WHERE hash = ? ORDER BY seq", (found[0],))
        return b"".join(bytes(p[0]) for p in pieces), str(found[1])

    def opened(self, d: Dialect, key: str) -> Plan[tuple[bytes, int, bytes | None] | None]:
        row = yield Row(
            "SELECT k.hash, d.size FROM memory_blob_keys k JOIN memory_blob_data d ON d.hash = k.hash"
            " WHERE k.key = ?",
            (key,),
        )
        return None if row is None else (bytes(row[0]), int(row[1]), None)

    def piece(self, d: Dialect, digest: bytes, seq: int, key: str) -> Plan[bytes]:
        data = yield Value("SELECT data FROM memory_blob_pieces WHERE hash = ? AND seq = ?", (digest, seq))
        if data is None:
            raise BlobNotFoundError(f"blob {key!r} was deleted while it was being read")
        return bytes(data)

    def listing(
        self, d: Dialect, prefix: str, upper: str | None, limit: int | None, now: int
    ) -> Plan[list[BlobInfo]]:
        bounded = "" if limit is None else " LIMIT ?"
        args: tuple[Any, ...] = (now, prefix) if limit is None else (now, prefix, limit)
        rows = yield Rows(
            f'{_INFO} WHERE {live("k")} AND starts_with(k.key, ?) ORDER BY k.key COLLATE "C"{bounded}', args
        )
        return [_info(r) for r in rows]

    def expire(self, d: Dialect, now: int, limit: int) -> Plan[int]:
        gone = yield Rows(
            f"DELETE FROM memory_blob_keys WHERE {due('memory_blob_keys', 'key')} RETURNING hash",
            (now, limit),
        )
        digests = sorted({bytes(r[0]) for r in gone})
        if digests:
            # As _free, for many: lock the bytes rows (in one order), then drop the unheld ones.
            yield Rows(
                f"SELECT 1 FROM memory_blob_data WHERE {d.any_of('hash', 'bytea')} ORDER BY hash FOR UPDATE",
                (d.list_arg(digests),),
            )
            yield Execute(
                f"DELETE FROM memory_blob_data d WHERE {d.any_of('d.hash', 'bytea')}"
                " AND NOT EXISTS (SELECT 1 FROM memory_blob_keys k WHERE k.hash = d.hash)",
                (d.list_arg(digests),),
            )
        return len(gone)

    def rows(self, d: Dialect) -> Plan[list[BlobRow]]:
        keys = yield Rows(
            f"SELECT key, content_type, created_at FROM memory_blob_keys WHERE {live()}"
            ' ORDER BY key COLLATE "C"',
            (now_ms(),),
        )
        out = []
        for key, content_type, created_at in keys:
            found = yield from self.read(d, key)
            assert found is not None  # inside this snapshot
            out.append(BlobRow(str(key), str(content_type), int(created_at), found[0]))
        return out

    def location(self, d: Dialect) -> Plan[str]:
        return "/" + str((yield Value("SELECT current_database()")))

    def secret(self, d: Dialect, make: bool) -> Plan[str | None]:
        found = yield Value("SELECT value FROM axio_settings WHERE key = ?", (_SECRET,))
        if found is None and make:
            yield Execute(
                "INSERT INTO axio_settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                (_SECRET, new_secret()),
            )
            found = yield Value("SELECT value FROM axio_settings WHERE key = ?", (_SECRET,))
        return None if found is None else str(found)


#: How every PostgreSQL blob store keeps its bytes.
STATEMENTS: Final = _Statements()


class PostgresBlobStore(SQLBlobStore):
    """:class:`~axio_context.memory.BlobStore` in the PostgreSQL database of ``pool`` (from
    :func:`axio_context_postgres.connect`; the caller closes it), blobs up to ``max_size`` bytes;
    ``ttl`` is its expiry (:mod:`axio_context.expiry`)."""

    def __init__(self, pool: Pool, *, max_size: int = DEFAULT_MAX_SIZE, ttl: TTLConfig = NO_TTL) -> None:
        super().__init__(PostgresRunner(pool, WHERE), STATEMENTS, max_size=max_size, ttl=ttl)


async def open_blob_url(pool: Pool, url: str) -> tuple[bytes, str]:
    """``(data, content_type)`` of a URL :meth:`PostgresBlobStore.presign_url` gave, read through
    ``pool`` (which must be on the database the URL names). An edited or expired URL is refused."""
    return await PostgresBlobStore(pool).open_url(url)
