"""The SQL of whole-database work: resolve ids, show, export, import, prune, stats, vacuum
(migration from axio-context-sqlite is in :mod:`.axio_migration`).

Like :mod:`.sessions`, every function here is synchronous and runs on a connection's worker thread
(through :func:`.calls.run`), one thread hop per call. Single-session writes and deletes go
through :mod:`.sessions` (``sessions.delete_session`` frees blobs and keeps forks' views); the one thing
written here directly is a session imported with its original times and checkpoints
(``_insert_session``), because :func:`.appending.append` stamps rows with the current time.

Exports run inside one read transaction: under WAL that is a snapshot no concurrent writer can
tear, and they hand the output to a ``sink`` batch by batch, so memory stays flat however large
the database is.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Literal

import msgspec

from axio_context.codec import encode_messages_msgpack
from axio_context.errors import (
    AmbiguousSessionError,
    DatabaseError,
    DestinationExistsError,
    SessionExistsError,
    SessionNotFoundError,
    TranscriptError,
)
from axio_context.messages import Message, SessionInfo
from axio_context.tokens import estimate_message_tokens, estimate_tokens
from axio_context.transcript import (
    CheckpointRecord,
    MessageRecord,
    SessionHeader,
    TranscriptWriter,
    format_time,
    iter_jsonl,
    parse_time,
    read_json,
    sniff_format,
)

from ..store import (
    appending,
    blob_refs,
    chunks,
    indexing,
    keys,
    listing,
    packing,
    reading,
    session_rows,
    sessions,
    transactions,
)
from ..store.checkpointer import truncate_wal
from ..store.keys import key
from ..store.listing import SessionPage
from ..store.message_rows import encode_message

if TYPE_CHECKING:
    from ..store.checkpointer import Checkpointer

__all__ = [
    "AxioImportReport",
    "ExportSummary",
    "ImportReport",
    "ImportedSession",
    "ProjectStats",
    "RecompressReport",
    "SessionView",
    "Stats",
    "VacuumReport",
]

Progress = Callable[[int, int], object]
Sink = Callable[[bytes], object]

#: Messages decoded and written per batch during export and import (bounds an export's memory).
BATCH: Final = 256


# --- result types --------------------------------------------------------------------------------


class SessionView(msgspec.Struct, frozen=True):
    """What ``show`` prints: the session's fields, then either the model's view or every message.

    In the view, ``summary`` is the latest checkpoint's summary (None when there is none) and
    ``messages`` start at position ``start``; with ``full`` they start at 0 and summary is None.
    """

    header: SessionHeader
    summary: list[Message] | None
    start: int
    messages: list[MessageRecord]


class ExportSummary(msgspec.Struct, frozen=True):
    """How much an export wrote."""

    sessions: int
    messages: int


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


class AxioImportReport(msgspec.Struct, frozen=True):
    """The outcome of migrating an axio-context-sqlite database, session by session.

    ``added``: new here; ``updated``: messages or token totals that changed since an earlier
    migration were taken over;
    ``unchanged``: already migrated (or continued here); ``conflicts``: the session exists here
    with a different transcript and was left alone (``replaced`` when asked to overwrite).
    """

    added: list[str]
    updated: list[str]
    unchanged: list[str]
    conflicts: list[str]
    replaced: list[str]
    messages: int


class ProjectStats(msgspec.Struct, frozen=True):
    """Totals of one project."""

    project: str | None
    sessions: int
    messages: int
    input_tokens: int
    output_tokens: int


class Stats(msgspec.Struct, frozen=True):
    """Totals of a database; ``messages`` counts transcripts (a fork's inherited ones included),
    ``stored_messages`` the rows actually stored."""

    sessions: int
    messages: int
    stored_messages: int
    input_tokens: int
    output_tokens: int
    checkpoints: int
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
    dictionaries: int = 0  # Zstandard dictionaries the payloads are compressed with
    sealed_messages: int = 0  # stored messages whose payload is in a chunk (see chunks.py)
    chunks: int = 0


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


class RecompressReport(msgspec.Struct, frozen=True):
    """What :func:`recompress` rewrote: payloads, their bytes before and after, the dictionary."""

    dictionary: int | None  # None: too few compressible payloads to train one
    rows: int
    bytes_before: int
    bytes_after: int
    dictionaries_removed: int = 0  # older dictionaries no row used any more


# --- resolving ids -------------------------------------------------------------------------------


def _prefix_range(prefix: str) -> tuple[str, str] | None:
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return None
    return prefix, prefix[:-1] + chr(last + 1)


def ids_with_prefix(c: Any, prefix: str, limit: int) -> list[str]:
    """Session ids starting with ``prefix`` (an index range scan), newest first."""
    if not prefix:
        rows = c.execute(
            "SELECT id FROM sessions ORDER BY created_at DESC, sid DESC LIMIT ?", (limit,)
        ).fetchall()
        return [r[0] for r in rows]
    bounds = _prefix_range(prefix)
    if bounds is None:
        rows = c.execute(
            "SELECT id FROM sessions WHERE substr(id, 1, length(?)) = ? ORDER BY id LIMIT ?",
            (prefix, prefix, limit),
        ).fetchall()
    else:
        rows = c.execute(
            "SELECT id FROM sessions WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (*bounds, limit)
        ).fetchall()
    return [r[0] for r in rows]


def resolve(c: Any, prefix: str) -> str:
    """The one session id equal to, or else starting with, ``prefix``."""
    if not prefix:
        raise SessionNotFoundError("a session id (or a prefix of one) must not be empty")
    if c.execute("SELECT 1 FROM sessions WHERE id = ?", (prefix,)).fetchone():
        return prefix
    found = ids_with_prefix(c, prefix, 11)
    if not found:
        raise SessionNotFoundError(f"no session id starts with {prefix!r}")
    if len(found) > 1:
        shown = ", ".join(found[:10]) + (", ..." if len(found) > 10 else "")
        raise AmbiguousSessionError(
            f"{prefix!r} matches {'more than 10' if len(found) > 10 else len(found)} sessions: {shown}",
            found[:10],
        )
    return str(found[0])


def latest(c: Any) -> str:
    """The most recently created session's id (the first row of a listing)."""
    r = c.execute("SELECT id FROM sessions ORDER BY created_at DESC, sid DESC LIMIT 1").fetchone()
    if r is None:
        raise SessionNotFoundError("the database holds no sessions yet")
    return str(r[0])


def list_sessions(
    c: Any, project: str | None, limit: int | None, cursor: str | None, since_ms: int | None
) -> SessionPage:
    """:func:`.listing.list_sessions` over every project (``project=None``) or one."""
    if project is None:
        return listing.list_sessions(c, limit=limit, cursor=cursor, since_ms=since_ms)
    return listing.list_sessions(c, project, limit=limit, cursor=cursor, since_ms=since_ms)


# --- reading sessions ----------------------------------------------------------------------------

_COLS: Final = (
    f"{session_rows.ROW_COLUMNS}, id, title, metadata, created_at, updated_at, parent_id, fork_position,"
    " input_tokens, output_tokens"
)


class _Full(session_rows.SessionRow):
    """A session's whole row: the lineage part every read needs, then the rest, as in ``_COLS``."""

    id: str
    title: str | None
    metadata: str | None
    created_at: int
    updated_at: int
    parent_id: str | None
    fork_position: int | None
    input_tokens: int
    output_tokens: int


def _full(c: Any, session_id: str) -> _Full:
    r = c.execute(f"SELECT {_COLS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return _Full(*r)


def _checkpoints(c: Any, s: _Full) -> list[CheckpointRecord]:
    rows = c.execute(
        "SELECT seq, position, summary, tokens_before, tokens_after, summarizer, created_at"
        " FROM checkpoints WHERE sid = ? ORDER BY seq",
        (s.sid,),
    ).fetchall()
    return [
        CheckpointRecord(
            id=seq,
            position=position,
            summary=reading.decode_summary(s.id, summary),
            tokens_before=before,
            tokens_after=after,
            summarizer=summarizer,
            created_at=format_time(created),
        )
        for seq, position, summary, before, after, summarizer, created in rows
    ]


def _metadata(s: _Full) -> dict[str, Any] | None:
    return None if s.metadata is None else sessions.decode_metadata(s.id, s.metadata)


def _header(c: Any, s: _Full, inherited: int) -> SessionHeader:
    return SessionHeader(
        id=s.id,
        project=s.project,
        title=s.title,
        metadata=_metadata(s),
        created_at=format_time(s.created_at),
        updated_at=format_time(s.updated_at),
        parent_id=s.parent_id,
        fork_position=s.fork_position,
        inherited=inherited,
        message_count=s.next_position,
        input_tokens=s.input_tokens,
        output_tokens=s.output_tokens,
        checkpoints=_checkpoints(c, s),
    )


def _records(c: Any, s: _Full, start: int, end: int) -> list[MessageRecord]:
    """Positions ``[start, end)`` with their created times."""
    times: list[int] = []
    messages = reading.read_messages(c, s.id, s, start, end, times=times)
    return [
        MessageRecord(role=m.role, content=m.content, created_at=format_time(t))
        for m, t in zip(messages, times, strict=True)
    ]


def show(c: Any, session_id: str, full: bool) -> SessionView:
    """A session's fields and its model view (or, with ``full``, every message): one snapshot."""
    with transactions.read_tx(c):
        s = _full(c, session_id)
        header = _header(c, s, 0)
        if full or not header.checkpoints:
            return SessionView(header, None, 0, _records(c, s, 0, s.next_position))
        latest_cp = header.checkpoints[-1]
        return SessionView(
            header, latest_cp.summary, latest_cp.position, _records(c, s, latest_cp.position, s.next_position)
        )


# --- export --------------------------------------------------------------------------------------


def _shared_prefix(c: Any, child: _Full, parent: _Full) -> int:
    """How many leading positions of ``child`` are the very rows of ``parent``'s transcript."""
    if child.base_sid is None:
        return 0
    a = session_rows.segments(c, child, 0, child.base_len)
    b = session_rows.segments(c, parent, 0, min(child.base_len, parent.next_position))
    shared = i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] != b[j][0]:
            break
        end = min(a[i][2], b[j][2])
        shared = end
        if a[i][2] == end:
            i += 1
        if b[j][2] == end:
            j += 1
    return shared


def _inherited(c: Any, s: _Full, exported: set[int] | None) -> int:
    """``inherited`` for ``s``: its prefix shared with a parent exported before it, else 0."""
    if s.base_sid is None or s.parent_id is None:
        return 0
    r = c.execute(f"SELECT {_COLS} FROM sessions WHERE id = ?", (s.parent_id,)).fetchone()
    if r is None:
        return 0
    parent = _Full(*r)
    # A parent is always older than its fork (smaller sid), and exports go in sid order.
    if parent.sid >= s.sid or (exported is not None and parent.sid not in exported):
        return 0
    return _shared_prefix(c, s, parent)


def export(
    c: Any,
    writer: TranscriptWriter,
    session_ids: Sequence[str] | None,
    sink: Sink,
    progress: Progress | None = None,
) -> ExportSummary:
    """Write sessions (all of them when ``session_ids`` is None) to ``sink``, oldest first.

    One read transaction covers the whole export, so it is one consistent snapshot; sessions
    are read one at a time and messages :data:`BATCH` at a time, so memory stays flat.
    """
    with transactions.read_tx(c):
        selected: Iterable[_Full]
        exported: set[int] | None
        if session_ids is None:
            total = int(c.execute("SELECT COALESCE(SUM(next_position), 0) FROM sessions").fetchone()[0])
            selected = (_Full(*r) for r in c.execute(f"SELECT {_COLS} FROM sessions ORDER BY sid"))
            exported = None
        else:
            rows = sorted(
                {s.sid: s for s in (_full(c, i) for i in session_ids)}.values(), key=lambda s: s.sid
            )
            total = sum(s.next_position for s in rows)
            selected = rows
            exported = set()
        done = sessions = messages = 0
        sink(writer.begin())
        for s in selected:
            inherited = 0 if writer.self_contained else _inherited(c, s, exported)
            header = _header(c, s, inherited)
            sink(writer.session(header))
            done += inherited
            for lo in range(inherited, s.next_position, BATCH):
                hi = min(lo + BATCH, s.next_position)
                sink(writer.messages(header, lo, _records(c, s, lo, hi)))
                messages += hi - lo
                done += hi - lo
                if progress is not None:
                    progress(done, total)
            sink(writer.end_session(header))
            sessions += 1
            if exported is not None:
                exported.add(s.sid)
        sink(writer.end())
        if progress is not None:
            progress(total, total)
    return ExportSummary(sessions=sessions, messages=messages)


# --- import --------------------------------------------------------------------------------------


class _Stamped(msgspec.Struct):
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


def _insert_messages(c: Any, sid: int, first: int, batch: Sequence[_Stamped]) -> int:
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


def _set_aside(c: Any, session_id: str, written: Container[str] = ()) -> str | None:
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


def _insert_session(
    c: Any,
    header: SessionHeader,
    new_id: str,
    parent_new_id: str | None,
    messages: Iterable[_Stamped],
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
        est += _insert_messages(c, sid, position, batch)
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


def _batches(items: Iterable[_Stamped], size: int) -> Iterator[list[_Stamped]]:
    batch: list[_Stamped] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _stamped(records: Iterable[MessageRecord]) -> Iterator[_Stamped]:
    for r in records:
        yield _Stamped(r.message(), parse_time(r.created_at))


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
            aside = _set_aside(c, new_id, written) if replace else None
            if aside is None and session_rows.session_row(c, new_id) is not None:
                raise SessionExistsError(f"session {new_id!r} appeared in the database during the import")
            _insert_session(c, rec, new_id, parent_new, _stamped(rec.messages))
        written.add(new_id)
        if aside is not None:
            sessions.delete_session(c, aside)
        appending.train_if_due(c)
        report.append(ImportedSession(rec.id, new_id, len(rec.messages), aside is not None))
    return ImportReport(format=fmt, sessions=report)


# --- fork, delete, rename ------------------------------------------------------------------------


def fork(c: Any, session_id: str, new_id: str) -> None:
    """Fork an existing session (:func:`.sessions.fork`), refusing a taken id."""
    _full(c, session_id)
    if session_rows.session_row(c, new_id) is not None:
        raise SessionExistsError(f"a session {new_id!r} already exists")
    sessions.fork(c, session_id, None, new_id)


def delete_sessions(c: Any, session_ids: Sequence[str]) -> list[str]:
    """Delete sessions through :func:`.sessions.delete_session`, newest first (so no fork of a doomed
    parent is detached just to be deleted too); returns the ids that existed."""
    rows = []
    for i in dict.fromkeys(session_ids):
        r = c.execute("SELECT sid FROM sessions WHERE id = ?", (i,)).fetchone()
        if r is not None:
            rows.append((int(r[0]), i))
    deleted = []
    for _, i in sorted(rows, reverse=True):
        if sessions.delete_session(c, i):
            deleted.append(i)
    return deleted


def rename(c: Any, old: str, new: str) -> None:
    """Change a session's id; forks' ``parent_id`` follows."""
    if not new:
        raise ValueError("a session id must not be empty")
    with transactions.write_tx(c):
        _full(c, old)
        if session_rows.session_row(c, new) is not None:
            raise SessionExistsError(f"a session {new!r} already exists")
        now = keys.now_ms()
        c.execute("UPDATE sessions SET id = ?, updated_at = ? WHERE id = ?", (new, now, old))
        c.execute("UPDATE sessions SET parent_id = ? WHERE parent_id = ?", (new, old))


def set_title(c: Any, session_id: str, title: str | None) -> None:
    """Set or clear the title of an existing session."""
    _full(c, session_id)
    sessions.set_title(c, session_id, None, title)


# --- files written next to the database (export -o, backup) --------------------------------------

#: The files SQLite keeps beside a database; writing over one of them damages the database.
SIDE_SUFFIXES: Final = ("-wal", "-shm", "-journal")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def output_target(dest: Path, database: Path) -> Path:
    """Where writing ``dest`` lands, symlinks followed (so a link stays a link and its target gets
    the content); refuses the database and its side files, which an output would destroy."""
    dest = dest.expanduser()
    target = Path(os.path.realpath(dest))
    db = Path(os.path.realpath(database.expanduser()))
    for suffix in ("", *SIDE_SUFFIXES):
        side = db.with_name(db.name + suffix)
        if target == side or _same_file(dest, side):
            what = "the database itself" if not suffix else f"the database's {suffix} file"
            raise DestinationExistsError(f"{dest} is {what}")
    return target


#: ``/dev/stdout`` and the like name the process's own descriptors 0-2.
_STANDARD: Final = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
#: A descriptor of a process, with symlinks in its folder resolved (``/dev/fd`` and ``/proc/self``
#: are links to ``/proc/<pid>``): ``/proc/<pid>/fd/N`` or ``/proc/<pid>/task/<tid>/fd/N``.
_PROC_FD: Final = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd/(.*)")


def descriptor(dest: Path) -> int | Path | None:
    """What ``dest`` names when it is an open descriptor rather than a file: the number of one of
    ours (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``, or a link to one), the path of
    another process's (``/proc/<pid>/fd/N``); None for anything else.

    Such a path resolves to whatever the descriptor is open on, a regular file when the shell
    redirected to one (``>> log.txt``): replacing that file would destroy what it held.
    """
    path = os.path.abspath(dest.expanduser())
    for _ in range(40):  # the kernel's limit on links followed
        folder = os.path.realpath(os.path.dirname(path))
        path = os.path.join(folder, os.path.basename(path))
        if path in _STANDARD:
            return _STANDARD[path]
        m = _PROC_FD.fullmatch(path)
        if m is not None:
            if int(m.group(1)) == os.getpid() and m.group(2).isdigit():
                return int(m.group(2))
            return Path(path)
        try:
            link = os.readlink(path)
        except OSError:
            return None
        path = os.path.normpath(os.path.join(folder, link))
    return None


@contextlib.contextmanager
def _through_descriptor(dest: Path, fd: int | Path) -> Iterator[BinaryIO]:
    """Write an open descriptor's file as it is open: one of ours through a duplicate of it (the
    shell's ``>>`` appends, its ``>`` writes on from where it is); another process's appended to
    (opening it again must not truncate it)."""
    if isinstance(fd, Path):
        number = os.open(fd, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    else:
        try:
            number = os.dup(fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(dest)) from None
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # what was printed first comes first
    try:
        if stat.S_ISDIR(os.fstat(number).st_mode):
            raise IsADirectoryError(21, "Is a directory", str(dest))
    except BaseException:
        os.close(number)
        raise
    # unbuffered, like the temporary file: a failed write fails there, not again at close
    with os.fdopen(number, "wb", buffering=0) as direct:
        yield direct


def _temporary_beside(target: Path) -> tuple[int, Path]:
    """An empty owner-only (0600) file in ``target``'s folder, to be renamed over it when done;
    a file ``target`` that already exists lends it its mode."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    except FileNotFoundError:
        raise FileNotFoundError(2, "No such folder", str(target.parent)) from None
    with contextlib.suppress(FileNotFoundError):
        os.fchmod(fd, stat.S_IMODE(os.stat(target).st_mode))
    return fd, Path(name)


@contextlib.contextmanager
def writing(dest: Path, database: Path) -> Iterator[BinaryIO]:
    """A binary file to write ``dest`` through, never leaving it half-written.

    A regular (or missing) file is written to a temporary file beside it, synced, and renamed
    over it only when the block succeeds (removed when it fails); a symlink's target is the file
    replaced. A FIFO or device is written directly: it cannot be replaced. An open descriptor
    (``/dev/stdout``, ``/dev/fd/N``, ``/proc/<pid>/fd/N``) is written through, whatever it is
    open on, never replaced (see :func:`descriptor`). New files are owner-only (0600), like the
    database. Refuses the database's own files.
    """
    dest = dest.expanduser()
    target = output_target(dest, database)
    fd = descriptor(dest)
    if fd is not None:
        with _through_descriptor(dest, fd) as direct:
            yield direct
        return
    try:
        mode: int | None = os.stat(dest).st_mode  # through links, as opening it would go
    except FileNotFoundError:
        mode = None
    if mode is not None and stat.S_ISDIR(mode):
        raise IsADirectoryError(21, "Is a directory", str(dest))
    if mode is not None and not stat.S_ISREG(mode):
        # unbuffered, like the temporary file: a failed write fails there, not again at close
        with open(dest, "wb", buffering=0) as direct:
            yield direct
        return
    fd, temp = _temporary_beside(target)
    try:
        with os.fdopen(fd, "wb", buffering=0) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


# --- stats, prune, vacuum, backup ----------------------------------------------------------------


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def stats(c: Any, path: Path) -> Stats:
    """Totals over the database and per project, in one snapshot."""
    with transactions.read_tx(c):
        # Token totals are summed in two halves (high and low 32 bits), joined exactly in Python:
        # each session may hold up to 2**63 - 1, so their plain SUM overflows SQLite's integer.
        by_project = [
            ProjectStats(p, int(n), int(m or 0), (a_hi << 32) + a_lo, (b_hi << 32) + b_lo)
            for p, n, m, a_hi, a_lo, b_hi, b_lo in c.execute(
                "SELECT project, COUNT(*), SUM(next_position),"
                " SUM(input_tokens >> 32), SUM(input_tokens & 4294967295),"
                " SUM(output_tokens >> 32), SUM(output_tokens & 4294967295)"
                " FROM sessions GROUP BY project ORDER BY COUNT(*) DESC, project"
            ).fetchall()
        ]
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
    return Stats(
        sessions=sum(p.sessions for p in by_project),
        messages=sum(p.messages for p in by_project),
        stored_messages=int(stored),
        input_tokens=sum(p.input_tokens for p in by_project),
        output_tokens=sum(p.output_tokens for p in by_project),
        checkpoints=checkpoints,
        blobs=int(blobs),
        blob_bytes=int(blob_bytes),
        page_size=page_size,
        page_count=page_count,
        free_pages=free,
        schema_version=version,
        file_bytes=_size(path),
        wal_bytes=_size(_wal(path)),
        by_project=by_project,
        payload_bytes=int(payload_bytes),
        dictionaries=dictionaries,
        sealed_messages=sealed,
        chunks=chunk_count,
    )


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


#: Rows rewritten per transaction by :func:`recompress`.
_RECOMPRESS_BATCH: Final = 1000


def recompress(c: Any, progress: Progress | None = None) -> RecompressReport:
    """Train a new compression dictionary on a random sample of the whole database, then rewrite
    every payload that is not compressed with it, a batch per transaction.

    For a database upgraded from before dictionaries, or whose content drifted from what its
    dictionary was trained on, or to forget deleted sessions: a dictionary holds fragments of
    what it was trained on, so the older ones no row uses any more are deleted, and the keyword
    index is merged (dropping deleted messages' terms). The contents do not change, only their
    encoding; readers see each row before or after, and a crash leaves finished batches done.

    Runs may overlap (two ``vacuum --recompress``, in one process or two), and writers on other
    connections go on compressing with whatever dictionary they hold; no lock is held between
    batches. What keeps every row's dictionary in the database is two checks, each made under the
    write lock of the transaction that acts on it:

    - each batch first adopts the database's newest dictionary (:func:`_newest_dictionary`):
      another run may have trained a newer one and deleted this run's, and a batch must never
      write with a dictionary that is gone. Overlapping runs so end on the same, newest one;
    - the final delete removes only dictionaries older than the one this run ended with that no
      row or chunk uses, in one statement. A newer run's dictionary is never deleted, though it
      may not have written a row yet, so the newest is never deleted and a new one's id
      (``max + 1``) is never one a connection may still hold in memory for a deleted one.

    Writers check their own dictionary in their write transactions the same way
    (:func:`.storage.writing`, the append trigger). Two overlapping runs both succeed and end
    on the same dictionary, each skipping the rows already compressed with it.
    """
    dicts = packing.bound()
    if dicts.train(replace=True, spread=True) is None:
        return RecompressReport(dictionary=None, rows=0, bytes_before=0, bytes_after=0)
    total = int(
        c.execute("SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM chunks)").fetchone()[0]
    )
    done = rows = before = after = 0
    new_id = 0
    for table in ("messages", "chunks"):
        new_id, d, r, b, a = _recompress_table(c, dicts, table, done, total, progress)
        done, rows, before, after = done + d, rows + r, before + b, after + a
    with transactions.write_tx(c):
        # Another connection may still be compressing with an older dictionary: its append finds
        # the dictionary gone (the append trigger checks) and compresses again with the new one.
        removed = c.execute(
            "DELETE FROM zstd_dicts WHERE id < ? AND id NOT IN"
            " (SELECT DISTINCT flags >> ? FROM messages WHERE flags >> ?"
            " UNION SELECT DISTINCT flags >> ? FROM chunks WHERE flags >> ?) RETURNING id",
            (new_id, *(packing.DICT_SHIFT,) * 4),
        ).fetchall()
        # Merging the keyword index into one segment drops the terms of deleted messages too.
        indexing.flush_pending(c)
        c.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
    return RecompressReport(new_id, rows, before, after, dictionaries_removed=len(removed))


def _newest_dictionary(c: Any, dicts: packing.Dictionaries) -> int:
    """Inside a write transaction: make the database's newest dictionary ``dicts``' current one
    (another recompress may have trained it, and deleted the one this run trained) and return its
    id. The write lock keeps it in the database until the transaction ends."""
    newest = c.execute("SELECT max(id) FROM zstd_dicts").fetchone()[0]
    if dicts.current is None or dicts.current[0] != newest:
        dicts.load()  # the one replaced stays in memory, to read the rows that still use it
    current = dicts.current
    return 0 if current is None else current[0]


def _recompress_table(
    c: Any,
    dicts: packing.Dictionaries,
    table: str,
    done: int,
    total: int,
    progress: Progress | None,
) -> tuple[int, int, int, int, int]:
    """:func:`recompress` over the payloads of ``messages`` (a sealed row's is in its chunk) or
    ``chunks``: (the dictionary the last batch used, rows read, rows changed, bytes before, bytes
    after)."""
    rows = before = after = 0
    read = 0
    last = -1
    while True:
        with transactions.write_tx(c):
            new_id = _newest_dictionary(c, dicts)
            batch = c.execute(
                f"SELECT id, flags, payload FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
                (last, _RECOMPRESS_BATCH),
            ).fetchall()
            if not batch:
                break
            updates = []
            for mid, flags, payload in batch:
                sealed = table == "messages" and flags & packing.FLAG_SEALED
                if sealed or flags >> packing.DICT_SHIFT == new_id:
                    continue
                try:
                    new_flags, new_payload = packing.recompress(dicts, flags, payload)
                except packing.ROW_ERRORS:
                    continue  # a damaged row stays as it is; reading it names it
                if new_payload != payload:
                    updates.append((new_flags, new_payload, mid))
                    before += len(payload)
                    after += len(new_payload)
            c.executemany(f"UPDATE {table} SET flags = ?, payload = ? WHERE id = ?", updates)
        rows += len(updates)
        read += len(batch)
        last = batch[-1][0]
        if progress is not None:
            progress(done + read, total)
    return new_id, read, rows, before, after


def vacuum(c: Any, path: Path, full: bool = False, checkpointer: Checkpointer | None = None) -> VacuumReport:
    """Seal older messages into chunks, reclaim free pages, then truncate the WAL.

    Sealing (:func:`.chunks.seal_all`) reaches what the keyword index's folds did not, such as a
    database from before schema version 5; the pages it frees are reclaimed with the rest.

    With ``auto_vacuum = INCREMENTAL`` the free pages are moved to the end of the file and cut
    off in place (``PRAGMA incremental_vacuum``): no copy of the database, no extra disk. Otherwise,
    or with ``full``, SQLite's ``VACUUM`` rebuilds the database through a temporary copy and the
    WAL, so it needs up to about twice the database's size free while it runs; it also packs
    pages that rows shrank on (after :func:`recompress`), which the incremental way cannot.
    ``checkpointer``: the connection's background checkpoint, waited for (see
    :func:`.checkpointer.truncate_wal`).
    """
    on_disk = _size(path) + _size(_wal(path))
    sealed = chunks.seal_all(c)
    mode = int(c.execute("PRAGMA auto_vacuum").fetchone()[0])
    page_size = int(c.execute("PRAGMA page_size").fetchone()[0])
    before = int(c.execute("PRAGMA page_count").fetchone()[0])
    free = int(c.execute("PRAGMA freelist_count").fetchone()[0])
    if mode == 2 and not full:
        c.execute("PRAGMA incremental_vacuum").fetchall()
    else:
        c.execute("VACUUM")
    emptied = truncate_wal(c, checkpointer)
    after = int(c.execute("PRAGMA page_count").fetchone()[0])
    return VacuumReport(
        method="incremental" if mode == 2 and not full else "full",
        pages_before=before,
        pages_after=after,
        free_pages_before=free,
        page_size=page_size,
        bytes_before=on_disk,
        bytes_after=_size(path) + _size(_wal(path)),
        wal_busy=not emptied,
        chunks_sealed=sealed,
    )


def backup(c: Any, source: Path, dest: Path, overwrite: bool) -> None:
    """Copy the database to ``dest`` with SQLite's online backup API (one consistent snapshot).

    The copy is made in one step, so it holds one read snapshot while other connections write.
    It is written to an owner-only temporary file beside ``dest`` and renamed over it only once
    complete, so a failed backup (a full disk) leaves an existing ``dest`` as it was.
    """
    import sqlean

    dest = dest.expanduser()
    target = output_target(dest, source)
    try:
        mode: int | None = os.stat(dest).st_mode
    except FileNotFoundError:
        mode = None
    if (mode is not None and not stat.S_ISREG(mode)) or descriptor(dest) is not None:
        raise DestinationExistsError(f"{dest} is not a regular file")
    if mode is not None and not overwrite:
        raise DestinationExistsError(f"{dest} already exists")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = _temporary_beside(target)
    os.close(fd)
    try:
        copy = sqlean.connect(str(temp), isolation_level=None)
        try:
            c.backup(copy)
        finally:
            copy.close()
        # A -wal or -journal left beside the file replaced would be replayed into the copy.
        for suffix in SIDE_SUFFIXES:
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(temp, target)
    except BaseException as exc:
        for suffix in ("", *SIDE_SUFFIXES):
            temp.with_name(temp.name + suffix).unlink(missing_ok=True)
        if isinstance(exc, sqlean.Error):
            raise DatabaseError(f"cannot write the backup {dest}: {exc}") from None
        raise
