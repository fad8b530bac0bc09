"""A transcript's user turns, written once for every SQL backend (the ``message_turns`` table).

A turn starts at a user message. Its row is keyed as the message's own row is, ``(seg,
position)``: the segment holding it (SQLite: the session whose rows hold it; PostgreSQL: its
segment). A fork inherits its parent's rows below its fork point and so their turns, with nothing
copied; each backend moves or drops a turn row wherever it moves or drops its message's row (pop,
clear, delete). A turn's ``turn`` (its number from 1) is the same in every transcript that sees it,
since they all share the prefix before it. The rows of a session's append go in the append's
transaction, so a crash never leaves a message without its turn or a turn without its message.
``content`` is what the user wrote: sealed on a backend that encrypts on the client.

Every read starts from the session's segments ``(seg, lo, hi)`` (the backend's lineage walk, a
few indexed rows) and looks each up by its primary key or its ``(seg, turn)`` index: a turn by
number, the last turn, or the turns at a few positions cost the same at 1,000 items as at 100,000.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Generic, NamedTuple, TypeVar

from .catalog.expiry_sql import expired, purge_if_expired, touch
from .copying.rows import TurnRow
from .expiry import now_ms
from .messages import Message
from .sealing import TEXT_MARK
from .sql import Dialect, Execute, ExecuteMany, Native, Plan, Row, Rows, Runner, Value
from .tokens import DefaultEstimator, TokenCounter
from .usage_limits import sql as usage_plans
from .usage_limits.records import UsageRecord

__all__ = ["Turn", "TurnIndexCalls", "dump_turns", "load_turn", "turn_run"]

H = TypeVar("H")
#: A session's segments: ``(seg, lo, hi)``, positions ``[lo, hi)`` held by ``seg``, oldest first.
Segments = list[tuple[int, int, int]]

_COLUMNS: Final = "turn, position, created_at, content"
_IN_RANGE: Final = "seg = ? AND position >= ? AND position < ?"
_LAST: Final = f"SELECT turn FROM message_turns WHERE {_IN_RANGE} ORDER BY position DESC LIMIT 1"
_RANGE: Final = f"SELECT {_COLUMNS} FROM message_turns WHERE {_IN_RANGE}"
#: By the ``(seg, turn)`` index (a covering lookup of the position), then the row by its key: asked
#: for the row in one go, SQLite's planner took the primary key's range, every turn of the segment.
_NUMBER: Final = (
    f"SELECT {_COLUMNS} FROM message_turns WHERE (seg, position) = (SELECT seg, position"
    " FROM message_turns WHERE turn = ? AND seg = ? AND +position >= ? AND +position < ?)"
)
_INSERT: Final = (
    "INSERT INTO message_turns (seg, position, turn, created_at, content) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (seg, position) DO UPDATE SET turn = excluded.turn,"
    " created_at = excluded.created_at, content = excluded.content"
)
_STALE: Final = "DELETE FROM message_turns WHERE seg = ? AND position >= ?"
_DROP: Final = "DELETE FROM message_turns WHERE seg = ? AND position = ?"
_ADOPT: Final = (
    "INSERT INTO message_turns (seg, position, turn, created_at, content) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (seg, position) DO NOTHING"
)


class Turn(NamedTuple):
    """A user turn: its number (from 1), its user message's position, when it was written (ms
    since the epoch) and the message's content as JSON text."""

    turn: int
    position: int
    created_at: int
    content: str


def turn_run(session_id: str, turn: Turn) -> str:
    """The run id a usage record of ``turn`` carries: the turn's position and time (a turn popped
    and made again at the same position is another one)."""
    return f"{session_id}/turn/{turn.position}.{turn.created_at}"


def _named(session_id: str, run: str) -> tuple[int, int] | None:
    """The ``(position, created_at)`` a :func:`turn_run` of this session names, or None."""
    prefix = f"{session_id}/turn/"
    pos, _, made = run[len(prefix) :].partition(".")
    return (int(pos), int(made)) if run.startswith(prefix) and pos.isdigit() and made.isdigit() else None


def _segments(d: Dialect, segments: Callable[..., Any], session_id: str) -> Plan[Segments]:
    """The session's segments; none when it does not exist or has expired."""
    if (yield from expired(d, session_id, now_ms())):
        return []
    found: Segments = yield Native(segments, (session_id,))
    return found


def _last(d: Dialect, segs: Segments, end: int | None = None) -> Plan[int]:
    """The number of the last turn before position ``end`` (None: the end); 0 for none."""
    for seg, lo, hi in reversed(segs):
        hi = hi if end is None else min(hi, end)
        if hi > lo:
            number = yield Value(_LAST, (seg, lo, hi))
            if number is not None:
                return int(number)
    return 0


