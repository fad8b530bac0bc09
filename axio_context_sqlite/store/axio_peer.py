"""Reading axio-context-sqlite's database file (the peer's), for the axio migration.

The peer keeps one row per message (``axio_context_messages``: JSON content, gzip+base64 or
plain) and token totals per session and project (``axio_context_tokens``). Every value is
checked as it is read (types, UTF-8, ranges), naming the peer's file, session and position.
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
from axio_context.messages import SURROGATE, Message
from axio_context.transcript import parse_time
from axio_context.usage import MAX_TOKENS

from ..errors import translate_error
from .inserting import Stamped
from .message_rows import ROLE_NAMES

__all__ = ["PeerSession", "open_peer", "peer_sessions"]


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
    if type(value) is not int or not 0 <= value <= MAX_TOKENS:
        raise DecodeError(f"{where}: {value!r} is not a token total (a whole number 0..{MAX_TOKENS})")
    return value


def _read(peer: Any, path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    """Rows of a query on the peer; a failure names the peer's file, not this database."""
    import sqlean

    try:
        return list(peer.execute(sql, args).fetchall())
    except sqlean.Error as exc:
        raise translate_error(exc, str(path)) from None


class PeerSession(msgspec.Struct):
    id: str
    project: str | None
    messages: list[Stamped]
    input_tokens: int
    output_tokens: int
    metadata: dict[str, Any] | None


def open_peer(path: Path) -> tuple[Any, bool]:
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


def peer_sessions(peer: Any, has_tokens: bool, path: Path) -> Iterator[PeerSession]:
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
        yield PeerSession(session_id, project, messages, tin, tout, extra or None)
