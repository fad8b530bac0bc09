"""Migration from axio-context-sqlite (the peer's database file) into this one.

The peer keeps one row per message (``axio_context_messages``: JSON content, gzip+base64 or
plain) and token totals per session and project (``axio_context_tokens``). :func:`import_axio`
runs on a connection's worker thread like the rest of admin, and writes sessions through the same
helpers as a transcript import, with the messages' original times.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from axio_context.codec import decode_content_json, encode_content
from axio_context.errors import DecodeError, NotAnAxioDatabaseError
from axio_context.messages import SURROGATE, Message
from axio_context.transcript import SessionHeader, format_time, parse_time

from ..errors import translate_error
from ..store import appending, keys, session_rows, sessions, transactions
from ..store.message_rows import ROLE_NAMES
from .importing import Stamped, insert_messages, insert_session, set_aside
from .sessions import full_row, records

__all__ = ["AxioImportReport", "import_axio"]


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


def _peer_payload(text: str) -> bytes:
    """axio-context-sqlite's content column: ``gzip:``+base64, ``plain:``, or bare JSON."""
    if text.startswith("gzip:"):
        return gzip.decompress(base64.b64decode(text[5:], validate=True))
    if text.startswith("plain:"):
        return text[6:].encode()
    return text.encode()


def _peer_time(text: object) -> int:
    """SQLite ``datetime('now')`` text (UTC, no offset) to milliseconds (years 1..9999 in UTC)."""
    if not text or not isinstance(text, str):
        raise DecodeError(f"created_at {text!r} is not a time")
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return parse_time(value.isoformat())


#: The largest token total a column holds (SQLite's INTEGER is 64-bit).
_MAX_TOKENS = (1 << 63) - 1
_SQL_TYPES = {bytes: "a BLOB", int: "an INTEGER", float: "a REAL", type(None): "NULL"}


def _lenient_text(data: bytes) -> str:
    """The peer's text factory: invalid UTF-8 comes back as lone surrogates, which
    :func:`_text` then refuses naming the row (a strict read fails naming no row, or no file)."""
    return data.decode("utf-8", "surrogateescape")


def _text(value: object, where: str, column: str) -> str:
    """A peer TEXT value, refused when SQLite holds something else there or invalid UTF-8."""
    if not isinstance(value, str):
        kind = _SQL_TYPES.get(type(value), type(value).__name__)
        raise DecodeError(f"{where}: {column} is {kind}, not text")
    if not value.isascii() and SURROGATE.search(value):
        raise DecodeError(f"{where}: {column} is not valid UTF-8")
    return value


def _session_id(value: object, where: str) -> str:
    session_id = _text(value, where, "session_id")
    if not session_id:
        raise DecodeError(f"{where}: a session id must not be empty")
    return session_id


def _token_total(value: object, where: str) -> int:
    """A peer token total: SQLite keeps text or a too-large REAL in an INTEGER column as it is."""
    if type(value) is not int or not 0 <= value <= _MAX_TOKENS:
        raise DecodeError(f"{where}: {value!r} is not a token total (a whole number 0..{_MAX_TOKENS})")
    return value