def _turns_of(rows: Sequence[Sequence[Any]]) -> list[Turn]:
    return [Turn(int(r[0]), int(r[1]), int(r[2]), str(r[3])) for r in rows]


def _append(
    d: Dialect,
    append: Callable[..., Any],
    segments: Callable[..., Any],
    delete: Callable[..., Any],
    session_id: str,
    project: str | None,
    batch: Any,
    turns: Sequence[tuple[int, str]],
    ttl_ms: int | None,
) -> Plan[int]:
    now = now_ms()
    yield from purge_if_expired(d, session_id, delete, now)  # an expired session starts afresh
    seg, first = yield Native(append, (session_id, project, batch))  # the new rows' segment
    # Rows past the old end are stale (a pop through a path that leaves them, a crash after it):
    # the new messages' positions are theirs now.
    yield Execute(_STALE, (seg, first))
    if turns:
        number = yield from _last(d, (yield Native(segments, (session_id,))), first)
        rows = [
            (seg, first + i, number + n, now, d.sealed(content)) for n, (i, content) in enumerate(turns, 1)
        ]
        yield ExecuteMany(_INSERT, rows)
    if ttl_ms is not None:
        yield from touch(d, session_id, ttl_ms, now)
    return int(first)


def _length(d: Dialect, segments: Callable[..., Any], session_id: str) -> Plan[int]:
    segs = yield from _segments(d, segments, session_id)
    return segs[-1][2] if segs else 0


def _count(d: Dialect, segments: Callable[..., Any], session_id: str) -> Plan[int]:
    return (yield from _last(d, (yield from _segments(d, segments, session_id))))


def _newest(d: Dialect, segments: Callable[..., Any], session_id: str) -> Plan[Turn | None]:
    for seg, lo, hi in reversed((yield from _segments(d, segments, session_id))):
        row = yield Row(f"{_RANGE} ORDER BY position DESC LIMIT 1", (seg, lo, hi))
        if row is not None:
            return _turns_of([row])[0]
    return None


def _list(
    d: Dialect, segments: Callable[..., Any], session_id: str, contains: str | None
) -> Plan[list[Turn]]:
    where, extra = "", []
    if contains is not None:  # a content sealed on the client (see .sealing) is the caller's to check
        # the mark is a constant in the text, not an argument: under a key, an argument that
        # begins as a sealed value is refused (see axio_context_postgres.sealed)
        where = f" AND ({d.contains('content')} OR content LIKE '{TEXT_MARK}%')"
        extra = [d.contains_arg(contains)]
    out: list[Turn] = []
    for seg, lo, hi in (yield from _segments(d, segments, session_id)):
        out += _turns_of((yield Rows(f"{_RANGE}{where} ORDER BY position", (seg, lo, hi, *extra))))
    return out


def _numbered(d: Dialect, segments: Callable[..., Any], session_id: str, number: int) -> Plan[Turn | None]:
    for seg, lo, hi in (yield from _segments(d, segments, session_id)):
        row = yield Row(_NUMBER, (number, seg, lo, hi))
        if row is not None:
            return _turns_of([row])[0]
    return None


def _at(d: Dialect, segments: Callable[..., Any], session_id: str, positions: list[int]) -> Plan[list[Turn]]:
    out: list[Turn] = []
    for seg, lo, hi in (yield from _segments(d, segments, session_id)):
        wanted = [p for p in positions if lo <= p < hi]
        if wanted:
            where = d.any_of("position", "integer")
            out += _turns_of((yield Rows(f"{_RANGE} AND {where}", (seg, lo, hi, d.list_arg(wanted)))))
    return sorted(out, key=lambda t: t.position)


def _usage(
    d: Dialect, segments: Callable[..., Any], statements: Any, session_id: str, limit: int
) -> Plan[list[tuple[Turn, UsageRecord]]]:
    records = yield from usage_plans.records(d, statements, session_id, None, limit)  # newest first
    named = [(_named(session_id, r.run), r) for r in records]
    positions = sorted({n[0] for n, _ in named if n is not None})
    turns = {t.position: t for t in (yield from _at(d, segments, session_id, positions))} if positions else {}
    newest: dict[int, tuple[Turn, UsageRecord]] = {}
    for n, record in named:
        turn = None if n is None else turns.get(n[0])
        if turn is not None and n is not None and turn.created_at == n[1] and turn.turn not in newest:
            newest[turn.turn] = (turn, record)
    return [newest[k] for k in sorted(newest)]


