"""Importing a json/jsonl export: validate the whole input, then one transaction per session,
written with its original times and checkpoints by :mod:`..store.inserting` (as the axio
migration is).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

from axio_context.errors import (
    SessionExistsError,
    TranscriptError,
)
from axio_context.memory_blocks.transfer_sql import BlockRow, clashing_blocks
from axio_context.transcript import (
    MessageRecord,
    iter_jsonl,
    iter_transfer,
    parse_time,
    read_transfer,
    sniff_format,
)
from axio_context.transcript.block_records import import_blocks, refuse_clashes
from axio_context.transcript.reports import ImportedSession as ImportedSession  # re-exported
from axio_context.transcript.reports import ImportReport as ImportReport  # re-exported

from ..store import session_rows, sessions, transactions
from ..store.inserting import Stamped, insert_session, set_aside
from ..store.runner import SQLITE, drive

# --- import --------------------------------------------------------------------------------------


def _stamped(records: Iterable[MessageRecord]) -> Iterator[Stamped]:
    for r in records:
        yield Stamped(r.message(), parse_time(r.created_at))


#: The path :func:`import_file` reads standard input from.
STDIN: Final = Path("-")


@contextlib.contextmanager
def _input(path: Path) -> Iterator[BinaryIO]:
    """The input, to be read more than once (seek back to 0). A regular file is read from disk
    each time, so memory stays flat however large it is; standard input and a pipe or FIFO
    (``import <(...)``, ``/dev/stdin``) cannot be read twice, so they are read whole, once."""
    if path == STDIN:
        yield io.BytesIO(sys.stdin.buffer.read())
        return
    with path.open("rb") as f:
        if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            yield f
            return
        data = f.read()
    yield io.BytesIO(data)


def _version(f: BinaryIO) -> tuple[int, int] | None:
    """A regular file's size and modification time, to tell it changed; None for one in memory."""
    if isinstance(f, io.BytesIO):
        return None
    st = os.fstat(f.fileno())
    return st.st_size, st.st_mtime_ns


def _blank(f: BinaryIO) -> bool:
    """Whether the input holds nothing but blank space (read up to its first other byte)."""
    try:
        while chunk := f.read(1 << 16):
            if chunk.strip(b" \t\r\n"):
                return False
        return True
    finally:
        f.seek(0)


def import_file(
    c: Any, path: Path, fmt: Literal["json", "jsonl"] | None, replace: bool, new_ids: bool
) -> ImportReport:
    """Import a ``json``/``jsonl`` export: validate the whole file, then one transaction per session.

    A ``jsonl`` file is read twice (validate, then write), a session at a time, so memory stays
    flat; a pipe works (read once into memory); :data:`STDIN` (``Path("-")``) reads standard
    input. A file that changes between validating and writing is refused before anything is
    written. An empty input (or blank lines only) is a ``jsonl`` export of no sessions, as
    ``export -f jsonl`` writes one; with ``fmt="json"`` it is refused. Existing ids are refused
    (nothing is written) unless ``replace`` (the file's version wins) or ``new_ids`` (every
    imported session gets a fresh id; lineage inside the file follows). The memory blocks a
    version 2 export carries are written first, in one transaction; one already here (by id,
    or owner and label) is refused unless ``replace``.
    """
    with _input(path) as f:
        return _import(c, f, "standard input" if path == STDIN else str(path), fmt, replace, new_ids)


def _import(
    c: Any, f: BinaryIO, source: str, fmt: Literal["json", "jsonl"] | None, replace: bool, new_ids: bool
) -> ImportReport:
    from uuid import uuid4

    before = _version(f)
    if fmt != "json" and _blank(f):
        # What a jsonl export of no sessions is (a json one is a document): zero sessions.
        return ImportReport(format="jsonl", sessions=[])
    if fmt is None:
        fmt = sniff_format(f.read(1 << 16))
        f.seek(0)
    transfer = read_transfer(f.read()) if fmt == "json" else None
    loaded = None if transfer is None else transfer.sessions
    # pass 1: validate everything (a jsonl input is parsed session by session, and again to write)
    ids: list[str] = []
    blocks: list[BlockRow] = [] if transfer is None else transfer.blocks
    for item in loaded if loaded is not None else iter_transfer(f):
        if isinstance(item, BlockRow):
            blocks.append(item)
        else:
            ids.append(item.id)
    if loaded is None and _version(f) != before:
        raise TranscriptError(f"{source} changed while it was being read; nothing was imported")
    if not new_ids and not replace:
        clash = [i for i in ids if session_rows.session_row(c, i) is not None]
        if clash:
            shown = ", ".join(clash[:5]) + (", ..." if len(clash) > 5 else "")
            raise SessionExistsError(
                f"{len(clash)} session(s) in {source} already exist ({shown}); "
                "use --replace to overwrite them or --new-ids to import copies"
            )
    if blocks and not replace:
        refuse_clashes(drive(c, clashing_blocks(SQLITE, blocks)), source)
    mapping = {i: uuid4().hex for i in ids} if new_ids else {i: i for i in ids}
    written_blocks: list[str] = []
    if blocks:
        with transactions.write_tx(c):  # a refusal rolls it back
            written_blocks = drive(c, import_blocks(SQLITE, blocks, source, replace=replace))
    report: list[ImportedSession] = []
    written: set[str] = set()
    f.seek(0)
    for rec in loaded if loaded is not None else iter_jsonl(f):  # pass 2: one tx each
        if len(report) >= len(ids) or rec.id != ids[len(report)]:
            raise TranscriptError(f"{source} changed while it was being imported")
        new_id = mapping[rec.id]
        parent_new = mapping.get(rec.parent_id, rec.parent_id) if rec.parent_id is not None else None
        with transactions.write_tx(c):
            aside = set_aside(c, new_id, written) if replace else None
            if aside is None and session_rows.session_row(c, new_id) is not None:
                raise SessionExistsError(f"session {new_id!r} appeared in the database during the import")
            owner_new = mapping.get(rec.owner_id, rec.owner_id) if rec.owner_id is not None else None
            insert_session(c, rec, new_id, parent_new, _stamped(rec.messages), owner_new)
        written.add(new_id)
        if aside is not None:
            sessions.delete_session(c, aside)
        report.append(ImportedSession(rec.id, new_id, len(rec.messages), aside is not None))
    return ImportReport(format=fmt, sessions=report, blocks=written_blocks)
