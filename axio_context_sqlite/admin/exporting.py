"""Exporting sessions through a :class:`TranscriptWriter` (json, jsonl, markdown).

An export runs inside one read transaction: under WAL that is a snapshot no concurrent writer
can tear, and it hands the output to a ``sink`` batch by batch, so memory stays flat however
large the database is.

Exports carry no embeddings (the header's ``"embeddings": false`` says so): they come from the
text and the database's recorded model, take more room than the text, and ``axio-context
reindex`` rebuilds them after an import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

from axio_context.errors import CorruptDataError
from axio_context.transcript import (
    MessageRecord,
    TranscriptWriter,
    format_time,
)
from axio_context.transcript.hidden import Renumbering
from axio_context.transcript.reports import ExportSummary as ExportSummary  # re-exported

from ..store import hiding, transactions
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

Progress = Callable[[int, int], object]
Sink = Callable[[bytes], object]

#: Messages decoded and written per batch during export (bounds its memory; import has its own).
BATCH: Final = 256


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


def export(
    c: Any,
    writer: TranscriptWriter,
    session_ids: Sequence[str] | None,
    sink: Sink,
    progress: Progress | None = None,
    skip_damaged: bool = False,
) -> ExportSummary:
    """Write sessions (all of them when ``session_ids`` is None) to ``sink``, oldest first.

    One read transaction covers the whole export, so it is one consistent snapshot; sessions
    are read one at a time and messages :data:`BATCH` at a time, so memory stays flat.

    A message that does not decode raises CorruptDataError naming it, unless ``skip_damaged``:
    then the export goes on, a placeholder message saying what was left out and why stands at
    its position (so positions, forks' ``inherited`` and checkpoints stay right and the file
    imports), and the summary lists it in ``skipped``.
    """
    with transactions.read_tx(c):
        selected: Iterable[FullRow]
        exported: set[int] | None
        if session_ids is None:
            total, selected = all_full_rows(c)
            exported = None
        else:
            rows = sorted(
                {s.sid: s for s in (full_row(c, i) for i in session_ids)}.values(), key=lambda s: s.sid
            )
            total = sum(s.next_position for s in rows)
            selected = rows
            exported = set()
        done = sessions = messages = 0
        skipped: list[DamagedRow] = []
        sink(writer.begin())
        for s in selected:
            # A self-contained format (markdown) repeats what a fork shares with its parent, but
            # the summary counts each message once, as the lossless formats write it.
            shared = inherited_from_parent(c, s, exported)
            inherited = 0 if writer.self_contained else shared
            # clear_run's hidden messages are not written: numbered as if never there
            numbering = Renumbering(hiding.hidden_in(c, s.sid))
            header = numbering.header(session_header(c, s, inherited))
            sink(writer.session(header))
            done += inherited
            for lo in range(inherited, s.next_position, BATCH):
                hi = min(lo + BATCH, s.next_position)
                batch = _readable(c, s, lo, hi, skipped) if skip_damaged else records(c, s, lo, hi)
                sink(writer.messages(header, numbering.position(lo), batch))
                own = max(lo, shared)
                messages += max(0, hi - own) - len(hiding.hidden_in(c, s.sid, own, hi))
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
    return ExportSummary(sessions=sessions, messages=messages - len(skipped), skipped=skipped)
