"""save_state / load_state on any SQL backend, written once: an agent's resumable state stored
with its session (SQLite's and PostgreSQL's ``save_state`` / ``load_state`` only choose the
runner and hand over their :class:`SessionWrites`).

One ``session_states`` row per session holds the state's JSON without ``subagent_history``; each
subagent's history is a session of its own, owned by the agent's session (``owner_id``,
``agent_name``), so listing, ``show``, search and export reach it like any other. A save is one
transaction holding the owner's session row (two savers of one session queue, never interleave).
The row records each subagent's message count and a digest of its messages, so saving a grown
history appends only the new messages; a history that changed otherwise (or a session written to
directly) is rewritten whole.

A save stores only what a load gives back: the fields are encoded, decoded and validated
against the saving class before the transaction (:func:`state_fields`), so a value of the wrong
type, a lone surrogate, nesting past the codec's depth or a non-string key raises
:class:`StateEncodeError` and the stored state stays as it was. Fields the saving class does not
declare but the stored state has (a newer version's, a subclass's) are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Generic, Protocol, TypeVar
from uuid import uuid4

import msgspec

from ..messages import Message, preview_for
from ..sql import Execute, Native, Plan, Row, Runner, Value
from ..sql.plan import Dialect
from .errors import StateDecodeError, StateEncodeError
from .history import message_dict_of, message_of
from .resumable import ResumableState, state_type_name
from .subagents import checked_history

__all__ = [
    "SessionWrites",
    "StoredState",
    "load_states",
    "save_states",
    "state_fields",
    "subagent_session_id",
]

E = TypeVar("E")

_JSON: Final = msgspec.json.Encoder(order="sorted")
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])
_SUBAGENTS: Final = msgspec.json.Decoder(list[tuple[str, int, str]])

#: The longest id a subagent session gets from its readable form (else a fresh uuid).
MAX_ID: Final = 256

#: What encoding a value the codec refuses raises (a lone surrogate is a UnicodeEncodeError, a
#: ValueError; nesting past the codec's depth a RecursionError; a tuple key a TypeError).
_UNENCODABLE: Final = (TypeError, ValueError, OverflowError, RecursionError, msgspec.MsgspecError)


class StoredState(msgspec.Struct, frozen=True):
    """A saved state as stored: its class's name, its JSON object, its subagents' session ids."""

    session_id: str
    type: str
    state: dict[str, Any]
    subagents: dict[str, str]
    saved_at: int


def subagent_session_id(session_id: str, agent_name: str) -> str:
    """The id a new subagent session gets: ``agent@session``, readable and never a prefix of
    its owner's id (so a prefix of the owner still resolves to the owner)."""
    return f"{agent_name}@{session_id}"


def state_fields(state: ResumableState) -> dict[str, Any]:
    """``state``'s fields (without ``subagent_history``) as a load will read them back, or
    :class:`StateEncodeError` naming why not: what a save writes, a load must give back."""
    name = type(state).__name__
    try:
        fields = state.to_dict(subagents=False)
        raw = _JSON.encode(fields)
    except StateEncodeError:
        raise
    except _UNENCODABLE as exc:
        raise StateEncodeError(f"{name} cannot be encoded: {exc}") from None
    try:
        type(state).from_dict(_OBJECT.decode(raw))
    except (StateDecodeError, *_UNENCODABLE) as exc:
        raise StateEncodeError(f"{name} would not load back: {exc}") from None
    return fields


