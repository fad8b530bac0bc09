"""Appending: one message or a batch becomes rows, their keyword-index queue entries, blob
references and embeddings, in one transaction.

One way in, :func:`append`, run two ways. On the connection's worker thread it does the whole
job: the transaction, then folding a long keyword-index queue when due. On the event loop's
thread (``inline``, through :func:`.calls.run_inline`) it does only the write, and
:func:`fold_if_long` does the fold on the worker when due. Either way one plain message is one
statement: the TEMP trigger below does the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from axio_context.catalog.expiry_sql import live_session
from axio_context.messages import Message, preview_for
from axio_context.tokens import TokenCounter

from . import chunks, indexing
from .blob_refs import add_blob_refs
from .embedding import Embeddings
from .keys import SHIFT, key, now_ms
from .message_rows import EncodedMessage, encode_message
from .transactions import write_tx

__all__ = [
    "Batch",
    "append",
    "batch_of",
    "fold_due",
    "fold_if_long",
    "install_temp_objects",
    "preview_for",
]


class Batch(NamedTuple):
    """What an append writes, prepared before its transaction: encoded messages, their token
    counts, the session's preview."""

    encoded: list[EncodedMessage]
    tokens: list[int]
    preview: tuple[int, str] | None


def batch_of(messages: list[Message], counter: TokenCounter) -> Batch:
    """``messages`` prepared for :func:`append` (the conversation log's and the turn index's)."""
    encoded = [encode_message(m, index=i) for i, m in enumerate(messages)]
    return Batch(encoded, [counter.count(m) for m in messages], preview_for(messages))


def append(
    c: Any,
    session_id: str,
    project: str | None,
    encoded: Sequence[EncodedMessage],
    tokens: Sequence[int],
    preview: tuple[int, str] | None,
    embeddings: Embeddings | None = None,
    *,
    inline: bool = False,
) -> bool:
    """Append a batch, its search index entries and embeddings in one transaction.

    ``inline``: on the event loop's thread (:func:`.calls.run_inline`), so only the write, no
    keyword-index fold. Returns whether a batch left the keyword-index queue long for
    :func:`fold_if_long` to fold on the worker (the worker path folds it itself).
    """
    n = len(encoded)
    if n == 0:
        return False
    now = now_ms()
    if (
        n == 1
        and not encoded[0].blobs
        and encoded[0].extra is None
        and (embeddings is None or not embeddings.rows)
        and not c.in_transaction
    ):
        # The common case, one plain message: one statement whose temp trigger does the whole
        # transaction (see _APPEND_TRIGGER), ~40% cheaper than four statements from Python.
        e = encoded[0]
        text = None if preview is None else preview[1]
        _append_one(c, session_id, project, e, now, tokens[0], text)
        if not inline:
            _maybe_flush(c)
        return False
    with write_tx(c):
        r = c.execute(
            "UPDATE sessions SET next_position = next_position + ?, est_tokens = est_tokens + ?,"
            f" updated_at = ? WHERE id = ? AND {live_session()}"
            " RETURNING sid, next_position - ?, preview_pos, project",
            (n, sum(tokens), now, session_id, now, n),
        ).fetchone()
        if r is None:  # the session's first write: its preview goes in with the row
            text, pos = (None, None) if preview is None else (preview[1], preview[0])
            r = c.execute(
                "INSERT INTO sessions (id, project, created_at, updated_at, next_position, est_tokens,"
                " preview, preview_pos) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " RETURNING sid, 0, preview_pos, project",
                (session_id, project, now, now, n, sum(tokens), text, pos),
            ).fetchone()
        sid, first, preview_pos, session_project = r
        base = key(sid, first)
        c.executemany(
            "INSERT INTO messages (id, role, flags, created_at, tokens, payload) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (base + i, e.role, e.flags, now, t, e.payload)
                for i, (e, t) in enumerate(zip(encoded, tokens, strict=True))
            ],
        )
        extras = [(base + i, e.extra) for i, e in enumerate(encoded) if e.extra is not None]
        if extras:
            c.executemany("INSERT INTO message_extras (id, data) VALUES (?, ?)", extras)
        rows = (
            [(base + i, e.role, e.flags, e.payload) for i, e in enumerate(encoded)]
            if not inline and n >= indexing.FOLD_BATCH
            else ()
        )
        indexing.queue_text(c, range(base, base + n), fold=not inline, rows=rows)
        if embeddings is not None and embeddings.rows:
            indexing.store_embeddings(
                c,
                embeddings.model,
                embeddings.dimension,
                [
                    (base + i, vector, code, sid, session_project, encoded[i].role, now)
                    for i, vector, code in embeddings.rows
                ],
            )
        blobs = [b for e in encoded for b in e.blobs]
        if blobs:
            add_blob_refs(c, blobs)
        if preview is not None and preview_pos is None:
            c.execute(
                "UPDATE sessions SET preview = ?, preview_pos = ? WHERE sid = ?",
                (preview[1], first + preview[0], sid),
            )
        # A batch checks every time, as on the worker path, where it folds in this transaction.
        # Inline, before the commit: a failure after it would make the caller write it again.
        long_queue = inline and indexing.queue_is_long(c)
    return long_queue


