"""The SQL of a session's operations, each one synchronous call on the connection: a thread hop,
or inline on the event loop's thread for the token calls (:func:`.connection.run_short`).
Appending is in :mod:`.appending`.

Layout (see schema.sql): a message's key is ``(sid << 32) | position``, so a session's own rows
are one contiguous range of the table's b-tree. A fork is a new session row whose ``base_sid`` /
``base_len`` say "positions [0, base_len) are that session's"; nothing is copied. Reading a
session walks that chain (one indexed row per ancestor) and reads one range per segment. An
ancestor's rows below a descendant's ``base_len`` are immutable; an operation that would delete
them (clear, pop, delete) first copies the rows each direct child still needs into the child's own
range (``_detach_children``) — work proportional to what the child inherits, and only then.

Every function that writes runs one ``BEGIN IMMEDIATE`` transaction: the write lock is taken up
front, so the busy timeout governs waiting for other processes, and a crash at any instant
leaves either all of the operation or none of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import starmap
from typing import Any, Final

import msgspec

from axio_context.checkpoints import Checkpoint
from axio_context.codec import (
    decode_content,
    decode_json_exact,
    decode_messages_msgpack,
    encode_json,
    encode_messages_msgpack,
)
from axio_context.errors import CheckpointError, CorruptDataError, DecodeError, SessionNotFoundError
from axio_context.messages import Message, SessionInfo
from axio_context.transcript import format_time

from ..errors import TokenTotalError
from . import chunks, indexing, packing
from .chunks import CHUNK_ERRORS, chunk_of, decode_chunk, decode_chunk_content
from .packing import (
    DICT_SHIFT,
    FLAG_BLOBS,
    FLAG_SEALED,
    FLAG_ZSTD,
    ROLE_NAMES,
    ROW_ERRORS,
    decode_row,
    inflate,
    media_digests,
    restore_media,
    unzstd,
    write_tx,
)

__all__ = ["SHIFT", "Embeddings", "SessionPage", "write_tx"]

SHIFT: Final = 32
_ROLES: Final = ROLE_NAMES
_decode_content: Final = decode_content
_unzstd: Final = unzstd
_LOW: Final = (1 << SHIFT) - 1


def now_ms() -> int:
    """Milliseconds since the epoch, UTC."""
    return time.time_ns() // 1_000_000


def iso(ms: int | None) -> str:
    """ISO-8601 UTC text for a stored millisecond time ('' for none), by integer arithmetic."""
    return "" if ms is None else format_time(ms)


def key(sid: int, position: int) -> int:
    """The messages-table key of a session's position."""
    return (sid << SHIFT) | position


@contextmanager
def read_tx(c: Any) -> Iterator[None]:
    """One read snapshot across several statements (WAL readers never block writers)."""
    if c.in_transaction:  # already inside a caller's transaction
        yield
        return
    c.execute("BEGIN")
    try:
        yield
    finally:
        if c.in_transaction:
            c.execute("COMMIT")


class SessionPage(msgspec.Struct, frozen=True):
    """One page of a session listing; pass ``next_cursor`` back for the next page (None at the end)."""

    sessions: list[SessionInfo]
    next_cursor: str | None


class Embeddings(msgspec.Struct, frozen=True):
    """Vectors computed for a batch before its transaction: (index in batch, float32 BLOB, code)."""

    model: str
    dimension: int
    rows: list[tuple[int, bytes, bytes | None]]


class _Row(msgspec.Struct):
    sid: int
    base_sid: int | None
    base_len: int
    next_position: int
    est_tokens: int
    project: str | None


#: The sessions columns of :class:`_Row`, in its field order.
ROW_COLUMNS: Final = "sid, base_sid, base_len, next_position, est_tokens, project"
_ROW_SQL: Final = f"SELECT {ROW_COLUMNS} FROM sessions WHERE id = ?"


def _session(c: Any, session_id: str) -> _Row | None:
    r = c.execute(_ROW_SQL, (session_id,)).fetchone()
    return None if r is None else _Row(*r)


def _create(c: Any, session_id: str, project: str | None, now: int) -> None:
    c.execute(
        "INSERT OR IGNORE INTO sessions (id, project, created_at, updated_at) VALUES (?, ?, ?, ?)",
        (session_id, project, now, now),
    )


def _ensure(c: Any, session_id: str, project: str | None, now: int) -> _Row:
    row = _session(c, session_id)
    if row is None:
        _create(c, session_id, project, now)
        row = _session(c, session_id)
        assert row is not None
    return row


# --- reading -------------------------------------------------------------------------------------


