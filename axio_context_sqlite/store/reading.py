"""Reading a session: its messages across the lineage (sealed chunks and media included), the
model's view after the latest checkpoint, and its token estimate."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from axio_context.codec import (
    decode_content,
    decode_messages_msgpack,
)
from axio_context.context import tail_of_view
from axio_context.errors import CorruptDataError, DecodeError
from axio_context.messages import Message

from . import chunks, hiding, packing
from .chunks import chunk_of
from .keys import POSITION_MASK, key
from .message_rows import ROLE_NAMES, decode_row, media_digests, restore_media, with_extras
from .packing import (
    CHUNK_ERRORS,
    DICT_SHIFT,
    FLAG_BLOBS,
    FLAG_ZSTD,
    ROW_ERRORS,
    decode_chunk,
    decode_chunk_content,
    inflate,
    unzstd,
)
from .session_rows import SessionRow, segments, session_row
from .transactions import read_tx

__all__ = ["decode_summary", "get_full", "get_view", "latest_checkpoint", "read_messages", "view_tokens"]


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
    row: SessionRow,
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
    extras: list[tuple[int, bytes]] = []  # (index in out, message_extras data)
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
        # Few messages have an id, timestamp or metadata: one indexed range query finds them.
        lo_key = key(sid, lo)
        found = c.execute(_READ_EXTRAS, (lo_key, key(sid, hi))).fetchall()
        extras.extend((first + mid - lo_key, data) for mid, data in found)
        append = out.append
        try:
            # The hot loop of every load: the common kinds of row skip decode_row's generality.
            for role, flags, payload in rows:
                if flags == _DECODED:  # a sealed message, decoded with its chunk
                    append(Message(ROLE_NAMES[role], payload))
                elif flags == dict_flags:
                    append(Message(ROLE_NAMES[role], decode_content(undict(payload))))  # type: ignore[misc]
                elif flags == 0:
                    append(Message(ROLE_NAMES[role], decode_content(payload)))
                elif flags & _LOW_FLAGS == FLAG_ZSTD and flags != FLAG_ZSTD and dicts is not None:
                    dict_flags, undict = flags, dicts.decompressor(flags >> DICT_SHIFT).decompress
                    append(Message(ROLE_NAMES[role], decode_content(undict(payload))))
                elif flags == FLAG_ZSTD:
                    append(Message(ROLE_NAMES[role], decode_content(unzstd(payload))))
                elif flags == _DECODED_MEDIA:
                    with_media.append((len(out), lo + len(out) - first, ROLE_NAMES[role], payload))
                    out.append(None)
                elif flags & FLAG_BLOBS:
                    content = decode_content(inflate(flags, payload))
                    with_media.append((len(out), lo + len(out) - first, ROLE_NAMES[role], content))
                    out.append(None)
                else:
                    out.append(decode_row(role, flags, payload))
        except ROW_ERRORS:
            # Find the damaged row again, slowly, for an error naming it.
            for i, (role, flags, payload) in enumerate(rows[len(out) - first :], start=len(out) - first):
                if flags in (_DECODED, _DECODED_MEDIA):
                    if not 0 <= role < len(ROLE_NAMES):
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
    for i, data in extras:
        try:
            out[i] = with_extras(out[i], data)
        except DecodeError as exc:
            raise CorruptDataError(f"{session_id!r}: a message's extras do not decode ({exc})") from None
    return out


_READ_EXTRAS: Final = "SELECT id, data FROM message_extras WHERE id >= ? AND id < ? ORDER BY id"
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
        return decode_content(raw)
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
    first = chunk & POSITION_MASK
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


def latest_checkpoint(c: Any, sid: int) -> tuple[int, bytes, int, int] | None:
    r = c.execute(
        "SELECT position, summary, summary_tokens, tokens_at FROM checkpoints"
        " WHERE sid = ? ORDER BY seq DESC LIMIT 1",
        (sid,),
    ).fetchone()
    return None if r is None else (int(r[0]), bytes(r[1]), int(r[2]), int(r[3]))


def decode_summary(session_id: str, blob: bytes) -> list[Message]:
    try:
        return decode_messages_msgpack(blob)
    except DecodeError as exc:
        raise CorruptDataError(
            f"session {session_id!r}: checkpoint summary does not decode ({exc})"
        ) from None


def get_view(c: Any, session_id: str, limit: int | None = None) -> list[Message]:
    """The model's view: the latest checkpoint's summary, then every message after it; with
    ``limit``, its last ``limit`` messages, reading only their rows."""
    with read_tx(c):
        row = session_row(c, session_id)
        if row is None or limit == 0:
            return []
        cp = latest_checkpoint(c, row.sid)
        start = 0 if cp is None else cp[0]
        if limit is not None:
            start = max(start, row.next_position - limit)
        own = hiding.drop_hidden(c, row.sid, start, read_messages(c, session_id, row, start))
        if cp is None:
            return own
        summary = decode_summary(session_id, cp[1])
        return [*summary, *own] if limit is None else tail_of_view(summary, own, limit)


def get_full(c: Any, session_id: str) -> list[Message]:
    """Every message of the session, checkpoints ignored (positions ``clear_run`` hid left out)."""
    with read_tx(c):
        row = session_row(c, session_id)
        if row is None:
            return []
        return hiding.drop_hidden(c, row.sid, 0, read_messages(c, session_id, row))


def view_tokens(c: Any, session_id: str) -> int:
    """Estimated tokens of the view from cached counts: O(1), no message is read."""
    with read_tx(c):
        row = session_row(c, session_id)
        if row is None:
            return 0
        cp = latest_checkpoint(c, row.sid)
        if cp is None:
            return row.est_tokens
        return row.est_tokens - cp[3] + cp[2]
