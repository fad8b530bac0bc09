"""Keeping the search indexes in step with the messages table, inside the caller's transaction.

Every function here runs inside a write transaction that :mod:`.appending`, :mod:`.ops` or
:mod:`.admin` opened (on the worker thread, or the event loop's for an inline append's queue
entries), so a message and its index entries commit together:

- ``messages_fts`` (FTS5, contentless): one row per message with text, rowid = message id;
  removed by feeding FTS5 the text again (see :func:`delete_index`). New messages first go to
  the ``fts_pending`` queue, committed with the message, and are folded into the index before
  a keyword search, or by an append once :data:`FLUSH_AT` are waiting (:func:`flush_pending`).
  Indexing inline would more than double an append's cost: FTS5 writes a new index segment per
  transaction (~100 us here) and tokenizing a message with Porter stemming costs ~40 us more.
- ``message_vectors``: one embedding per embedded message, int8 (see :mod:`.vec`; float32 in
  databases written before, until ``reindex`` converts them).
- ``message_codes`` (sqlite-vec ``vec0``, only where the extension runs): a binary code per
  embedded message for a fast coarse KNN, with the filter columns search uses (session, role,
  time). Its width depends on the embedding dimension, so it is created with the first
  embedding rather than in ``schema.sql``. Tables made before also held the session's project,
  which no search read (see :func:`codes_outdated`); ``reindex`` rebuilds them. A connection
  without sqlite-vec cannot touch it; when such a connection deletes messages it marks the codes
  stale (``settings.codes_stale``) and search falls back to the exact scan until ``reindex``
  rebuilds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from axio_context.blocks import ProviderBlock
from axio_context.codec import decode_content
from axio_context.errors import EmbeddingMismatchError
from axio_context.messages import Message, text_columns

from . import chunks, packing
from .keys import POSITION_MASK, key, position_of
from .message_rows import ROLE_NAMES
from .packing import ROW_ERRORS, inflate
from .vec import code_bits, load_deferred

__all__ = [
    "CODES_TABLE",
    "FLUSH_AT",
    "FOLD_BATCH",
    "EmbeddingRow",
    "codes_outdated",
    "codes_table_exists",
    "copy_index",
    "delete_index",
    "ensure_embedding_settings",
    "flush_pending",
    "index_all_messages",
    "index_text",
    "insert_codes",
    "queue_is_long",
    "queue_text",
    "reindex_provider_text",
    "row_text",
    "store_embeddings",
    "text_of",
    "vec_available",
]

CODES_TABLE: Final = "message_codes"

#: (message id, int8 BLOB (:func:`.vec.quantize`), binary code or None, sid, project, role code,
#: created_at ms)
EmbeddingRow = tuple[int, bytes, bytes | None, int, str | None, int, int]


#: Queue length at which an append folds the queue into the FTS index itself. Searches fold it
#: first anyway; this only bounds how much work one search (or one unlucky append: ~40 ms of
#: tokenizing here) can inherit, while keeping FTS5's per-transaction segment cost off appends.
FLUSH_AT: Final = 1024


def index_text(c: Any, rows: Sequence[tuple[int, str, str]]) -> None:
    """Index ``(message id, body, tool)`` now; messages without any text get no FTS row."""
    wanted = [r for r in rows if r[1] or r[2]]
    if wanted:
        c.executemany("INSERT INTO messages_fts (rowid, body, tool) VALUES (?, ?, ?)", wanted)


#: A batch of at least this many messages folds the queue (itself included) in its own
#: transaction: FTS5's per-transaction cost is then shared by enough messages to be noise, and a
#: bulk load or import leaves nothing for a later single append or search to inherit.
FOLD_BATCH: Final = 64


def queue_text(
    c: Any, ids: Sequence[int], *, fold: bool = True, rows: Sequence[tuple[int, int, int, bytes]] = ()
) -> None:
    """Queue new messages for the keyword index (same transaction as the messages); with ``fold``,
    fold the queue in too when the batch is big or the queue long. ``rows``: the batch's
    ``(id, role, flags, payload)`` as just written; a batch big enough to fold is then indexed
    from them and never queued (no queue rows to insert, join back and delete)."""
    if fold and rows and len(ids) >= FOLD_BATCH:
        flush_pending(c, rows)
        return
    c.executemany("INSERT OR IGNORE INTO fts_pending (id) VALUES (?)", [(i,) for i in ids])
    if fold and (len(ids) >= FOLD_BATCH or queue_is_long(c)):
        flush_pending(c)


def queue_is_long(c: Any) -> bool:
    """Whether the queue holds :data:`FLUSH_AT` messages or more (time to fold it)."""
    return bool(c.execute("SELECT count(*) FROM fts_pending").fetchone()[0] >= FLUSH_AT)


def flush_pending(c: Any, batch: Sequence[tuple[int, int, int, bytes]] = ()) -> int:
    """Fold every queued message, and the ``batch`` of ``(id, role, flags, payload)`` rows not
    queued, into the FTS index (inside the caller's write transaction), then seal the complete
    blocks of older messages around them (:func:`.chunks.seal_after_fold`)."""
    rows = c.execute(
        "SELECT m.id, m.role, m.flags, m.payload FROM fts_pending p JOIN messages m ON m.id = p.id"
        " ORDER BY m.id"
    ).fetchall()
    if batch:
        own = {r[0] for r in batch}  # a queue entry under a batch id would index its row twice
        rows = [r for r in rows if r[0] not in own]
        rows = [*rows, *batch] if not rows else sorted([*rows, *batch])
    plain = _index_rows(c, rows)
    c.execute("DELETE FROM fts_pending")
    chunks.seal_after_fold(c, (r[0] for r in rows), plain)
    return len(rows)


def _index_rows(
    c: Any, rows: Sequence[tuple[int, int, int, bytes]], *, provider_text: bool = True
) -> dict[int, bytes]:
    """Index stored ``(id, role, flags, payload)`` rows; a damaged row stays unindexed (reading
    it reports CorruptDataError). Returns the MessagePack of the rows it read (by id), for
    sealing them without decompressing them again."""
    entries = []
    plain: dict[int, bytes] = {}
    reader = chunks.Reader(c)
    for mid, role, flags, payload in rows:
        try:
            data = plain[mid] = reader.plain(mid, flags, payload)
            message = _message(role, data)
        except ROW_ERRORS:
            continue
        if not provider_text:  # the text as versions before message_extras extracted it
            message = _without_provider_blocks(message)
        entries.append((mid, *text_columns(message)))  # outside the try: it never raises
    index_text(c, entries)
    return plain


def row_text(role: int, flags: int, payload: bytes) -> tuple[str, str]:
    """The (body, tool) text of a stored row, without restoring its media."""
    return text_of(role, inflate(flags, payload))


def text_of(role: int, data: bytes) -> tuple[str, str]:
    """The (body, tool) text of a message with role code ``role`` and content MessagePack ``data``."""
    return text_columns(_message(role, data))


def _message(role: int, data: bytes) -> Message:
    """The message of a row's role code and content MessagePack (without its media); raises a
    ROW_ERRORS error when the row is damaged. Its text then always extracts
    (:func:`.messages.text_columns` never raises), so a damaged row is the only kind skipped."""
    return Message(role=ROLE_NAMES[role], content=decode_content(data))


def vec_available(c: Any) -> bool:
    """Whether sqlite-vec is loaded on this connection (loaded now if its open deferred it)."""
    try:
        c.execute("SELECT vec_version()").fetchone()
    except Exception:
        return load_deferred(c)
    return True


def codes_table_exists(c: Any) -> bool:
    return (
        c.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (CODES_TABLE,)).fetchone()
        is not None
    )


def _setting(c: Any, key: str) -> str | None:
    r = c.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
    return None if r is None else str(r[0])


def _set(c: Any, key: str, value: str) -> None:
    c.execute(
        "INSERT INTO settings (key, value) VALUES (?, ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def ensure_embedding_settings(c: Any, model: str, dimension: int) -> None:
    """Record the embedder on first use; refuse vectors from a different model or dimension."""
    stored_model = _setting(c, "embedding_model")
    stored_dim = _setting(c, "embedding_dimension")
    if stored_model is None:
        _set(c, "embedding_model", model)
        _set(c, "embedding_dimension", str(dimension))
        return
    if stored_model != model or stored_dim != str(dimension):
        raise EmbeddingMismatchError(
            f"this database's embeddings come from {stored_model!r} ({stored_dim} dimensions); "
            f"refusing vectors from {model!r} ({dimension} dimensions). Use the same embedder, "
            "or re-embed the database with `reindex --rebuild`"
        )


def ensure_codes_table(c: Any, dimension: int) -> None:
    c.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {CODES_TABLE} USING vec0("
        f"sid integer, role integer, created_at integer, code bit[{code_bits(dimension)}])"
    )


def codes_outdated(c: Any) -> bool:
    """Whether the codes table has the layout of older databases, with a ``project`` column.

    No search read it (a project is filtered by its sessions, see :mod:`..search.semantic`),
    yet vec0 keeps a text column longer than 12 bytes in a side table with its own index: 6.4
    of the 26 MB the codes took at 100,000 messages. ``reindex`` rebuilds such a table.
    """
    row = c.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (CODES_TABLE,)
    ).fetchone()
    return row is not None and " project text" in str(row[0])


def insert_codes(c: Any, rows: Sequence[tuple[int, int, str | None, int, int, bytes]]) -> None:
    """Insert ``(rowid, sid, project, role, created_at, code)`` rows into the codes table, in
    either layout (the project is kept only by an outdated table, until ``reindex``)."""
    if not rows:
        return
    if codes_outdated(c):
        c.executemany(
            f"INSERT INTO {CODES_TABLE} (rowid, sid, project, role, created_at, code)"
            " VALUES (?, ?, ?, ?, ?, vec_bit(?))",
            [(mid, sid, project or "", role, ts, code) for mid, sid, project, role, ts, code in rows],
        )
        return
    c.executemany(
        f"INSERT INTO {CODES_TABLE} (rowid, sid, role, created_at, code) VALUES (?, ?, ?, ?, vec_bit(?))",
        [(mid, sid, role, ts, code) for mid, sid, _, role, ts, code in rows],
    )


def store_embeddings(c: Any, model: str, dimension: int, rows: Sequence[EmbeddingRow]) -> None:
    """Store embeddings (and their codes, when given and sqlite-vec runs here)."""
    if not rows:
        return
    ensure_embedding_settings(c, model, dimension)
    for r in rows:
        if len(r[1]) != dimension:
            raise EmbeddingMismatchError(
                f"an embedding of {len(r[1])} int8 values does not fit this database's {dimension} dimensions"
            )
    c.executemany(
        "INSERT INTO message_vectors (id, embedding) VALUES (?, ?)"
        " ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding",
        [(r[0], r[1]) for r in rows],
    )
    coded = [r for r in rows if r[2] is not None]
    stored = 0
    if coded and vec_available(c):
        ensure_codes_table(c, dimension)
        c.executemany(f"DELETE FROM {CODES_TABLE} WHERE rowid = ?", [(r[0],) for r in coded])
        insert_codes(c, [(r[0], r[3], r[4], r[5], r[6], r[2]) for r in coded if r[2] is not None])
        stored = len(coded)
    if stored < len(rows):
        # Vectors without codes: even where no codes table exists yet, since one created later
        # (by a connection with sqlite-vec) would silently lack them.
        _set(c, "codes_stale", "1")


def delete_index(c: Any, lo_key: int, hi_key: int) -> None:
    """Drop index entries of message ids in ``[lo_key, hi_key)``; call before deleting the rows.

    A contentless FTS5 row is removed by handing FTS5 the exact text it indexed, which is
    re-extracted from the payload (the extraction is deterministic; changing it needs a
    migration that rebuilds the index). Only rows the index holds are handed over: feeding it
    text it never indexed would corrupt it, and a row an earlier version could not extract text
    from (a tool input with a ``None`` key) was left out of it.
    """
    rows = c.execute(
        "SELECT id, role, flags, payload FROM messages WHERE id IN"
        " (SELECT rowid FROM messages_fts WHERE rowid >= ? AND rowid < ?) ORDER BY id",
        (lo_key, hi_key),
    ).fetchall()
    c.execute("DELETE FROM fts_pending WHERE id >= ? AND id < ?", (lo_key, hi_key))
    entries = []
    reader = chunks.Reader(c)
    for mid, role, flags, payload in rows:
        try:
            body, tool = text_of(role, reader.plain(mid, flags, payload))
        except ROW_ERRORS:
            continue  # never indexed (see index_all_messages) or unreadable: nothing to remove
        if body or tool:
            entries.append((mid, body, tool))
    if entries:
        c.executemany(
            "INSERT INTO messages_fts (messages_fts, rowid, body, tool) VALUES ('delete', ?, ?, ?)", entries
        )
    c.execute("DELETE FROM message_vectors WHERE id >= ? AND id < ?", (lo_key, hi_key))
    if codes_table_exists(c):
        if vec_available(c):
            c.execute(f"DELETE FROM {CODES_TABLE} WHERE rowid >= ? AND rowid < ?", (lo_key, hi_key))
        else:
            _set(c, "codes_stale", "1")


def copy_index(c: Any, lo_key: int, hi_key: int, dest_sid: int, dest_project: str | None) -> None:
    """Index copies of the rows ``[lo_key, hi_key)`` made under session ``dest_sid``."""
    base = key(dest_sid, 0)
    rows = c.execute(
        "SELECT id, role, flags, payload FROM messages WHERE id >= ? AND id < ?", (lo_key, hi_key)
    ).fetchall()
    reader = chunks.Reader(c)
    entries = []
    for mid, role, flags, payload in rows:
        try:
            message = _message(role, reader.plain(mid, flags, payload))
        except ROW_ERRORS:
            continue  # a damaged row stays unindexed in the copy too, reported by name when read
        entries.append((base + position_of(mid), *text_columns(message)))
    index_text(c, entries)
    c.execute(
        "INSERT INTO message_vectors (id, embedding) SELECT ? + (id & ?), embedding FROM message_vectors"
        " WHERE id >= ? AND id < ?",
        (base, POSITION_MASK, lo_key, hi_key),
    )
    if codes_table_exists(c):
        if vec_available(c):
            codes = c.execute(
                f"SELECT rowid, role, created_at, code FROM {CODES_TABLE} WHERE rowid >= ? AND rowid < ?",
                (lo_key, hi_key),
            ).fetchall()
            insert_codes(
                c,
                [
                    (base + position_of(rid), dest_sid, dest_project, role, ts, code)
                    for rid, role, ts, code in codes
                ],
            )
        else:
            _set(c, "codes_stale", "1")


def index_all_messages(c: Any, *, provider_text: bool = True) -> None:
    """Index every stored message's text (the upgrade to schema version 2, which runs it
    without ``provider_text``, as that version did: a later step adds it)."""
    last = -1
    while True:
        rows = c.execute(
            "SELECT id, role, flags, payload FROM messages WHERE id > ? ORDER BY id LIMIT 512", (last,)
        ).fetchall()
        if not rows:
            return
        _index_rows(c, rows, provider_text=provider_text)
        last = rows[-1][0]


_FTS_DELETE: Final = "INSERT INTO messages_fts (messages_fts, rowid, body, tool) VALUES ('delete', ?, ?, ?)"


def reindex_provider_text(c: Any) -> None:
    """Give the keyword index the text of provider blocks (the upgrade to ``message_extras``).

    Provider blocks had no text before; an indexed message holding one is removed with the text
    it was indexed under (its text without those blocks) and indexed again with all of it, so a
    later removal, which re-extracts the new text, matches what the index holds.
    """
    previous = packing.bound_or_none()
    packing.bind(c)  # dictionary-compressed payloads read through this connection's dictionaries
    try:
        last = -1
        reader = chunks.Reader(c)
        while True:
            rows = c.execute(
                "SELECT id, role, flags, payload FROM messages WHERE id > ? ORDER BY id LIMIT 512", (last,)
            ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            for mid, role, flags, payload in rows:
                try:
                    message = _message(role, reader.plain(mid, flags, payload))
                except ROW_ERRORS:
                    continue
                if not any(isinstance(b, ProviderBlock) for b in message.content):
                    continue
                if c.execute("SELECT 1 FROM fts_pending WHERE id = ?", (mid,)).fetchone() is not None:
                    continue  # queued: the fold indexes it with the new text
                if c.execute("SELECT 1 FROM messages_fts WHERE rowid = ?", (mid,)).fetchone() is not None:
                    # Indexed under its text without provider blocks, which had none then.
                    c.execute(_FTS_DELETE, (mid, *text_columns(_without_provider_blocks(message))))
                index_text(c, [(mid, *text_columns(message))])
    finally:
        packing.rebind(previous)


def _without_provider_blocks(message: Message) -> Message:
    return Message(message.role, [b for b in message.content if not isinstance(b, ProviderBlock)])