def segments(c: Any, row: _Row, start: int = 0, end: int | None = None) -> list[tuple[int, int, int]]:
    """``(sid, lo, hi)`` ranges, oldest first, that make up positions ``[start, end)``."""
    hi = row.next_position if end is None else min(end, row.next_position)
    out: list[tuple[int, int, int]] = []
    sid, base_sid, lo = row.sid, row.base_sid, row.base_len
    while True:
        a = max(lo, start)
        if hi > a:
            out.append((sid, a, hi))
        hi = min(hi, lo)
        if base_sid is None or hi <= start:
            break
        r = c.execute("SELECT base_sid, base_len FROM sessions WHERE sid = ?", (base_sid,)).fetchone()
        if r is None:  # defensive: a dangling base would be a bug; surface it
            raise CorruptDataError(f"session {row.sid}: lineage points at a missing session")
        sid, (base_sid, lo) = base_sid, r
    out.reverse()
    return out


def _fetch_blobs(c: Any) -> Any:
    def fetch(digests: list[bytes]) -> dict[bytes, bytes]:
        wanted = list(dict.fromkeys(digests))
        found: dict[bytes, bytes] = {}
        for i in range(0, len(wanted), _BLOBS_PER_QUERY):
            chunk = wanted[i : i + _BLOBS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            found.update(c.execute(f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk).fetchall())
        return found

    return fetch


#: Digests per blob query: well under SQLite's 32,766 bound parameters, whichever library runs.
_BLOBS_PER_QUERY: Final = 500


def read_messages(
    c: Any,
    session_id: str,
    row: _Row,
    start: int = 0,
    end: int | None = None,
    *,
    times: list[int] | None = None,
) -> list[Message]:
    """Decode positions ``[start, end)`` of a session (the row must come from this snapshot).

    One query per lineage segment for the messages, then one for every media blob they use.
    ``times``, when given, receives each message's ``created_at`` (ms), in the same order.
    """
    out: list[Any] = []
    with_media: list[tuple[int, int, Any, list[Any]]] = []  # (index in out, position, role, content)
    fetch = _fetch_blobs(c)
    dicts = packing.bound_or_none()
    # The flags of the last dictionary payload and that dictionary's decompressor: a session's
    # rows rarely use two, so most rows take the first branch below.
    dict_flags, undict = -1, None
    # Only the columns the loop needs: each one more is an object per row to build and free.
    sql = _READ_TIMED if times is not None else _READ
    for sid, lo, hi in segments(c, row, start, end):
        sealed = c.execute(_READ_CHUNKS, (chunk_of(key(sid, lo)), key(sid, hi))).fetchall()
        if sealed:
            rows = _with_chunks(c, session_id, sid, lo, hi, sealed, times)
        else:
            rows = c.execute(sql, (key(sid, lo), key(sid, hi))).fetchall()
            if times is not None:
                times.extend(r[3] for r in rows)
                rows = [r[:3] for r in rows]
        if len(rows) != hi - lo:
            raise CorruptDataError(f"session {session_id!r}: positions {lo}..{hi - 1} have {len(rows)} rows")
        first = len(out)  # out[first + i] is position lo + i
        append = out.append
        try:
            # The hot loop of every load: the common kinds of row skip decode_row's generality.
            for role, flags, payload in rows:
                if flags == _DECODED:  # a sealed message, decoded with its chunk
                    append(Message(_ROLES[role], payload))
                elif flags == dict_flags:
                    append(Message(_ROLES[role], _decode_content(undict(payload))))  # type: ignore[misc]
                elif flags == 0:
                    append(Message(_ROLES[role], _decode_content(payload)))
                elif flags & _LOW_FLAGS == FLAG_ZSTD and flags != FLAG_ZSTD and dicts is not None:
                    dict_flags, undict = flags, dicts.decompressor(flags >> DICT_SHIFT).decompress
                    append(Message(_ROLES[role], _decode_content(undict(payload))))
                elif flags == FLAG_ZSTD:
                    append(Message(_ROLES[role], _decode_content(_unzstd(payload))))
                elif flags == _DECODED_MEDIA:
                    with_media.append((len(out), lo + len(out) - first, _ROLES[role], payload))
                    out.append(None)
                elif flags & FLAG_BLOBS:
                    content = _decode_content(inflate(flags, payload))
                    with_media.append((len(out), lo + len(out) - first, _ROLES[role], content))
                    out.append(None)
                else:
                    out.append(decode_row(role, flags, payload))
        except ROW_ERRORS:
            # Find the damaged row again, slowly, for an error naming it.
            for i, (role, flags, payload) in enumerate(rows[len(out) - first :], start=len(out) - first):
                if flags in (_DECODED, _DECODED_MEDIA):
                    if not 0 <= role < len(_ROLES):
                        raise CorruptDataError(
                            f"{_where(session_id, lo + i)}: unknown role code {role}"
                        ) from None
                    continue
                decode_row(role, flags, payload, fetch, where=_where(session_id, lo + i))
            raise
    if with_media:
        found = fetch([d for *_, content in with_media for d in media_digests(content)])
        for i, position, role_name, content in with_media:
            out[i] = Message(
                role=role_name, content=restore_media(content, found, _where(session_id, position))
            )
    return out


_READ: Final = "SELECT role, flags, payload FROM messages WHERE id >= ? AND id < ? ORDER BY id"
_READ_TIMED: Final = (
    "SELECT role, flags, payload, created_at FROM messages WHERE id >= ? AND id < ? ORDER BY id"
)


def _raw_chunk(session_id: str, first: int, flags: int, payload: bytes) -> list[Any]:
    try:
        return decode_chunk(flags, payload)
    except CHUNK_ERRORS as exc:
        raise _chunk_corrupt(session_id, first, exc) from None


def _decode_entry(session_id: str, position: int, raw: Any) -> list[Any]:
    try:
        return _decode_content(raw)
    except DecodeError as exc:
        raise CorruptDataError(
            f"{_where(session_id, position)}: stored message does not decode ({exc})"
        ) from None


def _chunk_corrupt(session_id: str, first: int, exc: Exception) -> CorruptDataError:
    last = first + chunks.CHUNK - 1
    return CorruptDataError(f"session {session_id!r}: positions {first}..{last} do not decode ({exc})")


_READ_CHUNKS: Final = "SELECT id, flags, payload FROM chunks WHERE id >= ? AND id < ? ORDER BY id"
_READ_TIMES: Final = "SELECT created_at FROM messages WHERE id >= ? AND id < ? ORDER BY id"


def _with_chunks(
    c: Any,
    session_id: str,
    sid: int,
    lo: int,
    hi: int,
    sealed: list[tuple[int, int, bytes]],
    times: list[int] | None,
) -> list[tuple[int, int, Any]]:
    """``(role, flags, payload)`` of positions ``[lo, hi)`` of ``sid``'s rows, in position order,
    some of them in the chunks ``sealed``: a chunk's messages stand in for its rows, already
    decoded (flags ``_DECODED`` or ``_DECODED_MEDIA``, payload the content blocks)."""
    lo_key, hi_key = key(sid, lo), key(sid, hi)
    if times is not None:
        times.extend(r[0] for r in c.execute(_READ_TIMES, (lo_key, hi_key)))
    out: list[tuple[int, int, Any]] = []
    at = lo_key  # the next key to read
    for chunk, flags, payload in sealed:
        if chunk > at:  # rows between the last chunk (or lo) and this one
            out.extend(c.execute(_READ, (at, chunk)).fetchall())
        first = chunk - lo_key  # the chunk's first position, relative to lo
        out.extend(_decoded_chunk(session_id, chunk, flags, payload)[max(0, -first) : hi - lo - first])
        at = chunk + chunks.CHUNK
    if hi_key > at:
        out.extend(c.execute(_READ, (at, hi_key)).fetchall())
    return out


#: Row flags :func:`_with_chunks` gives a sealed message decoded with its chunk (never stored):
#: its payload is the content blocks (with media digests to restore, for the second).
_DECODED: Final = -1
_DECODED_MEDIA: Final = -2


def _decoded_chunk(session_id: str, chunk: int, flags: int, payload: bytes) -> list[tuple[int, int, Any]]:
    """A chunk's messages as ``(role, _DECODED or _DECODED_MEDIA, content)``: one decode for the
    whole chunk, or one per message when a block type needs the codec's slower rules."""
    first = chunk & _LOW
    try:
        entries = decode_chunk_content(flags, payload)
    except msgspec.ValidationError:  # e.g. a block type from a newer version: as rows are
        entries = [
            (role, eflags, _decode_entry(session_id, first + i, raw))
            for i, (role, eflags, raw) in enumerate(_raw_chunk(session_id, first, flags, payload))
        ]
    except CHUNK_ERRORS as exc:
        raise _chunk_corrupt(session_id, first, exc) from None
    return [
        (role, _DECODED_MEDIA if eflags & FLAG_BLOBS else _DECODED, content)
        for role, eflags, content in entries
    ]


#: The flag bits below the dictionary id.
_LOW_FLAGS: Final = (1 << DICT_SHIFT) - 1


def _where(session_id: str, position: int) -> str:
    return f"session {session_id!r} position {position}"


def _latest_checkpoint(c: Any, sid: int) -> tuple[int, bytes, int, int] | None:
    r = c.execute(
        "SELECT position, summary, summary_tokens, tokens_at FROM checkpoints"
        " WHERE sid = ? ORDER BY seq DESC LIMIT 1",
        (sid,),
    ).fetchone()
    return None if r is None else (int(r[0]), bytes(r[1]), int(r[2]), int(r[3]))


def _decode_summary(session_id: str, blob: bytes) -> list[Message]:
    try:
        return decode_messages_msgpack(blob)
    except DecodeError as exc:
        raise CorruptDataError(
            f"session {session_id!r}: checkpoint summary does not decode ({exc})"
        ) from None


def get_view(c: Any, session_id: str) -> list[Message]:
    """The model's view: the latest checkpoint's summary, then every message after it."""
    with read_tx(c):
        row = _session(c, session_id)
        if row is None:
            return []
        cp = _latest_checkpoint(c, row.sid)
        if cp is None:
            return read_messages(c, session_id, row)
        return [*_decode_summary(session_id, cp[1]), *read_messages(c, session_id, row, cp[0])]


def get_full(c: Any, session_id: str) -> list[Message]:
    """Every message of the session, checkpoints ignored."""
    with read_tx(c):
        row = _session(c, session_id)
        return [] if row is None else read_messages(c, session_id, row)


def view_tokens(c: Any, session_id: str) -> int:
    """Estimated tokens of the view from cached counts: O(1), no message is read."""
    with read_tx(c):
        row = _session(c, session_id)
        if row is None:
            return 0
        cp = _latest_checkpoint(c, row.sid)
        if cp is None:
            return row.est_tokens
        return row.est_tokens - cp[3] + cp[2]


def get_tokens(c: Any, session_id: str) -> tuple[int, int]:
    r = c.execute("SELECT input_tokens, output_tokens FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return (0, 0) if r is None else (int(r[0]), int(r[1]))


def _add_blob_refs(c: Any, blobs: Sequence[tuple[bytes, bytes]]) -> None:
    c.executemany(
        "INSERT INTO blobs (hash, refs, data) VALUES (?, 1, ?)"
        " ON CONFLICT (hash) DO UPDATE SET refs = refs + 1",
        blobs,
    )


def _drop_blob_refs(c: Any, digests: Sequence[bytes]) -> None:
    if not digests:
        return
    c.executemany("UPDATE blobs SET refs = refs - 1 WHERE hash = ?", [(d,) for d in digests])
    c.execute("DELETE FROM blobs WHERE refs <= 0")


def _digests_in_range(c: Any, lo_key: int, hi_key: int) -> list[bytes]:
    """The blob digests the rows ``[lo_key, hi_key)`` reference, one per reference.

    A damaged row's digests cannot be read, so it counts for none: deleting it (a session must
    stay deletable) leaves its blobs' references in place, stored but never freed, and a fork's
    copy of it adds none.
    """
    rows = c.execute(
        "SELECT id, flags, payload FROM messages WHERE id >= ? AND id < ? AND flags & ?",
        (lo_key, hi_key, FLAG_BLOBS),
    ).fetchall()
    out: list[bytes] = []
    reader = chunks.Reader(c)
    for mid, flags, payload in rows:
        try:
            content = _decode_content(reader.plain(mid, flags, payload))
        except CHUNK_ERRORS:
            continue
        out.extend(media_digests(content))
    return out


# --- tokens --------------------------------------------------------------------------------------


def set_tokens(c: Any, session_id: str, project: str | None, input_tokens: int, output_tokens: int) -> None:
    now = now_ms()
    if c.execute(
        "UPDATE sessions SET input_tokens = ?, output_tokens = ?, updated_at = ? WHERE id = ?",
        (input_tokens, output_tokens, now, session_id),
    ).rowcount:
        return
    c.execute(  # the session's first write (the upsert covers another writer creating it meanwhile)
        "INSERT INTO sessions (id, project, created_at, updated_at, input_tokens, output_tokens)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
        " input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,"
        " updated_at = excluded.updated_at",
        (session_id, project, now, now, input_tokens, output_tokens),
    )


#: The largest token total a column holds (SQLite's INTEGER is 64-bit; past it, a sum becomes a
#: float and later additions are lost).
MAX_TOKENS: Final = (1 << 63) - 1

#: Adds to both totals when each stays within [0, MAX_TOKENS]; the bounds are written so that no
#: arithmetic of SQLite's can overflow (``MAX - total`` and ``-total`` fit for any stored total).
_ADD_TOKENS: Final = (
    "UPDATE sessions SET input_tokens = input_tokens + :i, output_tokens = output_tokens + :o,"
    " updated_at = :now WHERE id = :id"
    " AND :i BETWEEN -input_tokens AND :max - input_tokens"
    " AND :o BETWEEN -output_tokens AND :max - output_tokens"
)


def add_tokens(c: Any, session_id: str, project: str | None, input_tokens: int, output_tokens: int) -> None:
    """One autocommit statement (an UPDATE; an upsert for a session's first write): no races.

    A total that would fall below zero or pass :data:`MAX_TOKENS` is refused with
    :class:`TokenTotalError` and nothing changes, as ``set`` refuses such totals.
    """
    now = now_ms()
    args = {"i": input_tokens, "o": output_tokens, "now": now, "id": session_id, "max": MAX_TOKENS}
    if c.execute(_ADD_TOKENS, args).rowcount:
        return
    if not (input_tokens >= 0 and output_tokens >= 0):
        _refuse_totals(session_id, (0, 0), (input_tokens, output_tokens))
    c.execute(
        "INSERT INTO sessions (id, project, created_at, updated_at, input_tokens, output_tokens)"
        " VALUES (:id, :project, :now, :now, :i, :o) ON CONFLICT (id) DO UPDATE SET"
        " input_tokens = input_tokens + excluded.input_tokens,"
        " output_tokens = output_tokens + excluded.output_tokens, updated_at = excluded.updated_at"
        " WHERE :i BETWEEN -input_tokens AND :max - input_tokens"
        " AND :o BETWEEN -output_tokens AND :max - output_tokens",
        {**args, "project": project},
    )
    if not c.execute("SELECT changes()").fetchone()[0]:  # the session existed: its totals refused it
        _refuse_totals(session_id, get_tokens(c, session_id), (input_tokens, output_tokens))


def _refuse_totals(session_id: str, totals: tuple[int, int], added: tuple[int, int]) -> None:
    for name, total, add in zip(("input_tokens", "output_tokens"), totals, added, strict=True):
        if not 0 <= total + add <= MAX_TOKENS:
            raise TokenTotalError(
                f"adding {add} {name} to session {session_id!r} would make its total {total + add}, "
                f"outside 0..{MAX_TOKENS}; nothing was changed"
            )
    raise TokenTotalError(f"token totals of session {session_id!r} out of range; nothing was changed")


# --- forks, clear, pop, delete -------------------------------------------------------------------


def fork(c: Any, session_id: str, project: str | None, new_id: str) -> None:
    """A new session sharing the parent's transcript: one row, plus its checkpoints' rows."""
    now = now_ms()
    with write_tx(c):
        parent = _ensure(c, session_id, project, now)
        c.execute(
            "INSERT INTO sessions (id, project, parent_id, fork_position, base_sid, base_len, next_position,"
            " created_at, updated_at, preview, preview_pos, input_tokens, output_tokens, est_tokens)"
            " SELECT ?, project, id, next_position, CASE WHEN next_position > 0 THEN sid END, next_position,"
            " next_position, ?, ?, preview, preview_pos, input_tokens, output_tokens, est_tokens"
            " FROM sessions WHERE sid = ?",
            (new_id, now, now, parent.sid),
        )
        child_sid = c.execute("SELECT sid FROM sessions WHERE id = ?", (new_id,)).fetchone()[0]
        c.execute(
            "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
            " created_at, summary_tokens, tokens_at) SELECT ?, seq, position, summary, tokens_before,"
            " tokens_after, summarizer, created_at, summary_tokens, tokens_at FROM checkpoints WHERE sid = ?",
            (child_sid, parent.sid),
        )


def _detach_children(c: Any, row: _Row, from_position: int | None) -> None:
    """Before ``row``'s own rows at positions >= ``from_position`` go away, copy what forks need.

    ``from_position=None`` means the whole session goes (clear/delete): every direct child is
    re-pointed at ``row``'s own base, after copying the part of ``row``'s rows it inherits.
    Otherwise (pop) a child copies only the inherited rows at or past ``from_position`` and keeps
    inheriting the rest from ``row``.
    """
    if from_position is None:
        children = c.execute(
            "SELECT sid, base_len, project FROM sessions WHERE base_sid = ?", (row.sid,)
        ).fetchall()
    else:
        children = c.execute(
            "SELECT sid, base_len, project FROM sessions WHERE base_sid = ? AND base_len > ?",
            (row.sid, max(from_position, row.base_len)),
        ).fetchall()
    for child_sid, child_base_len, child_project in children:
        lo, hi = row.base_len, child_base_len
        if from_position is not None and from_position > lo:
            lo = from_position
        if hi > lo:
            _copy_rows(c, key(row.sid, lo), key(row.sid, hi), child_sid)
            indexing.copy_index(c, key(row.sid, lo), key(row.sid, hi), child_sid, child_project)
            digests = _digests_in_range(c, key(child_sid, lo), key(child_sid, hi))
            if digests:
                c.executemany("UPDATE blobs SET refs = refs + 1 WHERE hash = ?", [(d,) for d in digests])
        new_len = min(lo, hi)
        if new_len > row.base_len:  # still inherits row's rows below lo
            c.execute("UPDATE sessions SET base_len = ? WHERE sid = ?", (new_len, child_sid))
            continue
        c.execute(
            "UPDATE sessions SET base_sid = ?, base_len = ? WHERE sid = ?",
            (row.base_sid if new_len > 0 else None, new_len, child_sid),
        )


def _copy_rows(c: Any, lo_key: int, hi_key: int, dest_sid: int) -> None:
    """Copy rows ``[lo_key, hi_key)`` to the same positions of session ``dest_sid``.

    The chunks wholly inside the range are copied as they are, so their rows' copies stay sealed;
    a sealed row of a chunk the range cuts gets its payload back, compressed on its own.
    """
    dest, size = dest_sid << SHIFT, chunks.CHUNK
    whole_lo, whole_hi = (lo_key + size - 1) & ~(size - 1), hi_key & ~(size - 1)
    c.execute(
        "INSERT INTO chunks (id, flags, payload) SELECT ? + (id & ?), flags, payload FROM chunks"
        " WHERE id >= ? AND id < ?",
        (dest, _LOW, whole_lo, whole_hi),
    )
    c.execute(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload)"
        " SELECT ? + (id & ?), role, flags, created_at, tokens, payload FROM messages"
        " WHERE id >= ? AND id < ? AND (NOT flags & ? OR id >= ? AND id < ?) ORDER BY id",
        (dest, _LOW, lo_key, hi_key, FLAG_SEALED, whole_lo, whole_hi),
    )
    cut = c.execute(
        "SELECT id, role, flags, created_at, tokens FROM messages WHERE id >= ? AND id < ? AND flags & ?"
        " AND NOT (id >= ? AND id < ?) ORDER BY id",
        (lo_key, hi_key, FLAG_SEALED, whole_lo, whole_hi),
    ).fetchall()
    if not cut:
        return
    reader, dicts = chunks.Reader(c), packing.writing(c)
    copies = []
    for mid, role, flags, created_at, tokens in cut:
        zflags, packed = packing.pack(reader.plain(mid, flags, b""), dicts)
        copies.append((dest + (mid & _LOW), role, flags & FLAG_BLOBS | zflags, created_at, tokens, packed))
    c.executemany(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload) VALUES (?, ?, ?, ?, ?, ?)",
        copies,
    )


