"""Writing whole sessions with their original times: what ``import`` and the axio migration
write (:func:`.appending.append` stamps rows with the current time). Runs inside the caller's
write transaction, on the connection's worker thread.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Sequence
from typing import Any, Final

import msgspec

from axio_context.codec import encode_messages_msgpack
from axio_context.errors import TranscriptError
from axio_context.messages import Message
from axio_context.tokens import estimate_message_tokens, estimate_tokens
from axio_context.transcript import CheckpointRecord, SessionHeader, parse_time

from . import appending, blob_refs, indexing, session_rows, sessions, transactions
from .keys import key
from .message_rows import encode_message

#: Messages encoded and inserted per statement batch (bounds an import's memory).
BATCH: Final = 256


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
    encoded = [encode_message(m.message, text=True) for m in batch]
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
    # The replacement takes over its links (it is deleted once the replacement is in).
    c.execute(
        "UPDATE sessions SET id = ?, owner_id = NULL, agent_name = NULL WHERE sid = ?", (aside, row.sid)
    )
    c.execute("DELETE FROM agent_sessions WHERE sid = ?", (row.sid,))
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
    owner_new_id: str | None = None,
) -> int:
    """Insert a whole session with its original times (inside the caller's transaction);
    ``owner_new_id``: its owner's id here (a subagent's history), as the import mapped it."""
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
    _link(c, sid, header, owner_new_id)
    return position


def _link(c: Any, sid: int, header: SessionHeader, owner_id: str | None) -> None:
    """The session's links as exported: a subagent's owner and name, an agent's (agent, thread).
    A link the database already gives another session is left out (the session stays, plain)."""
    if owner_id is not None and header.agent_name is not None:
        c.execute(
            "UPDATE OR IGNORE sessions SET owner_id = ?, agent_name = ? WHERE sid = ?",
            (owner_id, header.agent_name, sid),
        )
    if header.agent_id is not None and header.thread_id is not None:
        c.execute(
            "INSERT OR IGNORE INTO agent_sessions (sid, agent_id, thread_id) VALUES (?, ?, ?)",
            (sid, header.agent_id, header.thread_id),
        )


def _batches(items: Iterable[Stamped], size: int) -> Iterator[list[Stamped]]:
    batch: list[Stamped] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def take_totals(c: Any, session_id: str, input_tokens: int, output_tokens: int) -> bool:
    """Take the given token totals if they are ahead of the session's in both counts (and differ)."""
    with transactions.write_tx(c):
        done = c.execute(
            "UPDATE sessions SET input_tokens = :i, output_tokens = :o WHERE id = :id"
            " AND input_tokens <= :i AND output_tokens <= :o"
            " AND (input_tokens, output_tokens) IS NOT (:i, :o)",
            {"i": input_tokens, "o": output_tokens, "id": session_id},
        )
        return bool(done.rowcount)


def extend_session(
    c: Any, session_id: str, messages: Sequence[Stamped], input_tokens: int, output_tokens: int
) -> int:
    """Append the messages of ``messages`` past the session's end, and take the token totals where
    they are ahead (totals only grow: one counted on here past the given ones is kept)."""
    with transactions.write_tx(c):
        row = session_rows.session_row(c, session_id)
        assert row is not None
        tail = messages[row.next_position :]
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
            (row.next_position + len(tail), spent, input_tokens, output_tokens, last, row.sid),
        )
    return len(tail)
