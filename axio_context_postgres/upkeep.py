"""Looking after a PostgreSQL database: ``stats`` and ``prune``, as the SQLite backend has them.

What is specific to a file (its pages, WAL, vacuum, backup, checkpoint, recompression, the
quarantine) is the server's business on PostgreSQL (``VACUUM``, ``pg_dump``, ``amcheck``); the
totals, the size of each table (``pg_total_relation_size``: heap, TOAST and indexes) and pruning
whole old sessions are the same questions on either backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from axio_context.messages import SessionInfo
from axio_context.totals_sql import Totals, project_totals, summed
from axio_context.views import ProjectStats

from . import runs, writes
from .info import INFO_COLUMNS, info_of
from .runner import POSTGRES, drive
from .schema import current_version

__all__ = ["PostgresStats", "PruneReport", "TableSize", "prune", "stats"]


class TableSize(msgspec.Struct, frozen=True):
    """One table of the database and the bytes it takes with its TOAST data and indexes."""

    table: str
    bytes: int


class PostgresStats(Totals, frozen=True):
    """Totals of a PostgreSQL database (see :class:`~axio_context.totals_sql.Totals`), with
    ``hidden_messages`` the marks ``clear_run`` left (their rows stay until a purge empties
    them), and each table's size."""

    segments: int
    hidden_messages: int
    vectors: int
    schema_version: int
    server_version: str
    database_bytes: int
    tables: list[TableSize]
    by_project: list[ProjectStats]


async def stats(conn: Any) -> PostgresStats:
    """Totals over the database and per project, and each table's size (one snapshot)."""
    by_project = await drive(conn, project_totals(POSTGRES))
    counts = await conn.fetchrow(
        "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM checkpoints),"
        " (SELECT count(*) FROM segments), (SELECT count(*) FROM hidden_messages),"
        " pg_database_size(current_database()), current_setting('server_version')"
    )
    vectors = 0
    if await conn.fetchval("SELECT to_regclass('embeddings') IS NOT NULL"):
        vectors = int(await conn.fetchval("SELECT count(*) FROM embeddings"))
    tables = [
        TableSize(str(r[0]), int(r[1]))
        for r in await conn.fetch(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema()"
            " ORDER BY 2 DESC, 1"
        )
    ]
    return PostgresStats(
        **summed(by_project),
        stored_messages=int(counts[0]),
        checkpoints=int(counts[1]),
        segments=int(counts[2]),
        hidden_messages=int(counts[3]),
        vectors=vectors,
        schema_version=await current_version(conn),
        server_version=str(counts[5]),
        database_bytes=int(counts[4]),
        tables=tables,
        by_project=by_project,
    )


class PruneReport(msgspec.Struct, frozen=True):
    """What a prune deleted (newest first) and the rows of cleared runs it emptied."""

    sessions: list[SessionInfo]
    purged: int


async def prune(
    conn: Any,
    before_ms: int | None,
    keep: int | None,
    project: str | None,
    dry_run: bool,
    only: Sequence[str] | None = None,
) -> PruneReport:
    """Sessions last updated before ``before_ms`` and/or beyond the ``keep`` most recently
    updated (in ``project`` if given), deleted unless ``dry_run`` (in the caller's transaction),
    with the segments no session reaches any more and the rows of cleared runs nothing reads.

    ``only`` limits it to those ids (what a dry run listed): the criteria are checked again
    here, so a session appended to meanwhile is kept. The SQLite backend's rules exactly."""
    if before_ms is None and keep is None:
        raise ValueError("prune needs a date (before) or a number of sessions to keep")
    if keep is not None and keep < 0:
        raise ValueError("keep must not be negative")
    args: list[Any] = []

    def param(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    where: list[str] = []
    if project is not None:
        where.append(f"project = {param(project)}")
    if before_ms is not None:
        where.append(f"updated_at < {param(before_ms)}")
    if only is not None:
        where.append(f"id = ANY({param(list(only))}::text[])")
    if keep:
        # the `keep` most recently updated sessions of the project are kept whatever their age
        scope = f"WHERE project = {param(project)}" if project is not None else ""
        where.append(
            f"sid NOT IN (SELECT sid FROM sessions {scope} ORDER BY updated_at DESC, sid DESC"
            f" LIMIT {param(keep)})"
        )
    sql = f"SELECT {INFO_COLUMNS} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY updated_at DESC, sid DESC"
    if not dry_run:
        sql += " FOR UPDATE"  # what is deleted is what qualified: writers to them wait
    rows = await conn.fetch(sql, *args)
    infos = [info_of(r) for r in rows]
    if dry_run:
        return PruneReport(infos, 0)
    for r in sorted(rows, key=lambda r: r["sid"], reverse=True):  # forks before their parents
        await writes.delete_session(conn, r["id"])
    return PruneReport(infos, await runs.purge_hidden(conn))