def _delete_own_rows(c: Any, row: _Row, from_position: int) -> None:
    lo_key = key(row.sid, max(from_position, row.base_len))
    hi_key = key(row.sid + 1, 0)
    chunks.cut(c, lo_key, hi_key)  # a chunk holding positions below from_position is unsealed
    digests = _digests_in_range(c, lo_key, hi_key)
    indexing.delete_index(c, lo_key, hi_key)
    c.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (lo_key, hi_key))
    chunks.drop(c, lo_key, hi_key)
    _drop_blob_refs(c, digests)


def clear(c: Any, session_id: str) -> None:
    """Forget the session's messages, checkpoints and token totals; forks keep their view."""
    with write_tx(c):
        row = _session(c, session_id)
        if row is None:
            return
        _detach_children(c, row, None)
        _delete_own_rows(c, row, 0)
        c.execute("DELETE FROM checkpoints WHERE sid = ?", (row.sid,))
        c.execute(
            "UPDATE sessions SET base_sid = NULL, base_len = 0, next_position = 0, est_tokens = 0,"
            " input_tokens = 0, output_tokens = 0, preview = NULL, preview_pos = NULL, updated_at = ?"
            " WHERE sid = ?",
            (now_ms(), row.sid),
        )


def pop(c: Any, session_id: str) -> Message | None:
    """Remove and return the last message; checkpoints covering it are dropped."""
    with write_tx(c):
        row = _session(c, session_id)
        if row is None or row.next_position == 0:
            return None
        last = row.next_position - 1
        [message] = read_messages(c, session_id, row, last)
        if last >= row.base_len:
            _detach_children(c, row, last)
            r = c.execute("SELECT tokens FROM messages WHERE id = ?", (key(row.sid, last),)).fetchone()
            spent = int(r[0])
            _delete_own_rows(c, row, last)
            base_len = row.base_len
        else:  # the last message is inherited: stop inheriting it
            # This session has no rows of its own; forks that still want the message get it from
            # where this session got it.
            c.execute(
                "UPDATE sessions SET base_sid = ? WHERE base_sid = ? AND base_len > ?",
                (row.base_sid, row.sid, last),
            )
            sid = segments(c, row, last, last + 1)[0][0]
            spent = int(
                c.execute("SELECT tokens FROM messages WHERE id = ?", (key(sid, last),)).fetchone()[0]
            )
            base_len = last
        c.execute("DELETE FROM checkpoints WHERE sid = ? AND position > ?", (row.sid, last))
        c.execute(
            "UPDATE sessions SET next_position = ?, base_len = ?,"
            " base_sid = CASE WHEN ? > 0 THEN base_sid END,"
            " est_tokens = est_tokens - ?, updated_at = ?,"
            " preview = CASE WHEN preview_pos >= ? THEN NULL ELSE preview END,"
            " preview_pos = CASE WHEN preview_pos >= ? THEN NULL ELSE preview_pos END WHERE sid = ?",
            (last, base_len, base_len, spent, now_ms(), last, last, row.sid),
        )
    return message


