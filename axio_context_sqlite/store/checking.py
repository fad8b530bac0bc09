"""Finding damage in a database (``check``) and moving undecodable rows aside (``quarantine``).

A row that no longer decodes (written by an older version, or hit by a disk fault) must not take
the rest down: reading it raises a CorruptDataError naming its session and position, an export
leaves it out (:mod:`.exporting`), and :func:`check` lists every such row together with the
other problems cheap to find: SQLite's ``PRAGMA quick_check``, sessions whose stored rows do not
fill their positions, and the keyword index's own integrity check.

**Quarantine keeps positions.** :func:`quarantine` copies each damaged row, raw, into the
``quarantine`` table (session, position, the stored bytes, the reason) and puts in its place a
placeholder message (one text block saying what happened, the row's role kept when readable),
in one write transaction. Renumbering the session instead would shift every later position,
which forks (``fork_position``, ``base_len``) and checkpoints (``position``) point at; a
placeholder keeps all of them right and the session readable and exportable. A damaged sealed
chunk holds 64 messages: it is quarantined whole (one row, ``count`` 64) and each of its
positions gets a placeholder. Media a damaged row referenced stays in ``blobs`` (its digests can
no longer be read, so its references are never released: space, never data, is lost), and
words the keyword index took from the row before it broke stay findable, pointing at the
placeholder. The quarantined rows can be listed with their raw bytes (:func:`quarantined`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final, cast

import msgspec

from axio_context.blocks import TextBlock
from axio_context.codec import decode_content
from axio_context.errors import CorruptDataError
from axio_context.lineage import cycles, describe
from axio_context.messages import Message, Role
from axio_context.transcript.reports import DamagedRow as DamagedRow  # re-exported

from . import chunks, keys, message_rows, transactions
from .chunks import CHUNK, chunk_of
from .message_rows import ROLE_NAMES, encode_message
from .packing import FLAG_BLOBS, FLAG_SEALED, ROW_ERRORS

__all__ = [
    "CheckReport",
    "DamagedRow",
    "QuarantinedRow",
    "after_moving",
    "check",
    "placeholder",
    "quarantine",
    "quarantined",
]

#: Rows read per query while scanning (bounds memory).
_SCAN: Final = 512
#: Problems of one kind listed in full; the rest are counted.
_LISTED: Final = 1000


class CheckReport(msgspec.Struct, frozen=True):
    """What :func:`check` found; ``ok`` when no problem remains (every damaged row found was
    ``moved`` to the quarantine, if any, and nothing else is wrong)."""

    ok: bool
    quick_check: list[str]  # SQLite's findings; empty when it says "ok"
    damaged: list[DamagedRow]  # rows that do not decode, as found
    problems: list[str]  # anything else: positions without rows, the keyword index
    quarantined: int  # rows held in the quarantine (not problems: moved aside)
    messages_checked: int
    moved: list[DamagedRow] = msgspec.field(default_factory=list)  # by this run (``quarantine``)


def after_moving(report: CheckReport, moved: list[DamagedRow]) -> CheckReport:
    """``report`` once ``moved`` (of its damaged rows) went to the quarantine."""
    left = [d for d in report.damaged if d not in moved]
    ok = not (report.quick_check or report.problems or left)
    held = report.quarantined + len(moved)
    return msgspec.structs.replace(report, ok=ok, moved=moved, quarantined=held)


class QuarantinedRow(msgspec.Struct, frozen=True):
    """A row moved aside by :func:`quarantine`, with the bytes it was stored as."""

    id: int
    session_id: str
    position: int
    count: int
    kind: str
    role: int | None
    flags: int
    created_at: int | None
    payload: bytes
    reason: str
    quarantined_at: int


def placeholder(role: int | None, what: str) -> Message:
    """The message that stands in for one that cannot be read (role kept when it is valid)."""
    name = ROLE_NAMES[role] if role is not None and 0 <= role < len(ROLE_NAMES) else "user"
    return Message(role=cast(Role, name), content=[TextBlock(text=f"[axio-context: {what}]")])


def _names(c: Any) -> dict[int, str]:
    return {int(sid): str(i) for sid, i in c.execute("SELECT sid, id FROM sessions")}


def _owner(names: dict[int, str], mid: int) -> tuple[str, int]:
    sid, position = mid >> keys.SHIFT, mid & ((1 << keys.SHIFT) - 1)
    # Rows of a deleted session that forks still read stay under its internal number.
    return names.get(sid, f"(deleted session #{sid})"), position


def _blobs(c: Any) -> Any:
    """``fetch(digests)`` for :func:`.packing.restore_media` that only checks the blobs exist
    (their bytes, possibly megabytes, are not read: the restored message is thrown away)."""

    def fetch(digests: list[bytes]) -> dict[bytes, bytes]:
        found = (c.execute("SELECT 1 FROM blobs WHERE hash = ?", (d,)).fetchone() for d in digests)
        return {d: b"" for d, r in zip(digests, found, strict=True) if r is not None}

    return fetch


def _row_problem(
    c: Any, reader: chunks.Reader, mid: int, role: int, flags: int, payload: bytes
) -> str | None:
    """Why row ``mid`` does not decode, or None when it does (a damaged chunk raises)."""
    if flags & FLAG_SEALED:
        entries = reader.find(chunk_of(mid))
        if entries is None:
            return "sealed, and its chunk is missing"
        _, eflags, raw = entries[mid - chunk_of(mid)]
        try:
            content = decode_content(bytes(raw))
            if eflags & FLAG_BLOBS:
                message_rows.restore_media(content, _blobs(c)(message_rows.media_digests(content)), "")
        except (*ROW_ERRORS, CorruptDataError) as exc:
            return f"stored message does not decode ({str(exc).lstrip(': ')})"
        return None if 0 <= role < len(ROLE_NAMES) else f"unknown role code {role}"
    if not 0 <= role < len(ROLE_NAMES):
        return f"unknown role code {role}"
    try:
        message_rows.decode_row(role, flags, payload, _blobs(c))
    except CorruptDataError as exc:
        return str(exc).lstrip(": ")
    return None


def _damaged(c: Any, names: dict[int, str], counted: list[int]) -> Iterator[DamagedRow]:
    """Every row that does not decode, in key order; ``counted[0]`` gets the rows read."""
    reader = chunks.Reader(c)
    bad_chunks: set[int] = set()
    last = -1
    while True:
        rows = c.execute(
            "SELECT id, role, flags, payload FROM messages WHERE id > ? ORDER BY id LIMIT ?", (last, _SCAN)
        ).fetchall()
        if not rows:
            return
        for mid, role, flags, payload in rows:
            counted[0] += 1
            if flags & FLAG_SEALED and chunk_of(mid) in bad_chunks:
                continue
            try:
                why = _row_problem(c, reader, mid, role, flags, payload)
            except CorruptDataError as exc:  # the chunk itself is damaged: one entry for it
                bad_chunks.add(chunk_of(mid))
                session, first = _owner(names, chunk_of(mid))
                reason = str(exc).split(": ", 1)[-1]
                yield DamagedRow(session, first, reason, count=CHUNK, kind="chunk")
                continue
            if why is not None:
                yield DamagedRow(*_owner(names, mid), why)
        last = rows[-1][0]


def _unfilled(c: Any) -> list[str]:
    """Sessions whose own positions are not each one stored row (cheap: one range count each)."""
    out = []
    for i, sid, base_len, end in c.execute("SELECT id, sid, base_len, next_position FROM sessions"):
        if end <= base_len:
            continue
        have = c.execute(
            "SELECT COUNT(*) FROM messages WHERE id >= ? AND id < ?",
            (keys.key(sid, base_len), keys.key(sid, end)),
        ).fetchone()[0]
        if have != end - base_len:
            out.append(f"session {i!r}: positions {base_len}..{end - 1} have {have} stored rows")
    return out


def _fts_problem(c: Any) -> str | None:
    """FTS5's own integrity check of the keyword index; it takes the write lock, so a database
    open read-only (or busy) skips it, saying so."""
    try:
        with transactions.write_tx(c):
            c.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 0)")
    except Exception as exc:
        text = str(exc)
        if "malformed" in text or "corrupt" in text:
            return f"keyword index: {text} (run `axio-context reindex`, or restore a backup)"
        return None  # not checked (read-only, locked): not a finding
    return None


def _cycles(c: Any) -> list[str]:
    """Sessions that are their own ancestors through parents and owners (an import of an earlier
    version let them in): they belong to no tree, so the tree listing and the browser miss them."""
    links = {
        str(i): (p, o)
        for i, p, o in c.execute(
            "SELECT id, parent_id, owner_id FROM sessions WHERE parent_id IS NOT NULL OR owner_id IS NOT NULL"
        )
    }
    return [
        f"lineage cycle: {describe(cycle)} (each is its own ancestor, so no tree shows them;"
        " rm one of them breaks it)"
        for cycle in cycles(links)
    ]


def check(c: Any) -> CheckReport:
    """Scan the whole database for damage (see the module docstring); reads, never changes."""
    quick = [str(r[0]) for r in c.execute("PRAGMA quick_check").fetchall()]
    quick = [] if quick == ["ok"] else quick
    counted = [0]
    with transactions.read_tx(c):
        names = _names(c)
        damaged: list[DamagedRow] = []
        for row in _damaged(c, names, counted):
            damaged.append(row)
        problems = _unfilled(c) + _cycles(c)
        moved = int(c.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0])
    fts = _fts_problem(c)
    if fts is not None:
        problems.append(fts)
    ok = not (quick or damaged or problems)
    return CheckReport(ok, quick[:_LISTED], damaged, problems[:_LISTED], moved, counted[0])


def _move_row(c: Any, d: DamagedRow, mid: int, now: int) -> bool:
    r = c.execute("SELECT role, flags, created_at, payload FROM messages WHERE id = ?", (mid,)).fetchone()
    if r is None:
        return False
    role, flags, created, payload = r
    if _row_problem(c, chunks.Reader(c), mid, role, flags, payload) is None:
        return False  # not damaged (any more): nothing to move
    c.execute(
        "INSERT INTO quarantine (session_id, position, count, kind, row_id, role, flags, created_at,"
        " payload, reason, quarantined_at) VALUES (?, ?, 1, 'message', ?, ?, ?, ?, ?, ?, ?)",
        (d.session_id, d.position, mid, role, flags, created, payload, d.reason, now),
    )
    _put_placeholder(c, mid, role, f"message {d.position} of session {d.session_id!r} was quarantined")
    return True


def _move_chunk(c: Any, d: DamagedRow, first: int, now: int) -> bool:
    r = c.execute("SELECT flags, payload FROM chunks WHERE id = ?", (first,)).fetchone()
    if r is None:
        return False
    try:
        chunks.Reader(c).find(first)
        return False  # it decodes now
    except CorruptDataError:
        pass
    c.execute(
        "INSERT INTO quarantine (session_id, position, count, kind, row_id, role, flags, created_at,"
        " payload, reason, quarantined_at) VALUES (?, ?, ?, 'chunk', ?, NULL, ?, NULL, ?, ?, ?)",
        (d.session_id, d.position, CHUNK, first, r[0], r[1], d.reason, now),
    )
    sealed = c.execute(
        "SELECT id, role FROM messages WHERE id >= ? AND id < ? AND flags & ?",
        (first, first + CHUNK, FLAG_SEALED),
    ).fetchall()
    for mid, role in sealed:
        what = f"message {d.position + (mid - first)} of session {d.session_id!r} was quarantined"
        _put_placeholder(c, mid, role, what)
    c.execute("DELETE FROM chunks WHERE id = ?", (first,))
    return True


def _put_placeholder(c: Any, mid: int, role: int, what: str) -> None:
    e = encode_message(placeholder(role, what + " (`axio-context check --list-quarantine` shows it)"))
    c.execute(
        "UPDATE messages SET role = ?, flags = ?, payload = ? WHERE id = ?", (e.role, e.flags, e.payload, mid)
    )


def quarantine(c: Any, found: list[DamagedRow]) -> list[DamagedRow]:
    """Move the rows :func:`check` found to the quarantine (see the module docstring), in one
    write transaction; each is checked again first, so only rows still damaged move. Returns them."""
    moved: list[DamagedRow] = []
    with transactions.write_tx(c):
        sids = {i: sid for sid, i in _names(c).items()}
        now = keys.now_ms()
        for d in found:
            sid = sids.get(d.session_id)
            if sid is None and d.session_id.startswith("(deleted session #"):
                sid = int(d.session_id[len("(deleted session #") : -1])
            if sid is None:
                continue
            mid = keys.key(sid, d.position)
            if (d.kind == "chunk" and _move_chunk(c, d, mid, now)) or (
                d.kind == "message" and _move_row(c, d, mid, now)
            ):
                moved.append(d)
    return moved


def quarantined(c: Any) -> list[QuarantinedRow]:
    """Every row moved to the quarantine, oldest first, with its raw bytes."""
    rows = c.execute(
        "SELECT id, session_id, position, count, kind, role, flags, created_at, payload, reason,"
        " quarantined_at FROM quarantine ORDER BY id"
    ).fetchall()
    return [QuarantinedRow(*r) for r in rows]
