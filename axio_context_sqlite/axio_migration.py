"""Migration from axio-context-sqlite (the peer's database file) into this one.

The peer keeps one row per message (``axio_context_messages``: JSON content, gzip+base64 or
plain) and token totals per session and project (``axio_context_tokens``). :func:`import_axio`
runs on a connection's worker thread like :mod:`.admin`, and writes sessions through the same
helpers as a transcript import, with the messages' original times.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from axio_context.codec import decode_content_json
from axio_context.errors import DecodeError, NotAnAxioDatabaseError
from axio_context.messages import Message
from axio_context.transcript import SessionHeader, format_time

from . import appending, ops
from .admin import (
    AxioImportReport,
    _full,
    _insert_messages,
    _insert_session,
    _records,
    _set_aside,
    _Stamped,
)
from .storage import ROLE_NAMES

__all__ = ["import_axio"]


def _peer_payload(text: str) -> bytes:
    """axio-context-sqlite's content column: ``gzip:``+base64, ``plain:``, or bare JSON."""
    if text.startswith("gzip:"):
        return gzip.decompress(base64.b64decode(text[5:], validate=True))
    if text.startswith("plain:"):
        return text[6:].encode()
    return text.encode()


def _peer_time(text: str | None) -> int:
    """SQLite ``datetime('now')`` text (UTC, no offset) to milliseconds."""
    if not text:
        raise DecodeError("missing created_at")
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return int(value.timestamp() * 1000)


class _PeerSession(msgspec.Struct):
    id: str
    project: str | None
    messages: list[_Stamped]
    input_tokens: int
    output_tokens: int
    metadata: dict[str, Any] | None


def _open_peer(path: Path) -> tuple[Any, bool]:
    import sqlean

    if not path.is_file():
        from axio_context.errors import DatabaseNotFoundError

        raise DatabaseNotFoundError(f"no axio database at {path}")
    peer = sqlean.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None)
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
    """Every session of the peer database: those with messages (oldest first), then token-only ones."""
    tokens: dict[str, list[tuple[str, int, int]]] = {}
    if has_tokens:
        for sid, project, tin, tout in peer.execute(
            "SELECT session_id, project, input_tokens, output_tokens FROM axio_context_tokens ORDER BY rowid"
        ):
            tokens.setdefault(sid, []).append((project, int(tin), int(tout)))
    ids = [
        r[0]
        for r in peer.execute(
            "SELECT session_id FROM axio_context_messages GROUP BY session_id ORDER BY MIN(id)"
        ).fetchall()
    ]
    with_messages = set(ids)
    ids += [i for i in tokens if i not in with_messages]
    for session_id in ids:
        rows = peer.execute(
            "SELECT position, role, project, content, created_at FROM axio_context_messages"
            " WHERE session_id = ? ORDER BY position",
            (session_id,),
        ).fetchall()
        messages: list[_Stamped] = []
        projects: list[str] = []
        for position, role, project, content, created in rows:
            where = f"{path}: session {session_id!r} position {position}"
            if role not in ROLE_NAMES:
                raise DecodeError(f"{where}: unknown role {role!r}")
            try:
                blocks = decode_content_json(_peer_payload(content))
                stamp = _peer_time(created)
            except (DecodeError, ValueError, OSError, EOFError, binascii.Error, zlib.error) as exc:
                raise DecodeError(f"{where}: {exc}") from None
            messages.append(_Stamped(Message(role=role, content=blocks), stamp))
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


def import_axio(c: Any, path: Path, replace: bool) -> AxioImportReport:
    """Migrate an axio-context-sqlite database; re-running it adds only what is new.

    The peer file is opened read-only and read in one snapshot. Every session is decoded first
    (a bad row stops the migration before anything is written), then each session is written
    in its own transaction: new sessions are added with their messages' original times;
    sessions migrated before get the messages appended since; a session whose transcript here
    diverged is reported as a conflict and left alone unless ``replace``.
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
            existing = ops._session(c, ps.id)
            if existing is not None:
                ours = [m.message() for m in _records(c, _full(c, ps.id), 0, existing.next_position)]
                theirs = [m.message for m in ps.messages]
                same_tokens = (ps.input_tokens, ps.output_tokens) == ops.get_tokens(c, ps.id)
                if ours == theirs[: len(ours)] and (len(ours) < len(theirs) or not same_tokens):
                    written += _extend(c, ps)
                    updated.append(ps.id)
                    continue
                if theirs == ours[: len(theirs)]:
                    unchanged.append(ps.id)  # already migrated, or continued here since
                    continue
                if not replace:
                    conflicts.append(ps.id)
                    continue
            header = _peer_header(ps)
            with ops.write_tx(c):
                aside = _set_aside(c, ps.id)
                _insert_session(c, header, ps.id, None, ps.messages)
            if aside is not None:
                ops.delete_session(c, aside)
                replaced.append(ps.id)
            else:
                added.append(ps.id)
            written += len(ps.messages)
            appending.train_if_due(c)
    finally:
        peer.close()
    return AxioImportReport(added, updated, unchanged, conflicts, replaced, written)


def _extend(c: Any, ps: _PeerSession) -> int:
    """Append the messages a migrated session gained since, and take its token totals."""
    with ops.write_tx(c):
        row = ops._session(c, ps.id)
        assert row is not None
        tail = ps.messages[row.next_position :]
        spent = _insert_messages(c, row.sid, row.next_position, tail) if tail else 0
        if c.execute("SELECT preview_pos FROM sessions WHERE sid = ?", (row.sid,)).fetchone()[0] is None:
            pv = appending.preview_for([m.message for m in tail], row.next_position)
            if pv is not None:
                c.execute(
                    "UPDATE sessions SET preview = ?, preview_pos = ? WHERE sid = ?", (pv[1], pv[0], row.sid)
                )
        last = max((m.created_ms for m in tail), default=0)
        c.execute(
            "UPDATE sessions SET next_position = ?, est_tokens = est_tokens + ?, input_tokens = ?,"
            " output_tokens = ?, updated_at = MAX(updated_at, ?) WHERE sid = ?",
            (row.next_position + len(tail), spent, ps.input_tokens, ps.output_tokens, last, row.sid),
        )
    return len(tail)


def _peer_header(ps: _PeerSession) -> SessionHeader:
    times = [m.created_ms for m in ps.messages] or [ops.now_ms()]
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