def delete_session(c: Any, session_id: str) -> bool:
    """Delete a session and everything only it uses; forks keep their view. False if absent."""
    with write_tx(c):
        row = _session(c, session_id)
        if row is None:
            return False
        _detach_children(c, row, None)
        _delete_own_rows(c, row, 0)
        c.execute("DELETE FROM checkpoints WHERE sid = ?", (row.sid,))
        c.execute("DELETE FROM sessions WHERE sid = ?", (row.sid,))
        # Its forks stand alone now: a lineage naming it would point at whatever session takes
        # its id next (its forks would be listed as that one's).
        c.execute(
            "UPDATE sessions SET parent_id = NULL, fork_position = NULL WHERE parent_id = ?", (session_id,)
        )
    return True


# --- checkpoints ---------------------------------------------------------------------------------


def add_checkpoint(
    c: Any, session_id: str, project: str | None, cp: Checkpoint, summary_tokens: int
) -> Checkpoint:
    now = now_ms()
    with write_tx(c):
        row = _ensure(c, session_id, project, now)
        if not 0 <= cp.position <= row.next_position:
            raise CheckpointError(
                f"checkpoint position {cp.position} is outside the transcript of session "
                f"{session_id!r} (0..{row.next_position})"
            )
        tail = 0
        for sid, lo, hi in segments(c, row, cp.position):
            tail += int(
                c.execute(
                    "SELECT COALESCE(SUM(tokens), 0) FROM messages WHERE id >= ? AND id < ?",
                    (key(sid, lo), key(sid, hi)),
                ).fetchone()[0]
            )
        seq = int(
            c.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoints WHERE sid = ?", (row.sid,)
            ).fetchone()[0]
        )
        c.execute(
            "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
            " created_at, summary_tokens, tokens_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.sid,
                seq,
                cp.position,
                encode_messages_msgpack(cp.summary),
                cp.tokens_before,
                cp.tokens_after,
                cp.summarizer,
                now,
                summary_tokens,
                row.est_tokens - tail,
            ),
        )
        c.execute("UPDATE sessions SET updated_at = ? WHERE sid = ?", (now, row.sid))
    return msgspec.structs.replace(cp, id=seq, created_at=iso(now))


