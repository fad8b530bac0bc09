"""Looking after the database file: stats, prune and vacuum (recompress is in
:mod:`.recompressing`, backup in :mod:`axio_context_sqlite.admin.files`). Synchronous, on a
connection's worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from axio_context.messages import SessionInfo
from axio_context.totals_sql import Totals, project_totals, summed
from axio_context.views import ProjectStats as ProjectStats  # re-exported

from . import chunks, hiding, listing, packing, transactions
from .catalog import delete_sessions
from .runner import SQLITE, drive
from .wal import truncate_wal


class Stats(Totals, frozen=True):
    """Totals of an SQLite database (see :class:`~axio_context.totals_sql.Totals`), with its
    file's pages, payloads, chunks, blobs and vectors."""

    blobs: int
    blob_bytes: int
    page_size: int
    page_count: int
    free_pages: int
    schema_version: int
    file_bytes: int
    wal_bytes: int
    by_project: list[ProjectStats]
    payload_bytes: int = 0  # the stored payloads, as stored (compressed or not), chunks' included
    #: Zstandard dictionaries rows of earlier builds are compressed with (``vacuum --recompress``
    #: rewrites those rows and deletes them); new payloads never use one.
    dictionaries: int = 0
    sealed_messages: int = 0  # stored messages whose payload is in a chunk (see chunks.py)
    chunks: int = 0
    vectors: int = 0  # messages with a stored embedding
    vector_bytes: int = 0  # pages the embeddings and their sqlite-vec codes take in the file


class VacuumReport(msgspec.Struct, frozen=True):
    """Pages before and after, which way space was reclaimed, and the WAL checkpoint's result."""

    method: Literal["incremental", "full"]
    pages_before: int
    pages_after: int
    free_pages_before: int
    page_size: int
    bytes_before: int
    bytes_after: int
    wal_busy: bool
    chunks_sealed: int = 0  # blocks of older messages sealed first (see chunks.seal_all)


# --- stats, prune, vacuum, backup ----------------------------------------------------------------


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def stats(c: Any, path: Path) -> Stats:
    """Totals over the database and per project, in one snapshot."""
    with transactions.read_tx(c):
        by_project = drive(c, project_totals(SQLITE))
        stored, payload_bytes = c.execute(
            "SELECT COUNT(*), COALESCE(SUM(length(payload)), 0)"
            " + (SELECT COALESCE(SUM(length(payload)), 0) FROM chunks) FROM messages"
        ).fetchone()
        dictionaries = int(c.execute("SELECT COUNT(*) FROM zstd_dicts").fetchone()[0])
        sealed = int(
            c.execute("SELECT COUNT(*) FROM messages WHERE flags & ?", (packing.FLAG_SEALED,)).fetchone()[0]
        )
        chunk_count = int(c.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        checkpoints = int(c.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
        blobs, blob_bytes = c.execute("SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM blobs").fetchone()
        page_size = int(c.execute("PRAGMA page_size").fetchone()[0])
        page_count = int(c.execute("PRAGMA page_count").fetchone()[0])
        free = int(c.execute("PRAGMA freelist_count").fetchone()[0])
        version = int(c.execute("PRAGMA user_version").fetchone()[0])
        vectors = int(c.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0])
        vector_bytes = _vector_bytes(c)
    return Stats(
        **summed(by_project),
        stored_messages=int(stored),
        checkpoints=checkpoints,
        blobs=int(blobs),
        blob_bytes=int(blob_bytes),
        page_size=page_size,
        page_count=page_count,
        free_pages=free,
        schema_version=version,
        file_bytes=file_size(path),
        wal_bytes=file_size(wal_path(path)),
        by_project=by_project,
        payload_bytes=int(payload_bytes),
        dictionaries=dictionaries,
        sealed_messages=sealed,
        chunks=chunk_count,
        vectors=vectors,
        vector_bytes=vector_bytes,
    )


def _vector_bytes(c: Any) -> int:
    """Bytes of the pages holding embeddings: ``message_vectors`` and the sqlite-vec ``message_codes``
    table's shadow tables (from ``dbstat``; where SQLite lacks it, the blobs' own lengths)."""
    tables = [
        r[0]
        for r in c.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table'"
            " AND (name = 'message_vectors' OR name LIKE 'message\\_codes\\_%' ESCAPE '\\')"
        )
    ]
    try:
        return sum(
            int(
                c.execute(
                    "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name = ? AND aggregate = 1", (name,)
                ).fetchone()[0]
            )
            for name in tables
        )
    except Exception:  # no dbstat in this SQLite build
        return int(c.execute("SELECT COALESCE(SUM(length(embedding)), 0) FROM message_vectors").fetchone()[0])


