"""Sealed chunks: a session's older messages, :data:`CHUNK` at a time, in one compressed payload.

With one compressed frame per message, a long session's load paid per row, for the row and for
starting the frame: ``bench.bench_chunks`` loads 10,000 messages in 52-60 ms that way and in
30-34 ms from chunks. Messages never change once written, so when the keyword index folds a
session's new messages it also seals each complete block of :data:`CHUNK` positions
(``position // CHUNK`` equal) older than the session's newest :data:`SEAL_TAIL` (and before the
fold, every 64th append's check seals the blocks its queue holds, :func:`queued_blocks`): their payloads
go, as one MessagePack array compressed as one frame, into a ``chunks`` row keyed like the
block's first message, and each message row keeps its metadata (role, time, tokens, the media
flag) with ``FLAG_SEALED`` and an empty payload. A block of messages bigger together than
:data:`CHUNK_BYTES` stays unsealed, and sealing, an optimisation, never fails the fold or append
it runs in (a block it cannot seal stays as it is).

Every reader of payloads goes through :class:`Reader` (or reads the chunks itself, as
:func:`.reading.read_messages` does). A deletion first unseals a chunk it would cut (:func:`cut`); a
copy for a fork copies the chunks wholly inside its range and gives the rows of a cut one their
payloads back. So a chunk always holds exactly its block's rows, all sealed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import msgspec

from axio_context.errors import CorruptDataError

from . import transactions
from .keys import SHIFT, key, position_of, sid_of
from .packing import (
    CHUNK,
    CHUNK_ERRORS,
    FLAG_BLOBS,
    FLAG_SEALED,
    ChunkEntry,
    decode_chunk,
    encode_chunk,
    inflate,
    pack,
)

__all__ = [
    "CHUNK",
    "CHUNK_BYTES",
    "SEAL_TAIL",
    "Reader",
    "chunk_of",
    "cut",
    "queued_blocks",
    "seal_after_fold",
    "seal_all",
    "unseal",
]

#: A session's newest positions are never sealed: ``pop`` (a chat app's retry) stays a one-row
#: delete, and only popping more than this many messages unseals a chunk.
SEAL_TAIL: Final = 32
#: The most bytes of MessagePack a chunk holds (before compression); a block of bigger messages
#: stays unsealed. Sealing saves a few microseconds per row, nothing next to decompressing
#: messages this big, and a chunk must stay well inside SQLite's 1,000,000,000-byte value limit
#: (64 messages of 17 MB made one past it, and its INSERT failed) and a sane amount of memory.
CHUNK_BYTES: Final = 32 * 1024 * 1024


_raw_decoder: Final = msgspec.msgpack.Decoder(msgspec.Raw)


def chunk_of(mid: int) -> int:
    """The key of the chunk that would hold message ``mid``."""
    return mid & ~(CHUNK - 1)


def _where(chunk: int) -> str:
    first = position_of(chunk)
    return f"messages {first}..{first + CHUNK - 1} of stored session {sid_of(chunk)}"


class Reader:
    """The payloads of rows, sealed or not, for code that reads rows one by one (the last chunk
    read is kept, so rows in key order decode each chunk once)."""

    def __init__(self, c: Any) -> None:
        self._c = c
        self._key = -1
        self._entries: list[ChunkEntry] = []

    def entries(self, chunk: int) -> list[ChunkEntry]:
        """The entries of chunk ``chunk``; CorruptDataError when it is missing or damaged."""
        entries = self.find(chunk)
        if entries is None:
            raise CorruptDataError(f"{_where(chunk)}: sealed, and their chunk is missing")
        return entries

    def find(self, chunk: int) -> list[ChunkEntry] | None:
        """The entries of chunk ``chunk``, None when there is no such chunk; CorruptDataError
        when it is damaged."""
        if chunk != self._key:
            r = self._c.execute("SELECT flags, payload FROM chunks WHERE id = ?", (chunk,)).fetchone()
            if r is None:
                return None
            try:
                entries = decode_chunk(r[0], r[1])
            except CHUNK_ERRORS as exc:
                raise CorruptDataError(f"{_where(chunk)}: chunk does not decode ({exc})") from None
            if len(entries) != CHUNK:
                raise CorruptDataError(f"{_where(chunk)}: chunk holds {len(entries)} messages")
            self._key, self._entries = chunk, entries
        return self._entries

    def plain(self, mid: int, flags: int, payload: bytes) -> bytes:
        """The MessagePack of stored row ``mid``'s content, decompressed, whether the row is
        sealed (its payload is in its chunk) or not."""
        if not flags & FLAG_SEALED:
            return inflate(flags, payload)
        return bytes(self.entries(chunk_of(mid))[mid - chunk_of(mid)][2])


def unseal(c: Any, chunk: int) -> None:
    """Put a chunk's payloads back into its rows (each compressed on its own) and drop it."""
    entries = Reader(c).find(chunk)
    if entries is None:
        return
    updates = []
    for i, (_, eflags, raw) in enumerate(entries):
        zflags, packed = pack(bytes(raw))
        updates.append((eflags & FLAG_BLOBS | zflags, packed, chunk + i, FLAG_SEALED))
    c.executemany("UPDATE messages SET flags = ?, payload = ? WHERE id = ? AND flags & ?", updates)
    c.execute("DELETE FROM chunks WHERE id = ?", (chunk,))