def _read(peer: Any, path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    """Rows of a query on the peer; a failure names the peer's file, not this database."""
    import sqlean

    try:
        return list(peer.execute(sql, args).fetchall())
    except sqlean.Error as exc:
        raise translate_error(exc, str(path)) from None


class _PeerSession(msgspec.Struct):
    id: str
    project: str | None
    messages: list[Stamped]
    input_tokens: int
    output_tokens: int
    metadata: dict[str, Any] | None


def _open_peer(path: Path) -> tuple[Any, bool]:
    import sqlean

    if not path.is_file():
        from axio_context.errors import DatabaseNotFoundError

        raise DatabaseNotFoundError(f"no axio database at {path}")
    peer = sqlean.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
    peer.text_factory = _lenient_text
    try:
        tables = {
            r[0] for r in peer.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        }
    except Exception as exc:
        peer.close()
        raise NotAnAxioDatabaseError(f"{path} is not an SQLite database ({exc})") from None
    if "axio_context_messages" not in tables:
        peer.close()
        raise NotAnAxioDatabaseError(
            f"{path} has no axio_context_messages table: not a database written by axio-context-sqlite"
        )
    return peer, "axio_context_tokens" in tables


def _peer_sessions(peer: Any, has_tokens: bool, path: Path) -> Iterator[_PeerSession]:
    """Every session of the peer database: those with messages (oldest first), then token-only ones.

    Every value is checked here (types, UTF-8, ranges), so that the first pass over them finds
    any bad row before anything is written; the errors name the peer file, session and position.
    """
    tokens: dict[str, list[tuple[str, int, int]]] = {}
    if has_tokens:
        for sid, project, tin, tout in _read(
            peer,
            path,
            "SELECT session_id, project, input_tokens, output_tokens FROM axio_context_tokens ORDER BY rowid",
        ):
            where = f"{path}: axio_context_tokens row of session {sid!r} project {project!r}"
            tokens.setdefault(_session_id(sid, where), []).append(
                (
                    _text(project, where, "project"),
                    _token_total(tin, f"{where}: input_tokens"),
                    _token_total(tout, f"{where}: output_tokens"),
                )
            )
    ids = [
        _session_id(r[0], f"{path}: session {r[0]!r} position {r[1]}")
        for r in _read(
            peer,
            path,
            "SELECT session_id, MIN(position) FROM axio_context_messages"
            " GROUP BY session_id ORDER BY MIN(id)",
        )
    ]
    with_messages = set(ids)
    ids += [i for i in tokens if i not in with_messages]
    for session_id in ids:
        rows = _read(
            peer,
            path,
            "SELECT position, role, project, content, created_at FROM axio_context_messages"
            " WHERE session_id = ? ORDER BY position",
            (session_id,),
        )
        messages: list[Stamped] = []
        projects: list[str] = []
        for position, role, project, content, created in rows:
            where = f"{path}: session {session_id!r} position {position}"
            if role not in ROLE_NAMES:
                raise DecodeError(f"{where}: unknown role {role!r}")
            project = _text(project, where, "project")
            content = _text(content, where, "content")
            try:
                blocks = decode_content_json(_peer_payload(content))
                stamp = _peer_time(created)
            except (DecodeError, ValueError, OSError, EOFError, binascii.Error, zlib.error) as exc:
                raise DecodeError(f"{where}: {exc}") from None
            messages.append(Stamped(Message(role=role, content=blocks), stamp))
            if project not in projects:
                projects.append(project)
        own_tokens = tokens.get(session_id, [])
        project = projects[0] if projects else (own_tokens[0][0] if own_tokens else None)
        tin = tout = 0
        extra: dict[str, Any] = {}
        others: dict[str, list[int]] = {}
        for p, a, b in own_tokens:
            if p == project:
                tin, tout = a, b
            else:
                others[p] = [a, b]
        if len(projects) > 1:
            extra["axio_projects"] = projects
        if others:
            extra["axio_tokens_by_project"] = others
        yield _PeerSession(session_id, project, messages, tin, tout, extra or None)


def _fingerprints(messages: Iterable[Message]) -> list[tuple[str, bytes]]:
    """Each message as its role and encoded content, to compare exactly: ``Message ==`` finds a
    NaN in a tool's input unequal to itself (and ``1 == 1.0``); the encoded bytes do not."""
    return [(m.role, encode_content(m.content)) for m in messages]


def import_axio(c: Any, path: Path, replace: bool) -> AxioImportReport:
    """Migrate an axio-context-sqlite database; re-running it adds only what is new.

    The peer file is opened read-only and read in one snapshot. Every session is decoded first
    (a bad row stops the migration before anything is written), then each session is written
    in its own transaction: new sessions are added with their messages' original times;
    sessions migrated before get the messages appended since; a session whose transcript here
    diverged is reported as a conflict and left alone unless ``replace``.

    Token totals only grow, so a session migrated before takes each of the peer's totals that is
    ahead of its own here: when its transcript there grew (``updated``, with its new messages),
    and, with the same transcript on both sides, when both of the peer's are ahead (the peer
    kept counting; a session holding only totals is such a case; also ``updated``). A total
    counted on here past the peer's is kept.
    """
    peer, has_tokens = _open_peer(path)
    added: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    conflicts: list[str] = []
    replaced: list[str] = []
    written = 0
    try:
        peer.execute("BEGIN")
        for _ in _peer_sessions(peer, has_tokens, path):  # pass 1: every row decodes
            pass
        for ps in _peer_sessions(peer, has_tokens, path):
            existing = session_rows.session_row(c, ps.id)
            if existing is not None:
                ours = _fingerprints(
                    m.message() for m in records(c, full_row(c, ps.id), 0, existing.next_position)
                )
                theirs = _fingerprints(m.message for m in ps.messages)
                if len(theirs) > len(ours) and theirs[: len(ours)] == ours:
                    written += _extend(c, ps)  # it grew in the peer: take its tail and totals
                    updated.append(ps.id)
                    continue
                if theirs == ours[: len(theirs)]:
                    if len(theirs) == len(ours) and _take_totals(c, ps):
                        updated.append(ps.id)  # the same transcript, the peer counted on
                    else:
                        unchanged.append(ps.id)  # already migrated, or continued here since
                    continue
                if not replace:
                    conflicts.append(ps.id)
                    continue
            header = _peer_header(ps)
            with transactions.write_tx(c):
                aside = set_aside(c, ps.id)
                insert_session(c, header, ps.id, None, ps.messages)
            if aside is not None:
                sessions.delete_session(c, aside)
                replaced.append(ps.id)
            else:
                added.append(ps.id)
            written += len(ps.messages)
            appending.train_if_due(c)
    finally:
        peer.close()
    return AxioImportReport(added, updated, unchanged, conflicts, replaced, written)


def _take_totals(c: Any, ps: _PeerSession) -> bool:
    """Take the peer's token totals if they are ahead of these in both counts (and differ)."""
    with transactions.write_tx(c):
        done = c.execute(
            "UPDATE sessions SET input_tokens = :i, output_tokens = :o WHERE id = :id"
            " AND input_tokens <= :i AND output_tokens <= :o"
            " AND (input_tokens, output_tokens) IS NOT (:i, :o)",
            {"i": ps.input_tokens, "o": ps.output_tokens, "id": ps.id},
        )
        return bool(done.rowcount)


def _extend(c: Any, ps: _PeerSession) -> int:
    """Append the messages a migrated session gained since, and take its token totals where they
    are ahead (totals only grow: one counted on here past the peer's is kept)."""
    with transactions.write_tx(c):
        row = session_rows.session_row(c, ps.id)
        assert row is not None
        tail = ps.messages[row.next_position :]
        spent = insert_messages(c, row.sid, row.next_position, tail) if tail else 0
        if c.execute("SELECT preview_pos FROM sessions WHERE sid = ?", (row.sid,)).fetchone()[0] is None:
            pv = appending.preview_for([m.message for m in tail], row.next_position)
            if pv is not None:
                c.execute(
                    "UPDATE sessions SET preview = ?, preview_pos = ? WHERE sid = ?", (pv[1], pv[0], row.sid)
                )
        last = max((m.created_ms for m in tail), default=0)
        c.execute(
            "UPDATE sessions SET next_position = ?, est_tokens = est_tokens + ?,"
            " input_tokens = MAX(input_tokens, ?), output_tokens = MAX(output_tokens, ?),"
            " updated_at = MAX(updated_at, ?) WHERE sid = ?",
            (row.next_position + len(tail), spent, ps.input_tokens, ps.output_tokens, last, row.sid),
        )
    return len(tail)


def _peer_header(ps: _PeerSession) -> SessionHeader:
    times = [m.created_ms for m in ps.messages] or [keys.now_ms()]
    return SessionHeader(
        id=ps.id,
        project=ps.project,
        metadata=ps.metadata,
        created_at=format_time(min(times)),
        updated_at=format_time(max(times)),
        message_count=len(ps.messages),
        input_tokens=ps.input_tokens,
        output_tokens=ps.output_tokens,
    )