class SessionWrites(Protocol[E]):
    """What a backend's session store does for saved states, each called on the transaction's
    connection (synchronously on SQLite, awaited on PostgreSQL) through :class:`Native` steps;
    ``E`` is the backend's encoded message row."""

    def encode(self, message: Message, index: int, now: int) -> E:
        """A message's row (its position ``index``), before the transaction: may raise."""
        ...

    def own(self, c: Any, session_id: str, project: str | None, now: int) -> Any:
        """The session's ``sid``, the session created when it has no row, its row locked."""
        ...

    def create_owned(self, c: Any, child: str, owner: str, name: str, project: str | None, now: int) -> Any:
        """Create session ``child`` owned by ``owner`` as subagent ``name``; False (nothing
        written) when the id is taken."""
        ...

    def length(self, c: Any, session_id: str) -> Any:
        """How many messages the session holds (its row locked)."""
        ...

    def clear(self, c: Any, session_id: str) -> Any:
        """Empty the session (forks keep theirs)."""
        ...

    def append(self, c: Any, session_id: str, project: str | None, rows: list[E], preview: Any) -> Any:
        """Append encoded rows (and their preview) to the session."""
        ...

    def history(self, c: Any, session_id: str) -> Any:
        """Every message of the session (checkpoints ignored)."""
        ...


class _Subagent(msgspec.Struct, Generic[E]):
    """One subagent's history, checked before the transaction: its message dicts, the digest of
    its first ``k`` messages for every ``k``, and the rows from ``first`` on, encoded ahead."""

    name: str
    items: list[Any]
    digests: list[str]
    first: int
    rows: list[E]


def _encode(w: SessionWrites[E], name: str, items: Sequence[Any], first: int, now: int) -> list[E]:
    """Rows of ``items`` (their positions start at ``first``), each checked to read back."""
    rows = []
    for i, item in enumerate(items, first):
        try:
            rows.append(w.encode(message_of(item), i, now))
        except _UNENCODABLE as exc:
            raise StateEncodeError(f"subagent_history[{name!r}][{i}] cannot be stored: {exc}") from None
    return rows


def _prepare(
    w: SessionWrites[E], name: Any, history: Any, stored: tuple[int, str] | None, now: int
) -> _Subagent[E]:
    if isinstance(name, str) and "\x00" in name:
        raise StateEncodeError(
            f"subagent_history: a subagent's key cannot hold a NUL character: {name!r:.80}"
        )
    name, history, digests, first = checked_history(name, history, stored)
    return _Subagent(name, history, digests, first, _encode(w, name, history[first:], first, now))


_SUBAGENTS_OF: Final = (
    "SELECT t.subagents FROM session_states t JOIN sessions s ON s.sid = t.sid WHERE s.id = ?"
)
_CHILD: Final = "SELECT id FROM sessions WHERE owner_id = ? AND agent_name = ?"


def _listed(raw: Any) -> dict[str, tuple[int, str]]:
    return {} if raw is None else {name: (count, digest) for name, count, digest in _SUBAGENTS.decode(raw)}


def _stored_counts(d: Dialect, session_id: str) -> Plan[dict[str, tuple[int, str]]]:
    return _listed((yield Value(_SUBAGENTS_OF, (session_id,))))


def _child_id(w: SessionWrites[Any], session_id: str, name: str, project: str | None, now: int) -> Plan[str]:
    """The session holding subagent ``name``'s history, created (owned) when there is none."""
    found = yield Value(_CHILD, (session_id, name))
    if found is not None:
        return str(found)
    child = subagent_session_id(session_id, name)
    if len(child) > MAX_ID or not (yield Native(w.create_owned, (child, session_id, name, project, now))):
        child = uuid4().hex  # the readable id is taken by another session, or too long
        yield Native(w.create_owned, (child, session_id, name, project, now))
    return child


def _write_subagent(
    w: SessionWrites[E],
    child: str,
    project: str | None,
    sub: _Subagent[E],
    stored: tuple[int, str] | None,
    now: int,
) -> Plan[None]:
    held = yield Native(w.length, (child,))
    n, start = len(sub.items), 0
    if stored is not None:
        count, digest = stored
        if held == count <= n and sub.digests[count] == digest:
            start = count  # the stored history is a prefix of this one: append the rest
    if start == 0 and held:
        yield Native(w.clear, (child,))
    if start >= n:
        return
    rows = sub.rows[max(start - sub.first, 0) :]  # encoded ahead from `first`
    if start < sub.first:  # the session holds less than the save expected: encode the difference
        rows = _encode(w, sub.name, sub.items[start : sub.first], start, now) + rows
    preview = preview_for([message_of(item) for item in sub.items[start:]])
    yield Native(w.append, (child, project, rows, preview))


