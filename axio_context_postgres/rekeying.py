"""Encrypting, decrypting and re-keying a PostgreSQL database: every sealed column of every row
converted in one transaction, so a crash (or a wrong key found halfway) leaves it all under the
old key. The columns are :data:`SEALED_COLUMNS`, the ones the backend's statements mark with
:func:`.sealed.sealed`; search text (``messages.body``/``tool``) is emptied on encrypting and
rebuilt from the opened payloads on decrypting, so the keyword index comes back.
"""

from __future__ import annotations

from typing import Any, Final

import asyncpg

from axio_context.encryption import (
    AlreadyEncryptedError,
    EncryptionKeyError,
    NotEncryptedError,
    WrongKeyError,
)
from axio_context.sealing import PayloadCipher

from .connection import check_url, redacted, translated
from .schema import migrate
from .sealed import CHECK_SETTING
from .writes import stored_text

__all__ = ["SEALED_COLUMNS", "AlreadyEncryptedError", "convert_keys"]

#: (table, column, kind) of every column that holds what a user wrote: sealed under a key.
SEALED_COLUMNS: Final = (
    ("messages", "payload", "bytes"),
    ("message_turns", "content", "text"),
    ("sessions", "preview", "text"),
    ("sessions", "metadata", "bytes"),
    ("checkpoints", "summary", "bytes"),
    ("conversation_records", "record", "bytes"),
    ("session_states", "state", "text"),
    ("context_pool_entries", "description", "text"),
    ("context_pool_entries", "content", "bytes"),
    ("context_pool_entries", "extra", "bytes"),
    ("memory_blob_pieces", "data", "bytes"),
    ("memory_documents", "content", "text"),
    ("memory_documents", "metadata", "json"),
    ("memory_blocks", "value", "text"),
    ("memory_blocks", "description", "text"),
    ("memory_block_versions", "value", "text"),
    ("memory_block_versions", "description", "text"),
    ("tasks", "title", "text"),
    ("tasks", "note", "text"),
    ("graph_entities", "properties", "json"),
    ("graph_relationships", "properties", "json"),
)

_TYPES: Final = {"bytes": "bytea", "text": "text", "json": "jsonb"}


def _convert(old: PayloadCipher | None, new: PayloadCipher | None, kind: str, value: Any) -> Any:
    plain = value if old is None else old.open(value)
    if new is None:
        return plain
    if kind == "bytes":
        return new.seal_bytes(plain)
    return new.seal_json(plain) if kind == "json" else new.seal_text(plain)


async def _column(
    conn: Any, old: PayloadCipher | None, new: PayloadCipher | None, table: str, column: str, kind: str
) -> None:
    if not await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", table):
        return  # memory_documents: made once pgvector is there
    read = column if kind == "bytes" else f"{column}::text"
    rows = await conn.fetch(f"SELECT ctid, {read} FROM {table} WHERE {column} IS NOT NULL")
    if not rows:
        return
    values = [_convert(old, new, kind, r[1]) for r in rows]
    kind_sql = _TYPES[kind]
    await conn.execute(
        f"UPDATE {table} t SET {column} = u.v::{kind_sql}"
        f" FROM unnest($1::tid[], $2::{'bytea' if kind == 'bytes' else 'text'}[]) AS u(id, v)"
        " WHERE t.ctid = u.id",
        [r[0] for r in rows],
        values,
    )


async def _search_text(conn: Any, old: PayloadCipher | None, new: PayloadCipher | None) -> None:
    """Empty the search text under a key; rebuild it from the payloads when decrypting."""
    if new is not None:
        await conn.execute("UPDATE messages SET body = '', tool = '' WHERE body <> '' OR tool <> ''")
        return
    assert old is not None
    rows = await conn.fetch("SELECT ctid, payload FROM messages")
    if not rows:
        return
    texts = [stored_text(old.open(r[1])) for r in rows]
    await conn.execute(
        "UPDATE messages t SET body = u.b, tool = u.o"
        " FROM unnest($1::tid[], $2::text[], $3::text[]) AS u(id, b, o) WHERE t.ctid = u.id",
        [r[0] for r in rows],
        [b for b, _ in texts],
        [o for _, o in texts],
    )


async def _check(conn: Any, old: PayloadCipher | None, where: str) -> None:
    stored = await conn.fetchval("SELECT value FROM axio_settings WHERE key = $1 FOR UPDATE", CHECK_SETTING)
    if old is None and stored is not None:
        raise AlreadyEncryptedError(f"{where} is encrypted already (rekey changes its key)")
    if old is not None and stored is None:
        raise NotEncryptedError(f"{where} is not encrypted (encrypt gives it a key)")
    if old is not None and stored != old.check_value:
        raise WrongKeyError(f"the key does not open {where}: it is encrypted under another key")


async def convert_keys(url: str, old: bytes | None, new: bytes | None) -> None:
    """Re-seal every payload of the database at ``url`` from key ``old`` (None: it is plain) to
    ``new`` (None: leave it plain), in one transaction that locks out every writer meanwhile."""
    if old is None and new is None:
        raise EncryptionKeyError("no key given: encrypting, decrypting or re-keying needs one")
    if old is not None and old == new:
        raise EncryptionKeyError("the new key is the same as the current one")
    check_url(url)
    where = f"PostgreSQL at {redacted(url)}"
    before = None if old is None else PayloadCipher(old)
    after = None if new is None else PayloadCipher(new)
    async with translated(where):
        conn = await asyncpg.connect(url, timeout=10)
        try:
            await migrate(conn)
            async with conn.transaction():
                tables = sorted({t for t, _, _ in SEALED_COLUMNS} | {"axio_settings"})
                present = [t for t in tables if await conn.fetchval("SELECT to_regclass($1) IS NOT NULL", t)]
                await conn.execute(f"LOCK TABLE {', '.join(present)} IN EXCLUSIVE MODE")
                await _check(conn, before, where)
                for table, column, kind in SEALED_COLUMNS:
                    await _column(conn, before, after, table, column, kind)
                await _search_text(conn, before, after)
                await conn.execute("DELETE FROM axio_settings WHERE key = $1", CHECK_SETTING)
                if after is not None:
                    await conn.execute(
                        "INSERT INTO axio_settings (key, value) VALUES ($1, $2)",
                        CHECK_SETTING,
                        after.check_value,
                    )
        finally:
            await conn.close()