def _append_one(
    c: Any,
    session_id: str,
    project: str | None,
    e: EncodedMessage,
    now: int,
    tokens: int,
    preview: str | None,
) -> None:
    """One message in one statement: the temp view's trigger does the rest (_APPEND_TRIGGER)."""
    c.execute(
        "INSERT INTO temp.axio_append VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, project, e.role, e.flags, now, tokens, e.payload, preview),
    )


_appends_since_check = 0


def fold_due() -> bool:
    """Count one append (single or small batch); every 64th in this process checks the keyword-index
    queue."""
    global _appends_since_check
    _appends_since_check += 1
    if _appends_since_check < 64:
        return False
    _appends_since_check = 0
    return True


def _maybe_flush(c: Any) -> None:
    if fold_due():
        fold_if_long(c)


def fold_if_long(c: Any) -> None:
    """Fold the keyword-index queue into the index once it is long; until then, seal the complete
    blocks of the messages it holds (:func:`.chunks.queued_blocks`).

    Runs after an append committed, so a failure (locked, disk full) is not the append's: the
    queue stays, and the next check or keyword search folds it.
    """
    try:
        if indexing.queue_is_long(c):
            with write_tx(c):
                indexing.flush_pending(c)
        elif due := chunks.queued_blocks(c):
            with write_tx(c):
                chunks.seal_after_fold(c, due)
    except Exception:
        return


#: Per-connection objects (TEMP: not part of the database file's schema): appending one message
#: is a single INSERT into this view, and the trigger creates the session row if needed, stores
#: the message at the session's next position, queues it for the keyword index and bumps the
#: session's counters (and sets the preview from the first user message), atomically. A session
#: that has expired is refused (nothing written): the caller's worker path deletes it first.
_APPEND_VIEW: Final = """
CREATE TEMP VIEW IF NOT EXISTS axio_append
    (session_id, project, role, flags, created_at, tokens, payload, preview)
    AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
"""
_APPEND_TRIGGER: Final = f"""
CREATE TEMP TRIGGER IF NOT EXISTS axio_append_row INSTEAD OF INSERT ON axio_append BEGIN
    SELECT RAISE(ABORT, 'axio: the session has expired') FROM sessions
        WHERE id = NEW.session_id AND NOT {live_session(param="NEW.created_at")};
    INSERT INTO sessions (id, project, created_at, updated_at)
        VALUES (NEW.session_id, NEW.project, NEW.created_at, NEW.created_at)
        ON CONFLICT (id) DO NOTHING;
    INSERT INTO messages (id, role, flags, created_at, tokens, payload)
        SELECT (sid << {SHIFT}) | next_position, NEW.role, NEW.flags, NEW.created_at, NEW.tokens, NEW.payload
        FROM sessions WHERE id = NEW.session_id;
    INSERT INTO fts_pending (id)
        SELECT (sid << {SHIFT}) | next_position FROM sessions WHERE id = NEW.session_id;
    UPDATE sessions SET
        next_position = next_position + 1,
        est_tokens = est_tokens + NEW.tokens,
        updated_at = NEW.created_at,
        preview = CASE WHEN preview_pos IS NULL AND NEW.preview IS NOT NULL THEN NEW.preview ELSE preview END,
        preview_pos = CASE WHEN preview_pos IS NULL AND NEW.preview IS NOT NULL THEN next_position
                      ELSE preview_pos END
        WHERE id = NEW.session_id;
END
"""


def install_temp_objects(c: Any) -> None:
    """Create this connection's TEMP objects (when a connection is opened or adopted)."""
    # Reading sqlite_master refreshes this connection's copy of the schema: another process may
    # have created the tables since it was loaded, and the trigger is compiled against it.
    c.execute("SELECT count(*) FROM sqlite_master").fetchone()
    c.execute(_APPEND_VIEW)
    c.execute(_APPEND_TRIGGER)
