"""Exporting sessions through a :class:`TranscriptWriter` (json, jsonl, markdown).

An export runs inside one read transaction: under WAL that is a snapshot no concurrent writer
can tear, and it hands the output to a ``sink`` batch by batch, so memory stays flat however
large the database is.

Exports carry no embeddings (the header's ``"embeddings": false`` says so): they come from the
text and the database's recorded model, take more room than the text, and ``axio-context
reindex`` rebuilds them after an import.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, Final

from axio_context.errors import CorruptDataError
from axio_context.transcript import (
    MessageRecord,
    format_time,
)
from axio_context.transcript.exporting import BATCH as BATCH  # re-exported
from axio_context.transcript.exporting import ExportSource
from axio_context.transcript.exporting import Progress as Progress  # re-exported
from axio_context.transcript.exporting import Sink as Sink  # re-exported
from axio_context.transcript.reports import ExportSummary as ExportSummary  # re-exported

from ..store import hiding
from ..store.catalog import (
    FullRow,
    all_full_rows,
    full_row,
    inherited_from_parent,
    records,
    session_header,
    stored_role_and_time,
)
from ..store.checking import DamagedRow, placeholder

# --- export --------------------------------------------------------------------------------------


def _readable(c: Any, s: FullRow, lo: int, hi: int, skipped: list[DamagedRow]) -> list[MessageRecord]:
    """:func:`.sessions.records` of ``[lo, hi)``, a placeholder standing in for each message that
    does not decode (listed in ``skipped``)."""
    try:
        return records(c, s, lo, hi)
    except CorruptDataError:
        pass  # find which: one position at a time
    out: list[MessageRecord] = []
    for p in range(lo, hi):
        try:
            out.extend(records(c, s, p, p + 1))
        except CorruptDataError as exc:
            reason = str(exc).split(": ", 1)[-1]
            skipped.append(DamagedRow(s.id, p, reason))
            role, created = stored_role_and_time(c, s, p)
            what = (
                f"message {p} of session {s.id!r} does not decode and was left out of this export: {reason}"
            )
            m = placeholder(role, what)
            out.append(MessageRecord.of(m, format_time(created)))
    return out


def _selected(c: Any, session_ids: Sequence[str] | None) -> tuple[int, Iterable[FullRow]]:
    if session_ids is None:
        return all_full_rows(c)
    rows = sorted({s.sid: s for s in (full_row(c, i) for i in session_ids)}.values(), key=lambda s: s.sid)
    return sum(s.next_position for s in rows), rows


def _records(c: Any, s: FullRow, lo: int, hi: int, skipped: list[DamagedRow] | None) -> list[MessageRecord]:
    return records(c, s, lo, hi) if skipped is None else _readable(c, s, lo, hi, skipped)


def _hidden(c: Any, s: FullRow) -> list[int]:
    return hiding.hidden_in(c, s.sid)


#: An export's reads on SQLite, each run on the connection's worker thread in the export's one
#: read transaction.
SQLITE_EXPORT: Final = ExportSource(
    _selected,
    inherited_from_parent,
    _hidden,
    session_header,
    _records,
    attrgetter("sid"),
    attrgetter("next_position"),
)
