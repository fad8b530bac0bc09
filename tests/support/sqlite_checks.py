"""Checks on a database file made with plain SQL, independent of the code under test.

Used by the concurrency, multi-process, crash and fork-cost tests: integrity, dense positions in
every session's own range, blob reference counts equal to the references the rows hold.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
import sqlean

from axio_context import Message, TextBlock
from axio_context_sqlite.store import chunks
from axio_context_sqlite.store import packing as storage
from axio_context_sqlite.store.indexing import row_text
from axio_context_sqlite.store.message_rows import blob_digests
from axio_context_sqlite.store.packing import FLAG_BLOBS, FLAG_SEALED


def raw_connect(path: Path) -> Any:
    """A plain DB-API connection (no axio code) through the SQLite library the store links.

    Never open a file with the stdlib's ``sqlite3`` while an axio connection to it is open in the
    same process: two SQLite libraries in one process do not see each other's POSIX locks, so the
    stdlib's close takes the file for its own, checkpoints and deletes the WAL the other is still
    writing, and later commits vanish (sqlite.org/howtocorrupt.html, "multiple copies of SQLite").
    """
    return sqlean.connect(str(path))


def text_message(text: str, role: str = "user") -> Message:
    """A one-text-block message; tests identify messages by their text."""
    return Message(role=role, content=[TextBlock(text=text)])  # type: ignore[arg-type]


def texts(messages: list[Message]) -> list[str]:
    """Each message's text, in order."""
    return [m.text for m in messages]


def check_storage(path: Path) -> dict[str, int]:
    """Assert the file is sound; returns ``{session_id: transcript length}``.

    - ``PRAGMA integrity_check`` is ok;
    - every session's own rows are exactly positions ``[base_len, next_position)``, no gap;
    - no message row belongs to a session that does not exist;
    - every blob's ``refs`` equals the number of rows referencing it, and no blob is unreferenced;
    - every message with text is in the keyword index or its queue, exactly once (FTS5's own
      integrity check passes too);
    - every compression dictionary a row or chunk names exists;
    - every chunk starts a block and holds its ``chunks.CHUNK`` messages, whose rows are sealed
      (same role and media flag), and every sealed row is in a chunk.
    """
    db = raw_connect(path)
    storage.bind(db)  # payloads compressed with a dictionary are read through this connection
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        dicts = {r[0] for r in db.execute("SELECT id FROM zstd_dicts")}
        used = {r[0] for r in db.execute("SELECT DISTINCT flags >> 8 FROM messages WHERE flags >> 8")}
        used |= {r[0] for r in db.execute("SELECT DISTINCT flags >> 8 FROM chunks WHERE flags >> 8")}
        assert used <= dicts, f"rows use missing compression dictionaries {used - dicts}"
        sessions = db.execute("SELECT sid, id, base_len, next_position FROM sessions").fetchall()
        own: dict[int, list[int]] = {}
        refs: Counter[bytes] = Counter()
        rows = {
            mid: (role, flags, payload)
            for mid, role, flags, payload in db.execute("SELECT id, role, flags, payload FROM messages")
        }
        # A sealed row's payload is entry mid % 32 of the chunk keyed by its block's first id.
        sealed = {mid for mid, (_, flags, _) in rows.items() if flags & FLAG_SEALED}
        size = chunks.CHUNK  # read at call time: a test may seal in smaller blocks
        for cid, cflags, cpayload in db.execute("SELECT id, flags, payload FROM chunks"):
            assert cid % size == 0, f"chunk {cid} does not start a block"
            entries = msgspec.msgpack.decode(storage.inflate(cflags, cpayload))
            assert len(entries) == size, f"chunk {cid} holds {len(entries)} messages"
            for i, (role, eflags, content) in enumerate(entries):
                mid = cid + i
                assert mid in sealed, f"chunk {cid} covers message {mid}, which is missing or not sealed"
                sealed.discard(mid)
                assert rows[mid][0] == role and rows[mid][1] & FLAG_BLOBS == eflags, f"message {mid}"
                rows[mid] = (role, eflags, msgspec.msgpack.encode(content))
        assert not sealed, f"sealed messages without a chunk: {sorted(sealed)[:5]}"
        for mid in sorted(rows):
            own.setdefault(mid >> 32, []).append(mid & 0xFFFFFFFF)
            refs.update(blob_digests(*rows[mid][1:]))
        lengths: dict[str, int] = {}
        for sid, session_id, base_len, next_position in sessions:
            positions = own.pop(sid, [])
            assert positions == list(range(base_len, next_position)), (
                f"session {session_id}: own rows {positions[:3]}..{positions[-3:]} "
                f"!= [{base_len}, {next_position})"
            )
            lengths[session_id] = next_position
        assert not own, f"message rows of missing sessions: {sorted(own)}"
        stored = dict(db.execute("SELECT hash, refs FROM blobs").fetchall())
        assert stored == dict(refs), "blob reference counts do not match the rows"
        # every message with text is in the keyword index or queued for it, once; nothing else is
        indexed = [r[0] for r in db.execute("SELECT rowid FROM messages_fts")]
        queued = [r[0] for r in db.execute("SELECT id FROM fts_pending")]
        assert len(set(indexed + queued)) == len(indexed) + len(queued), (
            "indexed twice, or indexed and queued"
        )
        assert set(indexed + queued) <= set(rows), "index entries of messages that are gone"
        for mid in set(rows) - set(indexed) - set(queued):
            assert row_text(*rows[mid]) == ("", ""), f"message {mid} has text but is not indexed"
        db.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
        return lengths
    finally:
        storage.unbind()
        db.close()


def scalar(path: Path, sql: str) -> Any:
    """The one value ``sql`` returns, read on a connection of its own."""
    db = raw_connect(path)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def column(path: Path, sql: str) -> list[Any]:
    """The first column of every row ``sql`` returns, read on a connection of its own."""
    db = raw_connect(path)
    try:
        return [r[0] for r in db.execute(sql)]
    finally:
        db.close()


def message_row_count(path: Path) -> int:
    """How many rows the messages table holds."""
    return int(scalar(path, "SELECT COUNT(*) FROM messages"))
