"""Exporting sessions through a :class:`TranscriptWriter`, written once for every backend.

An export runs inside one read snapshot and hands the output to a ``sink`` batch by batch, so
memory stays flat however large the database is. The loop is a plan (:mod:`axio_context.sql`)
whose every read is the backend's own (:class:`ExportSource`: its rows, lineage and decoding
differ), so the same sessions export byte for byte alike from SQLite and PostgreSQL.

Exports carry no embeddings (the header's ``"embeddings": false`` says so): they come from the
text and the database's recorded model, take more room than the text, and ``axio-context
reindex`` rebuilds them after an import.

With ``blocks``, every memory block follows the sessions, read in the same snapshot through the
blocks store's own dump plan (:func:`axio_context.memory_blocks.transfer_sql.dump_blocks`), and
the file says format version 2 (:mod:`.block_records`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from ..memory_blocks.transfer_sql import dump_blocks
from ..sql import Dialect, Native, Plan
from .hidden import Renumbering
from .records import BLOCKS_VERSION
from .reports import DamagedRow, ExportSummary
from .writers import TranscriptWriter

__all__ = ["BATCH", "ExportSource", "Progress", "Sink", "export"]

#: ``sink(chunk)``: where an export's bytes go.
Sink = Callable[[bytes], object]
#: ``progress(done, total)``.
Progress = Callable[[int, int], object]

#: Messages decoded and written per batch (bounds an export's memory).
BATCH: Final = 256


class ExportSource(NamedTuple):
    """A backend's reads for an export, each run in the export's snapshot with the transaction's
    connection first (on SQLite's worker thread; awaited on PostgreSQL). A session is the
    backend's own row, which :attr:`sid` and :attr:`length` read."""

    #: ``selected(conn, session_ids)``: ``(total positions, sessions oldest first)``, every
    #: session or those named.
    selected: Callable[..., Any]
    #: ``inherited(conn, s, exported)``: how many leading positions ``s`` shares with a parent
    #: already exported (every parent counts when ``exported`` is None).
    inherited: Callable[..., Any]
    #: ``hidden(conn, s)``: the positions ``clear_run`` hid from ``s``, ascending.
    hidden: Callable[..., Any]
    #: ``header(conn, s, inherited)``: the session's :class:`SessionHeader`.
    header: Callable[..., Any]
    #: ``records(conn, s, lo, hi, skipped)``: the records at ``[lo, hi)``; with a ``skipped``
    #: list, a message that does not decode becomes a placeholder listed there.
    records: Callable[..., Any]
    #: The session's internal number (sessions export in its order: a parent before its forks).
    sid: Callable[[Any], int]
    #: How many positions the session's transcript has (hidden ones included).
    length: Callable[[Any], int]


def export(
    d: Dialect,
    src: ExportSource,
    writer: TranscriptWriter,
    session_ids: Sequence[str] | None,
    sink: Sink,
    progress: Progress | None = None,
    skip_damaged: bool = False,
    blocks: bool = False,
) -> Plan[ExportSummary]:
    """Write sessions (all of them when ``session_ids`` is None) to ``sink``, oldest first.

    A self-contained format (markdown) repeats what a fork shares with its parent, but the
    summary counts each message once, as the lossless formats write it. ``clear_run``'s hidden
    messages are not written: the rest are numbered as if they had never been there. With
    ``blocks``, every memory block follows the sessions (read first, in the same snapshot).
    """
    rows = (yield from dump_blocks(d)) if blocks else []
    if rows:  # without blocks, the file is the version 1 file it always was
        writer.version = BLOCKS_VERSION
    total, selected = yield Native(src.selected, (session_ids,))
    exported: set[int] | None = None if session_ids is None else set()
    done = sessions = messages = 0
    skipped: list[DamagedRow] | None = [] if skip_damaged else None
    sink(writer.begin())
    for s in selected:
        shared = yield Native(src.inherited, (s, exported))
        inherited = 0 if writer.self_contained else shared
        numbering = Renumbering((yield Native(src.hidden, (s,))))
        header = numbering.header((yield Native(src.header, (s, inherited))))
        sink(writer.session(header))
        done += inherited
        length = src.length(s)
        for lo in range(inherited, length, BATCH):
            hi = min(lo + BATCH, length)
            batch = yield Native(src.records, (s, lo, hi, skipped))
            sink(writer.messages(header, numbering.position(lo), batch))
            own = max(lo, shared)
            messages += max(0, hi - own) - sum(1 for p in numbering.hidden if own <= p < hi)
            done += hi - lo
            if progress is not None:
                progress(done, total)
        sink(writer.end_session(header))
        sessions += 1
        if exported is not None:
            exported.add(src.sid(s))
    if rows:
        sink(writer.blocks(rows))
    sink(writer.end())
    if progress is not None:
        progress(total, total)
    lost = [] if skipped is None else skipped
    return ExportSummary(sessions=sessions, messages=messages - len(lost), skipped=lost, blocks=len(rows))