def cut(c: Any, lo_key: int, hi_key: int) -> None:
    """Before rows ``[lo_key, hi_key)`` are deleted or copied: unseal a chunk that holds rows on
    both sides of either bound, so every chunk is wholly inside or wholly outside the range."""
    for bound in (lo_key, hi_key):
        if bound & (CHUNK - 1):
            unseal(c, chunk_of(bound))


def drop(c: Any, lo_key: int, hi_key: int) -> None:
    """Delete the chunks of rows ``[lo_key, hi_key)`` (after :func:`cut`, with the rows)."""
    c.execute("DELETE FROM chunks WHERE id >= ? AND id < ?", (lo_key, hi_key))


def seal_all(c: Any) -> int:
    """Seal every session's complete blocks older than its newest :data:`SEAL_TAIL` messages, one
    write transaction per session; returns the number of chunks written.

    For what folds never reach: a database from before schema version 5, whose messages were
    folded before sealing existed. ``vacuum`` runs it.
    """
    sids = [
        r[0] for r in c.execute("SELECT sid FROM sessions WHERE next_position >= ?", (SEAL_TAIL + CHUNK,))
    ]
    written = 0
    for sid in sids:
        with transactions.write_tx(c):
            written += seal_after_fold(c, [key(sid, 0)])
    return written


def queued_blocks(c: Any) -> list[int]:
    """For sealing before the keyword index folds its queue: the first queued message of each
    session whose newest complete block before its unsealed tail is not sealed yet (hand them to
    :func:`seal_after_fold`, which checks again under the write lock).

    The queue folds 1,024 messages at a time, and until then its messages' payloads were each
    compressed alone: after 2,000 appends, half of the file was such rows, at about twice the
    bytes the same messages take sealed (issue 32). Sealed rows read and fold the same
    (:class:`Reader`). Reads only: no write lock is taken when nothing is due.
    """
    due = []
    for first, end in c.execute(
        f"SELECT min(p.id), s.next_position FROM fts_pending p JOIN sessions s ON s.sid = p.id >> {SHIFT}"
        " GROUP BY s.sid"
    ).fetchall():
        lo = max(0, position_of(first) - SEAL_TAIL) & ~(CHUNK - 1)  # as seal_after_fold reads
        hi = max(0, int(end) - SEAL_TAIL) & ~(CHUNK - 1)
        if hi <= lo:
            continue
        r = c.execute("SELECT flags FROM messages WHERE id = ?", (key(sid_of(first), hi - CHUNK),)).fetchone()
        if r is not None and not r[0] & FLAG_SEALED:
            due.append(first)
    return due


