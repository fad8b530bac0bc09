"""Writes to whole sessions, each one transaction: token totals, fork, clear, pop, delete, title
and metadata.

An ancestor's rows below a descendant's ``base_len`` are immutable; an operation that would
delete them (clear, pop, delete) first copies the rows each direct child still needs into the
child's own range (``_detach_children``): work proportional to what the child inherits, and only
then. Every function that writes runs one ``BEGIN IMMEDIATE`` transaction: the write lock is
taken up front, so the busy timeout governs waiting for other processes, and a crash at any
instant leaves either all of the operation or none of it.
"""

from __future__ import annotations

from typing import Any, Final

from axio_context.lineage import would_cycle
from axio_context.messages import Message
from axio_context.session_metadata import decode_metadata, encode_metadata

from ..errors import TokenTotalError
from . import chunks, hiding, indexing, packing
from .blob_refs import digests_in_range, drop_blob_refs
from .keys import POSITION_MASK, SHIFT, key, now_ms
from .message_rows import decode_row, with_extras
from .packing import FLAG_BLOBS, FLAG_SEALED
from .reading import read_messages
from .runner import drive
from .session_rows import SessionRow, ensure_session, segments, session_row
from .transactions import write_tx

__all__ = [
    "MAX_TOKENS",
    "add_tokens",
    "clear",
    "decode_metadata",
    "delete_session",
    "encode_metadata",
    "fork",
    "get_metadata",
    "get_tokens",
    "pop",
    "set_metadata",
    "set_title",
    "set_tokens",
]


def get_tokens(c: Any, session_id: str) -> tuple[int, int]:
    r = c.execute("SELECT input_tokens, output_tokens FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return (0, 0) if r is None else (int(r[0]), int(r[1]))


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


def fork(c: Any, session_id: str, project: str | None, new_id: str) -> None:
    """A new session sharing the parent's transcript: one row, plus its checkpoints' rows."""
    now = now_ms()
    with write_tx(c):
        drive(c, would_cycle(session_id, new_id))  # a stored session naming new_id above it
        parent = ensure_session(c, session_id, project, now)
        c.execute(
            "INSERT INTO sessions (id, project, parent_id, fork_position, base_sid, base_len, next_position,"
            " created_at, updated_at, preview, preview_pos, input_tokens, output_tokens, est_tokens,"
            " fork_input_tokens, fork_output_tokens)"
            " SELECT ?, project, id, next_position, CASE WHEN next_position > 0 THEN sid END, next_position,"
            " next_position, ?, ?, preview, preview_pos, input_tokens, output_tokens, est_tokens,"
            " input_tokens, output_tokens FROM sessions WHERE sid = ?",
            (new_id, now, now, parent.sid),
        )
        child_sid = c.execute("SELECT sid FROM sessions WHERE id = ?", (new_id,)).fetchone()[0]
        c.execute(
            "INSERT INTO checkpoints (sid, seq, position, summary, tokens_before, tokens_after, summarizer,"
            " created_at, summary_tokens, tokens_at) SELECT ?, seq, position, summary, tokens_before,"
            " tokens_after, summarizer, created_at, summary_tokens, tokens_at FROM checkpoints WHERE sid = ?",
            (child_sid, parent.sid),
        )
        hiding.copy_marks(c, parent.sid, child_sid, parent.next_position)


def _detach_children(c: Any, row: SessionRow, from_position: int | None) -> None:
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
            digests = digests_in_range(c, key(child_sid, lo), key(child_sid, hi))
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
    dest, size = key(dest_sid, 0), chunks.CHUNK
    whole_lo, whole_hi = (lo_key + size - 1) & ~(size - 1), hi_key & ~(size - 1)
    c.execute(
        "INSERT INTO chunks (id, flags, payload) SELECT ? + (id & ?), flags, payload FROM chunks"
        " WHERE id >= ? AND id < ?",
        (dest, POSITION_MASK, whole_lo, whole_hi),
    )
    c.execute(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload)"
        " SELECT ? + (id & ?), role, flags, created_at, tokens, payload FROM messages"
        " WHERE id >= ? AND id < ? AND (NOT flags & ? OR id >= ? AND id < ?) ORDER BY id",
        (dest, POSITION_MASK, lo_key, hi_key, FLAG_SEALED, whole_lo, whole_hi),
    )
    c.execute(
        "INSERT INTO message_extras (id, data) SELECT ? + (id & ?), data FROM message_extras"
        " WHERE id >= ? AND id < ?",
        (dest, POSITION_MASK, lo_key, hi_key),
    )
    src = lo_key >> SHIFT  # the rows' user turns go with them (see axio_context.turns_sql)
    c.execute(
        "INSERT OR REPLACE INTO message_turns (seg, position, turn, created_at, content)"
        " SELECT ?, position, turn, created_at, content FROM message_turns"
        " WHERE seg = ? AND position >= ? AND position < ?",
        (dest_sid, src, lo_key & POSITION_MASK, hi_key - key(src, 0)),
    )
    cut = c.execute(
        "SELECT id, role, flags, created_at, tokens FROM messages WHERE id >= ? AND id < ? AND flags & ?"
        " AND NOT (id >= ? AND id < ?) ORDER BY id",
        (lo_key, hi_key, FLAG_SEALED, whole_lo, whole_hi),
    ).fetchall()
    if not cut:
        return
    reader = chunks.Reader(c)
    copies = []
    for mid, role, flags, created_at, tokens in cut:
        zflags, packed = packing.pack(reader.plain(mid, flags, b""))
        copies.append(
            (dest + (mid & POSITION_MASK), role, flags & FLAG_BLOBS | zflags, created_at, tokens, packed)
        )
    c.executemany(
        "INSERT INTO messages (id, role, flags, created_at, tokens, payload) VALUES (?, ?, ?, ?, ?, ?)",
        copies,
    )


