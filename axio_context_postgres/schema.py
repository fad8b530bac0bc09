"""The PostgreSQL schema, as forward-only versioned steps run on every open.

Each step runs in one transaction with the record of it (``axio_schema``), under an advisory
lock so that many processes opening a new database at once migrate it once. A database whose
recorded version is newer than :data:`SCHEMA_VERSION` is refused, naming both versions.

The steps themselves (each version's SQL, and the data model they make) are in
:mod:`.migrations`; this module runs them.
"""

from __future__ import annotations

from typing import Any, Final

from axio_context.errors import SchemaVersionError

from .migrations import MIGRATIONS, SCHEMA_VERSION

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "migrate"]

#: Taken (transaction-scoped) while migrating: one migrator at a time per database.
MIGRATION_LOCK: Final = 0x6178696F  # "axio"


async def current_version(conn: Any) -> int:
    """The recorded schema version; 0 for a database this package never touched."""
    exists = await conn.fetchval("SELECT to_regclass('axio_schema') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM axio_schema"))


def _refuse_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"this database's schema is version {version}, newer than this axio-context "
            f"understands ({SCHEMA_VERSION}); upgrade axio-context"
        )


async def migrate(conn: Any) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`, a step per transaction; returns the version.

    Refuses (SchemaVersionError) a database written by a newer version, before touching it.
    """
    version = await current_version(conn)
    _refuse_newer(version)
    if version == SCHEMA_VERSION:
        return version
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS axio_schema"
            " (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        version = await current_version(conn)  # another process may have migrated meanwhile
        _refuse_newer(version)
        for step, sql in MIGRATIONS:
            if step > version:
                await conn.execute(sql)
                await conn.execute("INSERT INTO axio_schema (version) VALUES ($1)", step)
                version = step
    return version