def list_checkpoints(c: Any, session_id: str) -> list[Checkpoint]:
    rows = c.execute(
        "SELECT seq, position, summary, tokens_before, tokens_after, summarizer, c.created_at"
        " FROM checkpoints c JOIN sessions s ON s.sid = c.sid WHERE s.id = ? ORDER BY seq",
        (session_id,),
    ).fetchall()
    return [
        Checkpoint(
            position=position,
            summary=_decode_summary(session_id, summary),
            tokens_before=before,
            tokens_after=after,
            summarizer=summarizer,
            created_at=iso(created),
            id=seq,
        )
        for seq, position, summary, before, after, summarizer, created in rows
    ]


# --- listing -------------------------------------------------------------------------------------

# The times come formatted from the sessions table's generated columns (schema version 3):
# formatting them per row, even in SQL, was over half the cost of a listing. The columns are
# SessionInfo's fields in order, so a row is its positional arguments, and a whole listing is
# built straight from the cursor (bench.run's list of 2,000: 8.3-8.9 ms before, 5.9-8.4 after).
_INFO_COLUMNS: Final = (
    "id, next_position, coalesce(nullif(preview, ''), '(empty)'), created_iso, input_tokens,"
    " output_tokens, project, updated_iso, parent_id, fork_position, title"
)
_INFO_FIELDS: Final = 11


