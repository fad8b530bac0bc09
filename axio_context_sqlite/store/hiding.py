"""Hidden positions: the messages ``clear_run`` took out of a session's reads.

Positions are immutable (forks and checkpoints point at them) and up to 64 messages share one
sealed chunk row, so clearing a run does not delete its rows: it records ``(sid, position)`` in
``hidden_messages`` for the session that cleared it, and every read of that session (history,
view, show, export, search, the history provider's pages and counts) leaves those positions out.
A fork made before the clear keeps seeing them; a fork made after inherits the marks. The space
comes back with the next ``vacuum`` (:func:`purge_hidden`), which empties every hidden row no
other session reads (or with ``prune``, which deletes whole sessions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar

from axio_context.messages import Message

from . import chunks, indexing
from .blob_refs import digests_in_range, drop_blob_refs
from .keys import key
from .message_rows import encode_message

__all__ = [
    "copy_marks",
    "drop_hidden",
    "forget_marks",
    "hidden_by_session",
    "hidden_count",
    "hidden_in",
    "is_hidden",
    "purge_hidden",
]

T = TypeVar("T")


def hidden_in(c: Any, sid: int, start: int = 0, end: int | None = None) -> list[int]:
    """The hidden positions of session ``sid`` in ``[start, end)``, ascending (one index range)."""
    if end is None:
        rows = c.execute(
            "SELECT position FROM hidden_messages WHERE sid = ? AND position >= ? ORDER BY position",
            (sid, start),
        )
    else:
        rows = c.execute(
            "SELECT position FROM hidden_messages WHERE sid = ? AND position >= ? AND position < ?"
            " ORDER BY position",
            (sid, start, end),
        )
    return [int(r[0]) for r in rows]


def hidden_count(c: Any, sid: int) -> int:
    """How many positions of session ``sid`` are hidden."""
    return int(c.execute("SELECT count(*) FROM hidden_messages WHERE sid = ?", (sid,)).fetchone()[0])


def is_hidden(c: Any, sid: int, position: int) -> bool:
    return (
        c.execute("SELECT 1 FROM hidden_messages WHERE sid = ? AND position = ?", (sid, position)).fetchone()
        is not None
    )


def drop_hidden(c: Any, sid: int, start: int, items: Sequence[T]) -> list[T]:
    """``items`` (positions ``start, start + 1, ...`` of session ``sid``) without the hidden ones."""
    hidden = hidden_in(c, sid, start, start + len(items))
    if not hidden:
        return list(items)
    gone = {p - start for p in hidden}
    return [item for i, item in enumerate(items) if i not in gone]


def copy_marks(c: Any, parent_sid: int, child_sid: int, below: int) -> None:
    """A fork inherits its parent's marks on the positions it shares (``< below``)."""
    c.execute(
        "INSERT OR IGNORE INTO hidden_messages (sid, position)"
        " SELECT ?, position FROM hidden_messages WHERE sid = ? AND position < ?",
        (child_sid, parent_sid, below),
    )


def forget_marks(c: Any, sid: int, from_position: int = 0) -> None:
    """Drop marks at ``from_position`` and after (a clear or pop frees those positions)."""
    c.execute("DELETE FROM hidden_messages WHERE sid = ? AND position >= ?", (sid, from_position))


#: A purged row's payload: a message with no content (its role is kept in the row).
_EMPTY: Final = encode_message(Message(role="user", content=[]))

#: Hidden rows not purged yet that their own session owns (position past the inherited part)
#: and no fork reads (no child inherits that position).
_PURGEABLE: Final = """
SELECT h.sid, h.position FROM hidden_messages h JOIN sessions s ON s.sid = h.sid
WHERE h.purged = 0 AND h.position >= s.base_len AND h.position < s.next_position
    AND NOT EXISTS (SELECT 1 FROM sessions f WHERE f.base_sid = h.sid AND f.base_len > h.position)
"""


def purge_hidden(c: Any) -> int:
    """Empty the payload of every hidden row nothing else reads (run by ``vacuum`` in its
    transaction): its index entries, embedding and media references go, the row and its mark
    stay. Returns how many rows were emptied."""
    rows = c.execute(_PURGEABLE).fetchall()
    for sid, position in rows:
        lo, hi = key(sid, position), key(sid, position) + 1
        chunks.cut(c, lo, hi)  # a sealed row gets its own payload back first
        digests = digests_in_range(c, lo, hi)
        indexing.delete_index(c, lo, hi)
        c.execute(
            "UPDATE messages SET flags = ?, payload = ?, tokens = 0 WHERE id = ?",
            (_EMPTY.flags, _EMPTY.payload, lo),
        )
        drop_blob_refs(c, digests)
        c.execute("DELETE FROM message_runs WHERE id = ?", (lo,))
        c.execute("UPDATE hidden_messages SET purged = 1 WHERE sid = ? AND position = ?", (sid, position))
    return len(rows)


def hidden_by_session(c: Any) -> dict[str, list[int]]:
    """Per session id, the positions ``clear_run`` hid (what an export leaves out), in order."""
    out: dict[str, list[int]] = {}
    for session_id, position in c.execute(
        "SELECT s.id, h.position FROM hidden_messages h JOIN sessions s ON s.sid = h.sid"
        " ORDER BY s.id, h.position"
    ):
        out.setdefault(session_id, []).append(int(position))
    return out
