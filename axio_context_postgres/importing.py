"""Importing a json/jsonl export into PostgreSQL: the whole input is read and validated first,
then each session is written in a transaction of its own (as SQLite's
:mod:`axio_context_sqlite.admin.importing`), so a bad file writes nothing and a large one holds
no long transaction."""

from __future__ import annotations

import asyncio
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Literal, Protocol
from uuid import uuid4

from axio_context.errors import SessionExistsError
from axio_context.memory_blocks.transfer_sql import BlockRow, clashing_blocks
from axio_context.transcript import SessionRecord, iter_transfer, read_transfer, sniff_format
from axio_context.transcript.block_records import import_blocks, refuse_clashes
from axio_context.transcript.reports import ImportedSession, ImportReport

from . import sessions, writes
from .runner import POSTGRES, drive

__all__ = ["Transactions", "import_file"]


class Transactions(Protocol):
    """Opens one transaction on a pooled connection (read-only in one snapshot with
    ``readonly``), the driver's errors made into ours: what the database's calls run in."""

    def __call__(self, readonly: bool = False) -> AbstractAsyncContextManager[Any]: ...


async def import_file(
    tx: Transactions,
    path: str | Path,
    *,
    format: Literal["json", "jsonl"] | None = None,
    replace: bool = False,
    new_ids: bool = False,
    skip_existing: bool = False,
) -> ImportReport:
    """Import the export at ``path`` (``-``: standard input) in transactions from ``tx``.
    Existing ids are refused unless ``replace``, ``new_ids`` or ``skip_existing`` (left as they
    are: what makes a copy resumable)."""
    if replace and new_ids:
        raise ValueError("choose replace or new_ids, not both")
    source = "standard input" if str(path) == "-" else str(path)
    data = await asyncio.to_thread(
        lambda: sys.stdin.buffer.read() if str(path) == "-" else Path(path).read_bytes()
    )
    if not data.strip():
        return ImportReport(format="jsonl", sessions=[])
    fmt = format or sniff_format(data[: 1 << 16])
    if fmt == "json":
        records, blocks = read_transfer(data)
    else:
        items = list(iter_transfer(data.splitlines(keepends=True)))
        records = [r for r in items if isinstance(r, SessionRecord)]
        blocks = [r for r in items if isinstance(r, BlockRow)]
    ids = [r.id for r in records]
    async with tx(readonly=True) as conn:
        existing = {r[0] for r in await conn.fetch("SELECT id FROM sessions WHERE id = ANY($1::text[])", ids)}
        clashes = await drive(conn, clashing_blocks(POSTGRES, blocks)) if blocks else []
    if not (replace or skip_existing):
        refuse_clashes(clashes, source)
    if existing and not (replace or new_ids or skip_existing):
        shown = ", ".join(sorted(existing)[:5]) + (", ..." if len(existing) > 5 else "")
        raise SessionExistsError(
            f"{len(existing)} session(s) in {source} already exist ({shown}); "
            "use --replace to overwrite them or --new-ids to import copies"
        )
    mapping = {i: uuid4().hex for i in ids} if new_ids else {i: i for i in ids}
    loaded: list[str] = []
    if blocks:
        async with tx() as conn:  # a refusal rolls it back
            plan = import_blocks(POSTGRES, blocks, source, replace=replace, skip_existing=skip_existing)
            loaded = await drive(conn, plan)
    report: list[ImportedSession] = []
    for rec in records:
        new_id = mapping[rec.id]
        if skip_existing and not replace and rec.id in existing:
            continue
        parent = mapping.get(rec.parent_id, rec.parent_id) if rec.parent_id is not None else None
        async with tx() as conn:
            replaced = replace and await writes.delete_session(conn, new_id)
            owner = mapping.get(rec.owner_id, rec.owner_id) if rec.owner_id is not None else None
            written = await sessions.insert_session(conn, rec, new_id, parent, owner)
        report.append(ImportedSession(rec.id, new_id, written, replaced))
    return ImportReport(format=fmt, sessions=report, blocks=loaded)