def seal_after_fold(c: Any, folded: Iterable[int], plain: Mapping[int, bytes] | None = None) -> int:
    """Seal the complete blocks near the messages just folded into the keyword index.

    Inside the fold's write transaction. For each session with folded messages, the blocks from
    :data:`SEAL_TAIL` before the first folded position up to :data:`SEAL_TAIL` before the
    session's end are sealed when all :data:`CHUNK` of their rows are there and unsealed (a fork's
    first block, part of which it inherits, never is). ``plain``: the MessagePack of rows the
    caller already decompressed, by id. Returns the number of chunks written.
    """
    first: dict[int, int] = {}
    for mid in folded:
        sid, pos = sid_of(mid), position_of(mid)
        if pos < first.get(sid, pos + 1):
            first[sid] = pos
    if not first:
        return 0
    plain = plain or {}
    written = 0
    for sid, pos in sorted(first.items()):
        r = c.execute("SELECT next_position FROM sessions WHERE sid = ?", (sid,)).fetchone()
        if r is None:
            continue
        lo = max(0, pos - SEAL_TAIL) & ~(CHUNK - 1)
        hi = max(0, int(r[0]) - SEAL_TAIL) & ~(CHUNK - 1)
        if hi <= lo:
            continue
        base = key(sid, 0)
        rows = c.execute(
            "SELECT id, role, flags, created_at, tokens, payload FROM messages"
            " WHERE id >= ? AND id < ? AND NOT flags & ? ORDER BY id",
            (base + lo, base + hi, FLAG_SEALED),
        ).fetchall()
        i = 0
        while i + CHUNK <= len(rows):
            block = rows[i : i + CHUNK]
            if block[0][0] & (CHUNK - 1) or block[-1][0] != block[0][0] + CHUNK - 1:
                i += 1  # not the start of a complete block
                continue
            i += CHUNK
            written += _seal_block(c, block, plain)
    return written


def _block_entries(block: Sequence[Any], plain: Mapping[int, bytes]) -> list[tuple[int, int, bytes]] | None:
    """The ``(role, flags, content MessagePack)`` entries of a block's rows; None when one is
    damaged (it stays as it is, to be reported by name when read) or when together they pass
    :data:`CHUNK_BYTES`."""
    if sum(len(r[5]) for r in block) > CHUNK_BYTES:
        return None  # compressed already past the cap: nothing to decompress
    entries = []
    size = 0
    try:
        for mid, role, flags, _, _, payload in block:
            data = known if (known := plain.get(mid)) is not None else inflate(flags, payload)
            size += len(data)
            if size > CHUNK_BYTES:
                return None
            _raw_decoder.decode(data)  # one whole MessagePack value, or the block stays
            entries.append((role, flags, data))
    except (*CHUNK_ERRORS, MemoryError):
        return None
    return entries


def _seal_block(c: Any, block: Sequence[Any], plain: Mapping[int, bytes]) -> int:
    """Seal one complete block of unsealed rows; returns 1, or 0 when it stays as it is.

    Sealing only saves time on later loads, so it never fails the fold or append it runs in: a
    block it cannot seal (damaged, too big, a chunk it cannot encode or store) keeps its rows.
    Everything that can fail comes before the rows are touched, and the chunk's INSERT is one
    statement, which SQLite undoes whole when it fails: no savepoint is needed (one left SQLite
    unable to reuse the pages the block's rows freed, and the file grew).
    """
    entries = _block_entries(block, plain)
    if entries is None:
        return 0
    try:
        zflags, packed = encode_chunk(entries)
        c.execute("INSERT INTO chunks (id, flags, payload) VALUES (?, ?, ?)", (block[0][0], zflags, packed))
    except Exception:
        if not c.in_transaction:
            raise  # SQLite rolled the whole transaction back: that is the caller's error
        return 0
    # Delete and insert again rather than UPDATE: SQLite merges the pages a DELETE leaves
    # underfull, and leaves the pages of rows an UPDATE shrank nearly empty (a 10,000-message
    # session's rows took 1,032 pages instead of ~60).
    c.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (block[0][0], block[0][0] + CHUNK))
    c.executemany(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload) VALUES (?, ?, ?, ?, ?, x'')",
        [
            (mid, role, flags & FLAG_BLOBS | FLAG_SEALED, at, tokens)
            for mid, role, flags, at, tokens, _ in block
        ],
    )
    return 1