def _usage_of(
    d: Dialect, segments: Callable[..., Any], statements: Any, session_id: str, number: int
) -> Plan[UsageRecord | None]:
    turn = yield from _numbered(d, segments, session_id, number)
    if turn is None:
        return None
    found = yield from usage_plans.records(d, statements, session_id, turn_run(session_id, turn), 1)
    return found[0] if found else None


def _adopt(
    d: Dialect, segments: Callable[..., Any], session_id: str, turns: Sequence[tuple[int, int, str]]
) -> Plan[int]:
    segs = yield from _segments(d, segments, session_id)
    rows = []
    for number, (position, created_at, content) in enumerate(sorted(turns), 1):
        seg = next((s for s, lo, hi in segs if lo <= position < hi), None)
        if seg is not None:
            rows.append((seg, position, number, created_at, d.sealed(content)))
    if rows:
        yield ExecuteMany(_ADOPT, rows)
    return len(rows)


def _extend(
    d: Dialect,
    segments: Callable[..., Any],
    session_id: str,
    start: int,
    end: int,
    turns: Sequence[tuple[int, int, str]],
) -> Plan[bool]:
    """Index the user messages ``turns`` (``(position, created ms, content)``) found in positions
    ``[start, end)``, numbered on from the last turn before ``start``: missing rows added, rows
    numbered otherwise renumbered (their times kept), rows of another message (a pop left them,
    and the position was taken again) made anew or dropped. False, nothing written, when the
    session no longer ends at ``end`` (it changed since its messages were read)."""
    yield Value(f"SELECT sid FROM sessions WHERE id = ?{d.lock_rows}", (session_id,))  # vs appends
    segs = yield from _segments(d, segments, session_id)
    if not segs or segs[-1][2] != end:
        return False
    have: dict[int, tuple[int, Turn]] = {}
    for seg, lo, hi in segs:
        if max(lo, start) < hi:
            found = _turns_of((yield Rows(_RANGE, (seg, max(lo, start), hi))))
            have |= {t.position: (seg, t) for t in found}
    before = yield from _last(d, segs, start)
    rows = []
    for number, (position, created_at, content) in enumerate(sorted(turns), before + 1):
        into = next((s for s, lo, hi in segs if lo <= position < hi), None)
        old = have.pop(position)[1] if position in have else None
        if into is not None and (old is None or (old.turn, old.content) != (number, content)):
            made = created_at if old is None or old.content != content else old.created_at
            rows.append((into, position, number, made, d.sealed(content)))
    if have:  # rows of messages that are no user turn now
        yield ExecuteMany(_DROP, [(seg, position) for position, (seg, _) in have.items()])
    if rows:
        yield ExecuteMany(_INSERT, rows)
    return True


def dump_turns(d: Dialect, segments: Callable[..., Any]) -> Plan[list[TurnRow]]:
    """For ``copy``: every live session's turns as it reads them, by session id and position
    (a fork's include its parent's before the fork point, so each maps on its own)."""
    if (yield Value("SELECT 1 FROM message_turns LIMIT 1")) is None:
        return []
    out: list[TurnRow] = []
    for (session_id,) in (yield Rows(f"SELECT id FROM sessions ORDER BY {d.by_code_point('id')}")):
        for t in (yield from _list(d, segments, session_id, None)):
            out.append(TurnRow(session_id, t.position, t.turn, t.created_at, t.content))
    return out


def load_turn(d: Dialect, segments: Callable[..., Any], row: TurnRow) -> Plan[bool]:
    """For ``copy``: a turn into the row holding its message's position (the copied session's,
    or its parent's when it is a fork's), sealed if this database seals; False when the session
    or the position is not here. A row already there (a fork's parent's) stays."""
    segs = yield from _segments(d, segments, row.session_id)
    seg = next((s for s, lo, hi in segs if lo <= row.position < hi), None)
    if seg is None:
        return False
    yield Execute(_ADOPT, (seg, row.position, row.turn, row.created_at, d.sealed(row.content)))
    return True