def _info(r: Sequence[Any]) -> SessionInfo:
    return SessionInfo(*r[:_INFO_FIELDS])


_ALL: Final = object()


def list_sessions(
    c: Any,
    project: Any = _ALL,
    *,
    limit: int | None = None,
    cursor: str | None = None,
    since_ms: int | None = None,
) -> SessionPage:
    """Sessions newest first (by creation), optionally one project's, in keyset-paginated pages."""
    where: list[str] = []
    args: list[Any] = []
    if project is not _ALL:
        if project is None:
            where.append("project IS NULL")
        else:
            where.append("project = ?")
            args.append(project)
    if since_ms is not None:
        where.append("created_at >= ?")
        args.append(since_ms)
    if cursor is not None:
        created, sid = _parse_cursor(cursor)
        where.append("(created_at < ? OR (created_at = ? AND sid < ?))")
        args += [created, created, sid]
    # A page also reads the cursor's columns, after SessionInfo's.
    sql = f"SELECT {_INFO_COLUMNS}{'' if limit is None else ', created_at, sid'} FROM sessions"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created_at DESC, sid DESC"
    if limit is None:
        return SessionPage(sessions=list(starmap(SessionInfo, c.execute(sql, args))), next_cursor=None)
    if limit < 1:
        raise ValueError("limit must be at least 1")
    sql += " LIMIT ?"
    args.append(limit + 1)
    rows = c.execute(sql, args).fetchall()
    next_cursor = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_cursor = f"{rows[-1][_INFO_FIELDS]}.{rows[-1][_INFO_FIELDS + 1]}"
    return SessionPage(sessions=[_info(r) for r in rows], next_cursor=next_cursor)