def prune(
    c: Any,
    before_ms: int | None,
    keep: int | None,
    project: str | None,
    dry_run: bool,
    *,
    only: Sequence[str] | None = None,
) -> list[SessionInfo]:
    """Sessions last updated before ``before_ms`` and/or beyond the ``keep`` most recently
    updated (in ``project`` if given); deleted unless ``dry_run``. Returns them, newest first.

    ``only`` limits it to those ids: to delete what a dry run listed (and a person confirmed),
    and of those only the ones that still qualify, since the criteria are checked again in the
    one write transaction that deletes (a session appended to meanwhile is kept)."""
    if before_ms is None and keep is None:
        raise ValueError("prune needs a date (before) or a number of sessions to keep")
    if keep is not None and keep < 0:
        raise ValueError("keep must not be negative")
    where: list[str] = []
    args: list[Any] = []
    if project is not None:
        where.append("project = ?")
        args.append(project)
    if before_ms is not None:
        where.append("updated_at < ?")
        args.append(before_ms)
    if only is not None:
        where.append("id IN (SELECT value FROM json_each(?))")
        args.append(msgspec.json.encode(list(only)).decode())
    sql = f"SELECT {listing.INFO_COLUMNS} FROM sessions"
    if keep:
        # the `keep` most recently updated sessions of the project are kept whatever their age
        scope = "WHERE project = ?" if project is not None else ""
        where.append(
            f"sid NOT IN (SELECT sid FROM sessions {scope} ORDER BY updated_at DESC, sid DESC LIMIT ?)"
        )
        args += [*([project] if project is not None else []), keep]
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY updated_at DESC, sid DESC"
    # Listing and deleting in one write transaction: what is deleted is what qualified then.
    with transactions.read_tx(c) if dry_run else transactions.write_tx(c):
        infos = [listing.info_from_row(r) for r in c.execute(sql, args).fetchall()]
        if not dry_run:
            delete_sessions(c, [i.session_id for i in infos])
    return infos


def vacuum(c: Any, path: Path, full: bool = False) -> VacuumReport:
    """Empty the rows clear_run hid (:func:`.hiding.purge_hidden`), seal older messages into
    chunks, reclaim free pages, then truncate the WAL.

    Sealing (:func:`.chunks.seal_all`) reaches what the keyword index's folds did not, such as a
    database from before schema version 5; the pages it frees are reclaimed with the rest.

    With ``auto_vacuum = INCREMENTAL`` the free pages are moved to the end of the file and cut
    off in place (``PRAGMA incremental_vacuum``): no copy of the database, no extra disk. Otherwise,
    or with ``full``, SQLite's ``VACUUM`` rebuilds the database through a temporary copy and the
    WAL, so it needs up to about twice the database's size free while it runs; it also packs
    pages that rows shrank on (after :func:`recompress`), which the incremental way cannot.
    """
    on_disk = file_size(path) + file_size(wal_path(path))
    with transactions.write_tx(c):
        hiding.purge_hidden(c)  # rows clear_run hid that no other session reads
    sealed = chunks.seal_all(c)
    mode = int(c.execute("PRAGMA auto_vacuum").fetchone()[0])
    page_size = int(c.execute("PRAGMA page_size").fetchone()[0])
    before = int(c.execute("PRAGMA page_count").fetchone()[0])
    free = int(c.execute("PRAGMA freelist_count").fetchone()[0])
    if mode == 2 and not full:
        c.execute("PRAGMA incremental_vacuum").fetchall()
    else:
        c.execute("VACUUM")
    emptied = truncate_wal(c)
    after = int(c.execute("PRAGMA page_count").fetchone()[0])
    return VacuumReport(
        method="incremental" if mode == 2 and not full else "full",
        pages_before=before,
        pages_after=after,
        free_pages_before=free,
        page_size=page_size,
        bytes_before=on_disk,
        bytes_after=file_size(path) + file_size(wal_path(path)),
        wal_busy=not emptied,
        chunks_sealed=sealed,
    )
