"""save_state / load_state: an agent's resumable state, stored with its session.

One ``session_states`` row per session holds the state's JSON without ``subagent_history``;
each subagent's history is a session of its own, owned by the agent's session (``owner_id``,
``agent_name``: see schema.sql), so ``list-sessions --tree``, ``show``, ``search`` and
``export`` reach it like any other. A save is one transaction: the state row and every
subagent session change together or not at all. The row records each subagent's message count
and a digest of its messages, so saving a grown history appends only the new messages; a
history that changed otherwise (or a session written to directly) is rewritten whole.

Fields the saving class does not declare but the stored state has (written by a newer version,
or by a subclass) are kept: a save replaces the fields it knows and leaves the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar, overload
from uuid import uuid4

import msgspec

from axio_context.errors import DecodeError
from axio_context.state import (
    ResumableState,
    StateDecodeError,
    StateEncodeError,
    message_dict_of,
    message_of,
    state_type_name,
)
from axio_context.state.subagents import checked_history
from axio_context.tokens import DefaultEstimator

from ..store import appending, reading, sessions
from ..store.calls import run
from ..store.context_store import SQLiteContextStore
from ..store.keys import now_ms
from ..store.message_rows import EncodedMessage, encode_message
from ..store.session_rows import create_session, session_row
from ..store.transactions import read_tx, write_tx

__all__ = ["StoredState", "load_state", "load_stored", "save_state", "subagent_session_id"]

S = TypeVar("S", bound=ResumableState)

_JSON: Final = msgspec.json.Encoder(order="sorted")
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])
_SUBAGENTS: Final = msgspec.json.Decoder(list[tuple[str, int, str]])
_ESTIMATOR: Final = DefaultEstimator()


class _Subagent(msgspec.Struct):
    """One subagent's history, checked before the transaction: its message dicts, the digest of
    its first ``k`` messages for every ``k`` (to compare with what is stored), and the rows of
    the messages from ``first`` on, encoded ahead (those the stored history does not hold yet)."""

    name: str
    items: list[Any]
    digests: list[str]
    first: int
    encoded: list[EncodedMessage]
    tokens: list[int]


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


def _encode(name: str, items: Sequence[Any], first: int) -> tuple[list[EncodedMessage], list[int]]:
    """Rows and token estimates of ``items`` (their positions start at ``first``)."""
    encoded, tokens = [], []
    for i, item in enumerate(items, first):
        message = message_of(item)
        try:
            encoded.append(encode_message(message, index=i))
        except DecodeError as exc:
            raise StateEncodeError(f"subagent_history[{name!r}][{i}] cannot be stored: {exc}") from None
        tokens.append(_ESTIMATOR.count(message))
    return encoded, tokens


def _prepare(name: str, history: Any, stored: tuple[int, str] | None) -> _Subagent:
    """Check one subagent's history (:func:`~axio_context.state.subagents.checked_history`) and
    encode the messages past what ``stored`` says the session holds (each must encode)."""
    name, history, digests, first = checked_history(name, history, stored)
    encoded, tokens = _encode(name, history[first:], first)
    return _Subagent(name, history, digests, first, encoded, tokens)


def _child_id(c: Any, session_id: str, name: str, project: str | None, now: int) -> str:
    r = c.execute(
        "SELECT id FROM sessions WHERE owner_id = ? AND agent_name = ?", (session_id, name)
    ).fetchone()
    if r is not None:
        return str(r[0])
    child = subagent_session_id(session_id, name)
    if len(child) > 256 or c.execute("SELECT 1 FROM sessions WHERE id = ?", (child,)).fetchone():
        child = uuid4().hex  # the readable id is taken by another session, or too long
    create_session(c, child, project, now)
    c.execute("UPDATE sessions SET owner_id = ?, agent_name = ? WHERE id = ?", (session_id, name, child))
    return child


def _write_subagent(
    c: Any, child: str, project: str | None, sub: _Subagent, stored: tuple[int, str] | None
) -> None:
    row = session_row(c, child)
    assert row is not None
    n = len(sub.items)
    start = 0
    if stored is not None:
        count, digest = stored
        if row.next_position == count <= n and sub.digests[count] == digest:
            start = count  # the stored history is a prefix of this one: append the rest
    if start == 0 and row.next_position:
        sessions.clear(c, child)
    if start >= n:
        return
    skip = max(start - sub.first, 0)  # encoded ahead from `first`; the session may hold more
    encoded, tokens = sub.encoded[skip:], sub.tokens[skip:]
    if start < sub.first:  # the session holds less than the save expected: encode the difference
        head, head_tokens = _encode(sub.name, sub.items[start : sub.first], start)
        encoded, tokens = head + encoded, head_tokens + tokens
    preview = appending.preview_for([message_of(item) for item in sub.items[start:]])
    appending.append(c, child, project, encoded, tokens, preview)


def _stored_counts(c: Any, session_id: str) -> dict[str, tuple[int, str]]:
    r = c.execute(
        "SELECT t.subagents FROM session_states t JOIN sessions s ON s.sid = t.sid WHERE s.id = ?",
        (session_id,),
    ).fetchone()
    return {} if r is None else {name: (count, digest) for name, count, digest in _SUBAGENTS.decode(r[0])}


def _save(
    c: Any,
    session_id: str,
    project: str | None,
    type_name: str,
    state: dict[str, Any],
    subs: list[_Subagent],
) -> None:
    now = now_ms()
    with write_tx(c):
        row = session_row(c, session_id)
        if row is None:
            create_session(c, session_id, project, now)
            row = session_row(c, session_id)
            assert row is not None
        old = c.execute("SELECT state, subagents FROM session_states WHERE sid = ?", (row.sid,)).fetchone()
        before: dict[str, tuple[int, str]] = {}
        if old is not None:
            kept = _OBJECT.decode(old[0])
            # Keys the saving class does not know (it sent none of them) stay as they were.
            state = {**{k: v for k, v in kept.items() if k not in state}, **state}
            before = {name: (count, digest) for name, count, digest in _SUBAGENTS.decode(old[1])}
        listed: list[tuple[str, int, str]] = []
        for sub in subs:
            child = _child_id(c, session_id, sub.name, project, now)
            _write_subagent(c, child, project, sub, before.get(sub.name))
            listed.append((sub.name, len(sub.items), sub.digests[-1]))
        c.execute(
            "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (sid) DO UPDATE SET type = excluded.type, state = excluded.state,"
            " subagents = excluded.subagents, saved_at = excluded.saved_at",
            (row.sid, type_name, _JSON.encode(state).decode(), _JSON.encode(listed).decode(), now),
        )


async def save_state(session: SQLiteContextStore, state: ResumableState) -> None:
    """Store ``state`` with ``session`` in one transaction: its fields, and each subagent's
    history as a session owned by this one (creating the session if it has no row yet).

    A value that cannot be encoded raises :class:`~axio_context.state.StateEncodeError` naming
    it, before anything is written.
    """
    if not isinstance(state, ResumableState):
        raise TypeError(f"save_state takes a ResumableState, got {type(state).__name__}")
    history: Any = state.subagent_history
    if not isinstance(history, dict):
        raise StateEncodeError(f"subagent_history must be a dict, got {type(history).__name__}")
    # What the last save stored, to encode only the messages past it (the transaction checks
    # again: another writer in between costs an encoding there, never a wrong write).
    stored = await run(session.connection, _stored_counts, session.session_id) if history else {}
    subs = [_prepare(name, items, stored.get(name)) for name, items in history.items()]
    fields = state.to_dict(subagents=False)
    await run(
        session.connection,
        _save,
        session.session_id,
        session.project,
        state_type_name(type(state)),
        fields,
        subs,
    )


def _load(
    c: Any, session_id: str, histories: bool
) -> tuple[StoredState, dict[str, list[dict[str, Any]]]] | None:
    with read_tx(c):
        r = c.execute(
            "SELECT t.type, t.state, t.subagents, t.saved_at FROM session_states t"
            " JOIN sessions s ON s.sid = t.sid WHERE s.id = ?",
            (session_id,),
        ).fetchone()
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
            child = c.execute(
                "SELECT id FROM sessions WHERE owner_id = ? AND agent_name = ?", (session_id, name)
            ).fetchone()
            if child is None:  # its session was deleted since: the history went with it
                continue
            ids[name] = str(child[0])
            if histories:
                history[name] = [message_dict_of(m) for m in reading.get_full(c, ids[name])]
    return StoredState(session_id, str(r[0]), state, ids, int(r[3])), history


async def load_stored(session: SQLiteContextStore) -> StoredState | None:
    """The state stored with ``session`` as it is stored (no class applied), or None."""
    found = await run(session.connection, _load, session.session_id, False)
    return None if found is None else found[0]


@overload
async def load_state(session: SQLiteContextStore) -> ResumableState | None: ...
@overload
async def load_state(session: SQLiteContextStore, state_type: type[S]) -> S | None: ...
async def load_state(
    session: SQLiteContextStore, state_type: type[ResumableState] = ResumableState
) -> ResumableState | None:
    """The state stored with ``session`` as ``state_type``, or None when none was saved.

    Any ResumableState class reads any saved state: fields it lacks take their defaults, fields
    it does not declare are kept on the instance (:attr:`~ResumableState.unknown_fields`) and
    written back by the next save. ``subagent_history`` is rebuilt from the subagent sessions.
    """
    found = await run(session.connection, _load, session.session_id, True)
    if found is None:
        return None
    stored, history = found
    return state_type.from_dict({**stored.state, "subagent_history": history})