def _delete_own_rows(c: Any, row: SessionRow, from_position: int) -> None:
    lo_key = key(row.sid, max(from_position, row.base_len))
    hi_key = key(row.sid + 1, 0)
    chunks.cut(c, lo_key, hi_key)  # a chunk holding positions below from_position is unsealed
    digests = digests_in_range(c, lo_key, hi_key)
    indexing.delete_index(c, lo_key, hi_key)
    c.execute("DELETE FROM messages WHERE id >= ? AND id < ?", (lo_key, hi_key))
    c.execute("DELETE FROM message_extras WHERE id >= ? AND id < ?", (lo_key, hi_key))
    c.execute("DELETE FROM message_runs WHERE id >= ? AND id < ?", (lo_key, hi_key))
    c.execute("DELETE FROM message_turns WHERE seg = ? AND position >= ?", (row.sid, lo_key & POSITION_MASK))
    chunks.drop(c, lo_key, hi_key)
    drop_blob_refs(c, digests)


def clear(c: Any, session_id: str) -> None:
    """Forget the session's messages, checkpoints and token totals; forks keep their view."""
    with write_tx(c):
        row = session_row(c, session_id)
        if row is None:
            return
        _detach_children(c, row, None)
        _delete_own_rows(c, row, 0)
        hiding.forget_marks(c, row.sid)
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
        row = session_row(c, session_id)
        if row is None or row.next_position == 0:
            return None
        last = row.next_position - 1
        if last >= row.base_len:
            plain = _pop_plain(c, session_id, row, last)
            if plain is not None:
                return plain
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
        hiding.forget_marks(c, row.sid, last)
        _shorten(c, row.sid, last, base_len, spent)
    return message


def _shorten(c: Any, sid: int, last: int, base_len: int, spent: int) -> None:
    """The session row after a pop of position ``last`` (``spent`` tokens): ``last`` messages,
    ``base_len`` of them inherited, its preview dropped when it came from the popped message."""
    c.execute(
        "UPDATE sessions SET next_position = ?, base_len = ?,"
        " base_sid = CASE WHEN ? > 0 THEN base_sid END,"
        " est_tokens = est_tokens - ?, updated_at = ?,"
        " preview = CASE WHEN preview_pos >= ? THEN NULL ELSE preview END,"
        " preview_pos = CASE WHEN preview_pos >= ? THEN NULL ELSE preview_pos END WHERE sid = ?",
        (last, base_len, base_len, spent, now_ms(), last, last, sid),
    )


#: The last position ``:p`` (key ``:k``) of session ``:s`` deleted, and its row given back, when it
#: is plain (not sealed, no media) and nothing beyond the row holds it: a fork reading it, a
#: checkpoint past it, a hidden mark, a run tag, an embedding, a keyword-index entry (a folded
#: row: its removal needs its text). One statement, every probe indexed; the guard as a separate
#: read before the DELETE cost a statement more per pop.
_POP_ROW: Final = f"""
DELETE FROM messages WHERE id = :k AND flags & {FLAG_SEALED | FLAG_BLOBS} = 0
    AND NOT EXISTS (SELECT 1 FROM sessions WHERE base_sid = :s AND base_len > :p)
    AND NOT EXISTS (SELECT 1 FROM checkpoints WHERE sid = :s AND position > :p)
    AND NOT EXISTS (SELECT 1 FROM hidden_messages WHERE sid = :s AND position >= :p)
    AND NOT EXISTS (SELECT 1 FROM message_runs WHERE id = :k)
    AND NOT EXISTS (SELECT 1 FROM message_vectors WHERE id = :k)
    AND NOT EXISTS (SELECT 1 FROM messages_fts WHERE rowid = :k)
RETURNING role, flags, payload, tokens
"""


def _pop_plain(c: Any, session_id: str, row: SessionRow, last: int) -> Message | None:
    """The common pop, a chat app's retry of the message just appended: the session's own last
    row, plain and nothing else holding it (see ``_POP_ROW``), goes in four statements instead of
    the general path's twenty. None (nothing written): not that case."""
    mid = key(row.sid, last)
    found = c.execute(_POP_ROW, {"s": row.sid, "p": last, "k": mid}).fetchone()
    if found is None:
        return None
    role, flags, payload, spent = found
    message = decode_row(role, flags, payload, where=f"session {session_id!r}, position {last}")
    extra = c.execute("DELETE FROM message_extras WHERE id = ? RETURNING data", (mid,)).fetchone()
    if extra is not None:
        message = with_extras(message, extra[0])
    c.execute("DELETE FROM fts_pending WHERE id = ?", (mid,))
    _shorten(c, row.sid, last, row.base_len, int(spent))
    return message


def delete_session(c: Any, session_id: str) -> bool:
    """Delete a session and everything only it uses; forks keep their view. False if absent."""
    with write_tx(c):
        row = session_row(c, session_id)
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


def set_title(c: Any, session_id: str, project: str | None, title: str | None) -> None:
    now = now_ms()
    with write_tx(c):
        ensure_session(c, session_id, project, now)
        c.execute("UPDATE sessions SET title = ?, updated_at = ? WHERE id = ?", (title, now, session_id))


def get_metadata(c: Any, session_id: str) -> dict[str, Any]:
    r = c.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return {} if r is None or r[0] is None else decode_metadata(session_id, r[0])


def set_metadata(c: Any, session_id: str, project: str | None, metadata: dict[str, Any]) -> None:
    now = now_ms()
    data = encode_metadata(metadata)
    with write_tx(c):
        ensure_session(c, session_id, project, now)
        c.execute("UPDATE sessions SET metadata = ?, updated_at = ? WHERE id = ?", (data, now, session_id))
