"""Reading one metadata value of each message of a session's view without decoding the messages.

A bridge that keeps its framework's own item in a message's metadata (openai-agents' JSON) reads
only that back: the ``message_extras`` rows of the view's range, each decoded for its metadata
alone (:func:`~axio_context.codec.extras_metadata`), never the content payloads. A message with
no such value (a compaction summary, a message plain axio code wrote) is decoded whole and given
as the :class:`~axio_context.messages.Message`, so the caller can still make something of it.
"""

from __future__ import annotations

from typing import Any, Final

from axio_context.codec import extras_metadata
from axio_context.context import tail_of_view
from axio_context.errors import CorruptDataError, DecodeError

from . import hiding
from .keys import key
from .reading import decode_summary, latest_checkpoint, read_messages
from .session_rows import ROW_COLUMNS, SessionRow, segments
from .transactions import read_tx

__all__ = ["get_view_metadata"]

_READ_EXTRAS: Final = "SELECT id, data FROM message_extras WHERE id >= ? AND id < ? ORDER BY id"
_ROW: Final = (
    f"SELECT {ROW_COLUMNS}, hidden_count, EXISTS (SELECT 1 FROM checkpoints WHERE sid = sessions.sid)"
    " FROM sessions WHERE id = ?"
)

#: A position whose message holds no value (yet): decoded whole.
_NONE: Final = object()


def get_view_metadata(c: Any, session_id: str, name: str, limit: int | None = None) -> list[Any]:
    """Per message of the view (as :func:`.reading.get_view`, ``limit`` included), its metadata
    value ``name``, or the message itself when it has none."""
    with read_tx(c):
        # the session row, whether it hides positions and whether it has a checkpoint, at once:
        # a plain session's read is then this and one range of message_extras
        r = c.execute(_ROW, (session_id,)).fetchone()
        if r is None or limit == 0:
            return []
        row, hidden, checkpointed = SessionRow(*r[:-2]), r[-2], r[-1]
        cp = latest_checkpoint(c, row.sid) if checkpointed else None
        start = 0 if cp is None else cp[0]
        if limit is not None:
            start = max(start, row.next_position - limit)
        own = _values(c, session_id, row, start, name)
        if hidden:
            own = hiding.drop_hidden(c, row.sid, start, own)
        if cp is None:
            return own
        summary: list[Any] = decode_summary(session_id, cp[1])
        return [*summary, *own] if limit is None else tail_of_view(summary, own, limit)


def _values(c: Any, session_id: str, row: SessionRow, start: int, name: str) -> list[Any]:
    out: list[Any] = []
    for sid, lo, hi in segments(c, row, start):
        lo_key = key(sid, lo)
        first = len(out)
        out.extend([_NONE] * (hi - lo))
        try:
            for mid, data in c.execute(_READ_EXTRAS, (lo_key, key(sid, hi))):
                metadata = extras_metadata(data)
                if metadata is not None:
                    value = metadata.get(name, _NONE)
                    if value is not None:
                        out[first + mid - lo_key] = value
        except DecodeError as exc:
            raise CorruptDataError(f"{session_id!r}: a message's extras do not decode ({exc})") from None
    for i, value in enumerate(out):
        if value is _NONE:  # rare: read and decode that message whole
            position = start + i
            out[i] = read_messages(c, session_id, row, position, position + 1)[0]
    return out