def _parse_cursor(cursor: str) -> tuple[int, int]:
    try:
        created, sid = cursor.split(".")
        return int(created), int(sid)
    except ValueError:
        raise ValueError(f"not a session-listing cursor: {cursor!r}") from None


def session_info(c: Any, session_id: str) -> SessionInfo:
    r = c.execute(f"SELECT {_INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return _info(r)


def list_forks(c: Any, session_id: str) -> list[SessionInfo]:
    """The sessions forked from ``session_id``, oldest first."""
    rows = c.execute(
        f"SELECT {_INFO_COLUMNS} FROM sessions WHERE parent_id = ? ORDER BY created_at, sid", (session_id,)
    ).fetchall()
    return [_info(r) for r in rows]


def set_title(c: Any, session_id: str, project: str | None, title: str | None) -> None:
    now = now_ms()
    with write_tx(c):
        _ensure(c, session_id, project, now)
        c.execute("UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?", (title, now, session_id))


_metadata_decoder: Final = msgspec.json.Decoder(dict[str, Any])


def encode_metadata(metadata: dict[str, Any]) -> str:
    """The ``sessions.metadata`` text of a mapping: JSON as the exports write it, so NaN,
    infinities, lone surrogates and integers of any size are kept (plain msgspec would write
    NaN as null and refuse a lone surrogate)."""
    return encode_json(metadata, exact=True).decode()


def decode_metadata(session_id: str, text: str) -> dict[str, Any]:
    """A stored ``sessions.metadata`` back as a mapping; anything else is corrupt data."""
    try:
        return decode_json_exact(_metadata_decoder, text.encode("utf-8", "surrogatepass"))
    except msgspec.DecodeError as exc:
        raise CorruptDataError(f"session {session_id!r}: metadata is not a JSON object ({exc})") from None


def get_metadata(c: Any, session_id: str) -> dict[str, Any]:
    r = c.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return {} if r is None or r[0] is None else decode_metadata(session_id, r[0])


def set_metadata(c: Any, session_id: str, project: str | None, metadata: dict[str, Any]) -> None:
    now = now_ms()
    data = encode_metadata(metadata)
    with write_tx(c):
        _ensure(c, session_id, project, now)
        c.execute("UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?", (data, now, session_id))


def session_info_or_none(c: Any, session_id: str) -> SessionInfo | None:
    r = c.execute(f"SELECT {_INFO_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if r is None else _info(r)
