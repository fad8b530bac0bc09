"""Importing a json/jsonl export: validate the whole input, then one transaction per session.

The one thing besides :mod:`..store.appending` that writes messages: a session imported with its
original times and checkpoints (:func:`insert_session`), since :func:`.appending.append` stamps
rows with the current time. :mod:`.axio_migration` writes through the same helpers.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
from collections.abc import Container, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Final, Literal

import msgspec

from axio_context.codec import encode_messages_msgpack
from axio_context.errors import (
    SessionExistsError,
    TranscriptError,
)
from axio_context.messages import Message
from axio_context.tokens import estimate_message_tokens, estimate_tokens
from axio_context.transcript import (
    CheckpointRecord,
    MessageRecord,
    SessionHeader,
    iter_jsonl,
    parse_time,
    read_json,
    sniff_format,
)

from ..store import appending, blob_refs, indexing, packing, session_rows, sessions, transactions
from ..store.keys import key
from ..store.message_rows import encode_message
from .exporting import BATCH


class ImportedSession(msgspec.Struct, frozen=True):
    """One session an import wrote: its id in the file, its id now, and its messages."""

    source_id: str
    id: str
    messages: int
    replaced: bool = False


class ImportReport(msgspec.Struct, frozen=True):
    """What an import wrote, in file order."""

    format: str
    sessions: list[ImportedSession]


# --- import --------------------------------------------------------------------------------------


class Stamped(msgspec.Struct):
    """A message to insert with its original time."""

    message: Message
    created_ms: int


def _tokens_upto(c: Any, row: session_rows.SessionRow, end: int) -> int:
    total = 0
    for sid, lo, hi in session_rows.segments(c, row, 0, end):
        total += int(
            c.execute(
                "SELECT COALESCE(SUM(tokens), 0) FROM messages WHERE id >= ? AND id < ?",
                (key(sid, lo), key(sid, hi)),
            ).fetchone()[0]
        )
    return total


def insert_messages(c: Any, sid: int, first: int, batch: Sequence[Stamped]) -> int:
    """Insert messages at positions ``first..`` with their times; returns their estimated tokens.

    Besides :mod:`.appending`, the one place new messages are written; it must stay in step with
    :func:`.appending.append` (blob references, and any index a later schema keeps per message).
    """
    rows = []
    texts: list[tuple[str, str]] = []
    blobs: list[tuple[bytes, bytes]] = []
    spent = 0
    dicts = packing.bound_or_none()
    encoded = appending.ensure_dictionaries(
        c, [encode_message(m.message, text=True, dicts=dicts) for m in batch]
    )
    for i, (item, e) in enumerate(zip(batch, encoded, strict=True)):
        t = estimate_message_tokens(item.message)
        spent += t
        rows.append((key(sid, first + i), e.role, e.flags, item.created_ms, t, e.payload))
        texts.append((e.body, e.tool))
        blobs.extend(e.blobs)
    c.executemany(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload) VALUES (?, ?, ?, ?, ?, ?)", rows
    )
    extras = [(row[0], e.extra) for row, e in zip(rows, encoded, strict=True) if e.extra is not None]
    if extras:
        c.executemany("INSERT INTO message_extras (id, data) VALUES (?, ?)", extras)
    indexing.index_text(c, [(row[0], *text) for row, text in zip(rows, texts, strict=True)])  # one batch
    if dicts is not None:
        dicts.count(row[2] for row in rows)
    if blobs:
        blob_refs.add_blob_refs(c, blobs)
    return spent


def _insert_checkpoints(
    c: Any, sid: int, row: session_rows.SessionRow, checkpoints: Sequence[CheckpointRecord]
) -> None:
    for cp in checkpoints:
        c.execute(
            "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
            " created_at, summary_tokens, tokens_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sid,
                cp.id,
                cp.position,
                encode_messages_msgpack(cp.summary),
                cp.tokens_before,
                cp.tokens_after,
                cp.summarizer,
                parse_time(cp.created_at),
                estimate_tokens(cp.summary),
                _tokens_upto(c, row, cp.position),
            ),
        )


def set_aside(c: Any, session_id: str, written: Container[str] = ()) -> str | None:
    """Rename an existing session out of the way (inside the caller's transaction).

    Replacing is "rename, insert the new one, commit, then ``sessions.delete_session`` the old one":
    the swap is atomic, and the old session is deleted by the one function that knows how
    (forks keep their views, blobs are freed). A crash between the two steps leaves the old
    session under a ``<id>~replaced-<n>`` id instead of losing it.

    ``written``: the sessions this import wrote already; a fork among them (one that came before
    its parent in the file) names the replacement as its record says, so it is not detached.
    """
    row = session_rows.session_row(c, session_id)
    if row is None:
        return None
    aside = f"{session_id}~replaced-{row.sid}"
    c.execute("UPDATE sessions SET id = ? WHERE sid = ?", (aside, row.sid))
    # Its forks are the old session's, not the replacement's: deleting it detaches them.
    forks = [
        r[0]
        for r in c.execute("SELECT sid, id FROM sessions WHERE parent_id = ?", (session_id,))
        if r[1] not in written
    ]
    c.executemany("UPDATE sessions SET parent_id = ? WHERE sid = ?", [(aside, sid) for sid in forks])
    return aside


def insert_session(
    c: Any,
    header: SessionHeader,
    new_id: str,
    parent_new_id: str | None,
    messages: Iterable[Stamped],
) -> int:
    """Insert a whole session with its original times (inside the caller's transaction)."""
    base_sid: int | None = None
    est = 0
    preview: tuple[int, str] | None = None
    if header.inherited:
        assert parent_new_id is not None
        parent = session_rows.session_row(c, parent_new_id)
        if parent is None or parent.next_position < header.inherited:
            raise TranscriptError(
                f"session {header.id!r} inherits {header.inherited} messages from {parent_new_id!r}, "
                "which is missing or shorter in the database"
            )
        base_sid = parent.sid
        est = _tokens_upto(c, parent, header.inherited)
        p = c.execute("SELECT preview, preview_pos FROM sessions WHERE sid = ?", (parent.sid,)).fetchone()
        if p[1] is not None and p[1] < header.inherited:
            preview = (int(p[1]), str(p[0] or ""))
    metadata = None if header.metadata is None else sessions.encode_metadata(header.metadata)
    sid = int(
        c.execute(
            "INSERT INTO sessions (id, project, parent_id, fork_position, base_sid, base_len, next_position,"
            " created_at, updated_at, title, metadata, input_tokens, output_tokens)"
            " VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?) RETURNING sid",
            (
                new_id,
                header.project,
                parent_new_id,
                header.fork_position,
                base_sid,
                header.inherited,
                parse_time(header.created_at),
                parse_time(header.updated_at),
                header.title,
                metadata,
                header.input_tokens,
                header.output_tokens,
            ),
        ).fetchone()[0]
    )
    position = header.inherited
    for batch in _batches(messages, BATCH):
        if preview is None:
            preview = appending.preview_for([m.message for m in batch], position)
        est += insert_messages(c, sid, position, batch)
        position += len(batch)
    c.execute(
        "UPDATE sessions SET next_position = ?, est_tokens = ?, preview = ?, preview_pos = ? WHERE sid = ?",
        (
            position,
            est,
            None if preview is None else preview[1],
            None if preview is None else preview[0],
            sid,
        ),
    )
    row = session_rows.SessionRow(sid, base_sid, header.inherited, position, est, header.project)
    _insert_checkpoints(c, sid, row, header.checkpoints)
    return position


def _batches(items: Iterable[Stamped], size: int) -> Iterator[list[Stamped]]:
    batch: list[Stamped] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


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
    imported session gets a fresh id; lineage inside the file follows).
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
    loaded = read_json(f.read()) if fmt == "json" else None
    # pass 1: validate everything (a jsonl input is parsed session by session, and again to write)
    ids: list[str] = [r.id for r in (loaded if loaded is not None else iter_jsonl(f))]
    if loaded is None and _version(f) != before:
        raise TranscriptError(f"{source} changed while it was being read; nothing was imported")
    if not new_ids and not replace:
        clash = [i for i in ids if c.execute("SELECT 1 FROM sessions WHERE id = ?", (i,)).fetchone()]
        if clash:
            shown = ", ".join(clash[:5]) + (", ..." if len(clash) > 5 else "")
            raise SessionExistsError(
                f"{len(clash)} session(s) in {source} already exist ({shown}); "
                "use --replace to overwrite them or --new-ids to import copies"
            )
    mapping = {i: uuid4().hex for i in ids} if new_ids else {i: i for i in ids}
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
            insert_session(c, rec, new_id, parent_new, _stamped(rec.messages))
        written.add(new_id)
        if aside is not None:
            sessions.delete_session(c, aside)
        appending.train_if_due(c)
        report.append(ImportedSession(rec.id, new_id, len(rec.messages), aside is not None))
    return ImportReport(format=fmt, sessions=report)