def _save(
    d: Dialect,
    w: SessionWrites[E],
    session_id: str,
    project: str | None,
    type_name: str,
    fields: dict[str, Any],
    subs: list[_Subagent[E]],
    now: int,
) -> Plan[None]:
    sid = yield Native(w.own, (session_id, project, now))  # one saver of this session at a time
    old = yield Row("SELECT state, subagents FROM session_states WHERE sid = ?", (sid,))
    before: dict[str, tuple[int, str]] = {}
    if old is not None:
        kept = _OBJECT.decode(old[0])
        # Keys the saving class does not know (it sent none of them) stay as they were.
        fields = {**{k: v for k, v in kept.items() if k not in fields}, **fields}
        before = _listed(old[1])
    listed: list[tuple[str, int, str]] = []
    for sub in subs:
        child = yield from _child_id(w, session_id, sub.name, project, now)
        yield from _write_subagent(w, child, project, sub, before.get(sub.name), now)
        listed.append((sub.name, len(sub.items), sub.digests[-1]))
    yield Execute(
        "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (sid) DO UPDATE SET type = excluded.type, state = excluded.state,"
        " subagents = excluded.subagents, saved_at = excluded.saved_at",
        (sid, type_name, d.sealed(_JSON.encode(fields).decode()), _JSON.encode(listed).decode(), now),
    )


async def save_states(
    runner: Runner,
    w: SessionWrites[Any],
    session_id: str,
    project: str | None,
    state: ResumableState,
    now: int,
) -> None:
    """Store ``state`` with session ``session_id`` in one transaction (see the module docstring)."""
    if not isinstance(state, ResumableState):
        raise TypeError(f"save_state takes a ResumableState, got {type(state).__name__}")
    history: Any = state.subagent_history
    if not isinstance(history, dict):
        raise StateEncodeError(f"subagent_history must be a dict, got {type(history).__name__}")
    fields = state_fields(state)
    # What the last save stored, to encode only the messages past it (the transaction checks
    # again under the lock: another writer in between costs an encoding there, never a wrong write).
    stored = await runner.read(_stored_counts, session_id) if history else {}
    subs = [_prepare(w, name, items, stored.get(name), now) for name, items in history.items()]
    await runner.write(_save, w, session_id, project, state_type_name(type(state)), fields, subs, now)


def _load(
    d: Dialect, w: SessionWrites[Any], session_id: str, histories: bool
) -> Plan[tuple[StoredState, dict[str, list[dict[str, Any]]]] | None]:
    r = yield Row(
        "SELECT t.type, t.state, t.subagents, t.saved_at FROM session_states t"
        " JOIN sessions s ON s.sid = t.sid WHERE s.id = ?",
        (session_id,),
    )
    if r is None:
        return None
    try:
        state = _OBJECT.decode(r[1])
        listed = _SUBAGENTS.decode(r[2])
    except msgspec.DecodeError as exc:
        raise StateDecodeError(
            f"the state stored with session {session_id!r} does not decode: {exc}"
        ) from None
    ids: dict[str, str] = {}
    history: dict[str, list[dict[str, Any]]] = {}
    for name, _count, _digest in listed:
        child = yield Value(_CHILD, (session_id, name))
        if child is None:  # its session was deleted since: the history went with it
            continue
        ids[name] = str(child)
        if histories:
            history[name] = [message_dict_of(m) for m in (yield Native(w.history, (ids[name],)))]
    return StoredState(session_id, str(r[0]), state, ids, int(r[3])), history


async def load_states(
    runner: Runner, w: SessionWrites[Any], session_id: str, histories: bool
) -> tuple[StoredState, dict[str, list[dict[str, Any]]]] | None:
    """The state stored with ``session_id`` and (with ``histories``) its subagents' histories
    as message dicts, in one read snapshot; None when none was saved."""
    return await runner.read(_load, w, session_id, histories)
