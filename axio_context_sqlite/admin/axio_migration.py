"""Migration from axio-context-sqlite (the peer's database file) into this one.

:func:`import_axio` reads the peer's file through :mod:`..store.axio_peer`, compares each session
with ours, and writes through the same helpers as a transcript import
(:mod:`..store.inserting`), with the messages' original times. It runs on a connection's worker
thread like the rest of admin.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from axio_context.codec import encode_content
from axio_context.messages import Message
from axio_context.transcript import SessionHeader, format_time

from ..store import keys, session_rows, sessions, transactions
from ..store.axio_peer import PeerSession, open_peer, peer_sessions
from ..store.catalog import full_row, records
from ..store.inserting import extend_session, insert_session, set_aside, take_totals

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
    peer, has_tokens = open_peer(path)
    added: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    conflicts: list[str] = []
    replaced: list[str] = []
    written = 0
    try:
        peer.execute("BEGIN")
        for _ in peer_sessions(peer, has_tokens, path):  # pass 1: every row decodes
            pass
        for ps in peer_sessions(peer, has_tokens, path):
            existing = session_rows.session_row(c, ps.id)
            if existing is not None:
                ours = _fingerprints(
                    m.message() for m in records(c, full_row(c, ps.id), 0, existing.next_position)
                )
                theirs = _fingerprints(m.message for m in ps.messages)
                if len(theirs) > len(ours) and theirs[: len(ours)] == ours:
                    written += extend_session(
                        c, ps.id, ps.messages, ps.input_tokens, ps.output_tokens
                    )  # it grew in the peer: take its tail and totals
                    updated.append(ps.id)
                    continue
                if theirs == ours[: len(theirs)]:
                    if len(theirs) == len(ours) and take_totals(c, ps.id, ps.input_tokens, ps.output_tokens):
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
    finally:
        peer.close()
    return AxioImportReport(added, updated, unchanged, conflicts, replaced, written)


def _peer_header(ps: PeerSession) -> SessionHeader:
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
