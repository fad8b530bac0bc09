"""Exporting sessions through a :class:`TranscriptWriter` (json, jsonl, markdown).

An export runs inside one read transaction: under WAL that is a snapshot no concurrent writer
can tear, and it hands the output to a ``sink`` batch by batch, so memory stays flat however
large the database is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

from axio_context.transcript import (
    TranscriptWriter,
)

from ..store import ops
from .sessions import FULL_COLUMNS, FullRow, full_row, records, session_header

Progress = Callable[[int, int], object]
Sink = Callable[[bytes], object]

#: Messages decoded and written per batch during export and import (bounds an export's memory).
BATCH: Final = 256


class ExportSummary(msgspec.Struct, frozen=True):
    """How much an export wrote."""

    sessions: int
    messages: int


# --- export --------------------------------------------------------------------------------------


def _shared_prefix(c: Any, child: FullRow, parent: FullRow) -> int:
    """How many leading positions of ``child`` are the very rows of ``parent``'s transcript."""
    if child.base_sid is None:
        return 0
    a = ops.segments(c, child, 0, child.base_len)
    b = ops.segments(c, parent, 0, min(child.base_len, parent.next_position))
    shared = i = j = 0
    while i < len(a) and j < len(b):
        if a[i][0] != b[j][0]:
            break
        end = min(a[i][2], b[j][2])
        shared = end
        if a[i][2] == end:
            i += 1
        if b[j][2] == end:
            j += 1
    return shared


def _inherited(c: Any, s: FullRow, exported: set[int] | None) -> int:
    """``inherited`` for ``s``: its prefix shared with a parent exported before it, else 0."""
    if s.base_sid is None or s.parent_id is None:
        return 0
    r = c.execute(f"SELECT {FULL_COLUMNS} FROM sessions WHERE id = ?", (s.parent_id,)).fetchone()
    if r is None:
        return 0
    parent = FullRow(*r)
    # A parent is always older than its fork (smaller sid), and exports go in sid order.
    if parent.sid >= s.sid or (exported is not None and parent.sid not in exported):
        return 0
    return _shared_prefix(c, s, parent)


def export(
    c: Any,
    writer: TranscriptWriter,
    session_ids: Sequence[str] | None,
    sink: Sink,
    progress: Progress | None = None,
) -> ExportSummary:
    """Write sessions (all of them when ``session_ids`` is None) to ``sink``, oldest first.

    One read transaction covers the whole export, so it is one consistent snapshot; sessions
    are read one at a time and messages :data:`BATCH` at a time, so memory stays flat.
    """
    with ops.read_tx(c):
        selected: Iterable[FullRow]
        exported: set[int] | None
        if session_ids is None:
            total = int(c.execute("SELECT COALESCE(SUM(next_position), 0) FROM sessions").fetchone()[0])
            selected = (FullRow(*r) for r in c.execute(f"SELECT {FULL_COLUMNS} FROM sessions ORDER BY sid"))
            exported = None
        else:
            rows = sorted(
                {s.sid: s for s in (full_row(c, i) for i in session_ids)}.values(), key=lambda s: s.sid
            )
            total = sum(s.next_position for s in rows)
            selected = rows
            exported = set()
        done = sessions = messages = 0
        sink(writer.begin())
        for s in selected:
            inherited = 0 if writer.self_contained else _inherited(c, s, exported)
            header = session_header(c, s, inherited)
            sink(writer.session(header))
            done += inherited
            for lo in range(inherited, s.next_position, BATCH):
                hi = min(lo + BATCH, s.next_position)
                sink(writer.messages(header, lo, records(c, s, lo, hi)))
                messages += hi - lo
                done += hi - lo
                if progress is not None:
                    progress(done, total)
            sink(writer.end_session(header))
            sessions += 1
            if exported is not None:
                exported.add(s.sid)
        sink(writer.end())
        if progress is not None:
            progress(total, total)
    return ExportSummary(sessions=sessions, messages=messages)
