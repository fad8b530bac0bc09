"""How an export writes a session whose messages ``clear_run`` hid: as if they were never there.

Every reader leaves a cleared run out, and an export is a reader: the hidden messages are not
written, and so that the file stays one a reader accepts (``message_count`` messages, dense
positions), the session is numbered as its visible messages. A stored position ``p`` is
exported as ``p`` minus the hidden positions below it; ``message_count``, ``inherited``,
``fork_position`` and the checkpoints' positions follow. A session with nothing hidden is
written exactly as before. Both backends use these, so their exports stay byte-identical.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Sequence

import msgspec

from .records import SessionHeader

__all__ = ["Renumbering", "shared_visible"]


class Renumbering:
    """Stored positions to exported ones, given a session's hidden positions."""

    def __init__(self, hidden: Sequence[int]) -> None:
        self.hidden = sorted(hidden)

    def position(self, stored: int) -> int:
        """The exported position of stored position ``stored`` (visible or not)."""
        return stored - bisect_left(self.hidden, stored)

    def header(self, header: SessionHeader) -> SessionHeader:
        """``header`` (with the stored counts and positions) renumbered."""
        if not self.hidden:
            return header
        return msgspec.structs.replace(
            header,
            message_count=self.position(header.message_count),
            inherited=self.position(header.inherited),
            fork_position=None if header.fork_position is None else self.position(header.fork_position),
            checkpoints=[
                msgspec.structs.replace(cp, position=self.position(cp.position)) for cp in header.checkpoints
            ],
        )


def shared_visible(shared: int, mine: Collection[int], parents: Collection[int]) -> int:
    """How much of a ``shared`` stored prefix a fork can take from its parent's exported record:
    up to the first position hidden on one side only (the record lacks what the fork shows, or
    has what the fork hides)."""
    differ = [p for p in set(mine).symmetric_difference(parents) if p < shared]
    return min(differ, default=shared)