class TurnIndexCalls(Generic[H]):
    """The user turns of sessions on ``handle`` (a backend's connection or pool), the same on
    every backend. ``project`` files sessions an append creates (None: the current directory's
    resolved path, as the session stores do).

    The backend's index says which runner it runs on (:meth:`_runner`), how it prepares a batch
    of messages (:meth:`_batch`), its usage statements (:meth:`_usage_statements`), and gives
    three functions run inside a plan's transaction with the connection first:
    :meth:`_append_fn` (``session_id, project, batch`` -> the segment holding the new rows and
    the first new position), :meth:`_segments_fn` (``session_id`` -> its segments, oldest first;
    none when absent) and :meth:`_delete_fn` (``session_id``: delete an expired session, as its
    store would)."""

    def __init__(self, handle: H, *, project: str | None = None, token_counter: TokenCounter | None = None):
        self._handle = handle
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    def _runner(self) -> Runner:
        raise NotImplementedError

    def _batch(self, messages: list[Message]) -> Any:
        raise NotImplementedError

    def _append_fn(self) -> Callable[..., Any]:
        raise NotImplementedError

    def _segments_fn(self) -> Callable[..., Any]:
        raise NotImplementedError

    def _delete_fn(self) -> Callable[..., Any]:
        raise NotImplementedError

    def _usage_statements(self) -> Any:
        """The backend's usage statements (:class:`~axio_context.usage_limits.sql.UsageStatements`)."""
        raise NotImplementedError

    async def _appended(self) -> None:
        """What the backend does after an append's commit (SQLite: fold its keyword-index queue when due)."""

    async def append(
        self,
        session_id: str,
        messages: list[Message],
        turns: Sequence[tuple[int, str]],
        *,
        ttl_ms: int | None = None,
    ) -> int:
        """Append ``messages`` to the session (created if new) and a turn for each ``(index in
        the batch, content as JSON text)`` of ``turns``, in one transaction. ``ttl_ms``: the
        session's TTL starts again (as a write through a store with a TTL). The first new
        message's position (the session's length before: -1 for no messages)."""
        if not messages:
            return -1
        fns = (self._append_fn(), self._segments_fn(), self._delete_fn())
        batch = self._batch(messages)
        first = await self._runner().write(
            _append, *fns, session_id, self._project, batch, list(turns), ttl_ms
        )
        await self._appended()
        return int(first)

    async def length(self, session_id: str) -> int:
        """How many messages the session's transcript has (0: none, or no such session), from
        its lineage walk alone (a few indexed rows)."""
        return await self._runner().read(_length, self._segments_fn(), session_id)

    async def count(self, session_id: str) -> int:
        """How many turns the session's transcript has (its last one's number)."""
        return await self._runner().read(_count, self._segments_fn(), session_id)

    async def turns(self, session_id: str, contains: str | None = None) -> list[Turn]:
        """The session's turns in order; with ``contains``, only those whose content holds that
        text anywhere, case ignored (a superset: the caller checks the text it wants)."""
        return await self._runner().read(_list, self._segments_fn(), session_id, contains)

    async def turn(self, session_id: str, number: int) -> Turn | None:
        """Turn ``number`` of the session, or None."""
        return await self._runner().read(_numbered, self._segments_fn(), session_id, number)

    async def last(self, session_id: str) -> Turn | None:
        """The session's newest turn, or None."""
        return await self._runner().read(_newest, self._segments_fn(), session_id)

    async def at(self, session_id: str, positions: Sequence[int]) -> list[Turn]:
        """The session's turns whose user messages are at ``positions`` (those that are turns)."""
        return await self._runner().read(_at, self._segments_fn(), session_id, sorted(set(positions)))

    async def usage(self, session_id: str, *, limit: int = 10**6) -> list[tuple[Turn, UsageRecord]]:
        """Each turn of the session with usage recorded under its :func:`turn_run` (the newest
        record of it; a popped turn's records name no turn), by turn, in one read: its latest
        ``limit`` usage records and an indexed lookup of the turns they name."""
        return await self._runner().read(
            _usage, self._segments_fn(), self._usage_statements(), session_id, limit
        )

    async def usage_of(self, session_id: str, number: int) -> UsageRecord | None:
        """The newest usage record of turn ``number`` of the session (None: no such turn, or none
        recorded), in one read: the turn by its index, its record by its run id's."""
        statements = self._usage_statements()
        return await self._runner().read(_usage_of, self._segments_fn(), statements, session_id, number)

    async def adopt(self, session_id: str, turns: Sequence[tuple[int, int, str]]) -> int:
        """Index a session written before the table (or copied without it): its turns as
        ``(position, created ms, content)``, all of them, numbered in position order; rows
        already there stay. How many of them it holds (positions past its end are left out)."""
        return await self._runner().write(_adopt, self._segments_fn(), session_id, list(turns))

    async def extend(
        self, session_id: str, start: int, end: int, turns: Sequence[tuple[int, int, str]]
    ) -> bool:
        """Catch the index up with messages another writer appended (the plain session, which
        knows nothing of turns): ``turns`` are the user messages, ``(position, created ms,
        content)``, of positions ``[start, end)``, read while the session ended at ``end``;
        numbered on from the last turn before ``start``. False (nothing written) when the
        session has changed since: read again."""
        segs = self._segments_fn()
        return await self._runner().write(_extend, segs, session_id, start, end, list(turns))
