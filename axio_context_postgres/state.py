"""save_state / load_state on PostgreSQL: an agent's resumable state, stored with its session.

The SQLite backend's semantics (:mod:`axio_context_sqlite.state`) on this schema: one
``session_states`` row per session holds the state's JSON without ``subagent_history``; each
subagent's history is a session of its own, owned by the agent's session (``owner_id``,
``agent_name``), so listing, ``show``, search and export reach it like any other. A save is one
transaction holding the owner's row lock (two savers of one session queue, never interleave),
and each subagent session's row lock while it is written. The row records each subagent's
message count and a digest of its messages, so saving a grown history appends only the new
messages; a history that changed otherwise (or a session written to directly) is rewritten.

Fields the saving class does not declare but the stored state has are kept: a save replaces
the fields it knows and leaves the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar, overload
from uuid import uuid4

import msgspec

from axio_context.codec import check_message
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
from axio_context_sqlite.state import StoredState, subagent_session_id
from axio_context_sqlite.store.appending import preview_for

from . import lineage, writes
from .connection import translated
from .store import PostgresContextStore

__all__ = ["StoredState", "load_state", "load_stored", "save_state", "subagent_session_id"]

S = TypeVar("S", bound=ResumableState)

_JSON: Final = msgspec.json.Encoder(order="sorted")
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])
_SUBAGENTS: Final = msgspec.json.Decoder(list[tuple[str, int, str]])
_ESTIMATOR: Final = DefaultEstimator()

#: The longest id a subagent session gets from its readable form (else a fresh uuid).
_MAX_ID: Final = 256


class _Subagent(msgspec.Struct):
    """One subagent's history, checked before the transaction: its message dicts, the digest of
    its first ``k`` messages for every ``k``, and the rows from ``first`` on, encoded ahead."""

    name: str
    items: list[Any]
    digests: list[str]
    first: int
    rows: list[writes.Encoded]


def _encode(name: str, items: Sequence[Any], first: int, now: int) -> list[writes.Encoded]:
    """Rows of ``items`` (their positions start at ``first``), each checked to read back."""
    rows = []
    for i, item in enumerate(items, first):
        message = message_of(item)
        try:
            check_message(message)
            rows.append(writes.encode(message, _ESTIMATOR.count(message), now))
        except (DecodeError, TypeError, ValueError, OverflowError) as exc:
            raise StateEncodeError(f"subagent_history[{name!r}][{i}] cannot be stored: {exc}") from None
    return rows


def _prepare(name: Any, history: Any, stored: tuple[int, str] | None, now: int) -> _Subagent:
    """Check one subagent's history (:func:`~axio_context.state.subagents.checked_history`) and
    encode the messages past what ``stored`` says the session holds."""
    if isinstance(name, str) and "\x00" in name:
        raise StateEncodeError(
            f"subagent_history: a subagent's key cannot hold a NUL character: {name!r:.80}"
        )
    name, history, digests, first = checked_history(name, history, stored)
    return _Subagent(name, history, digests, first, _encode(name, history[first:], first, now))


async def _child_id(conn: Any, session_id: str, name: str, project: str | None, now: int) -> str:
    """The session holding subagent ``name``'s history, created (owned) when there is none."""
    found = await conn.fetchval(
        "SELECT id FROM sessions WHERE owner_id = $1 AND agent_name = $2", session_id, name
    )
    if found is not None:
        return str(found)
    child = subagent_session_id(session_id, name)
    if len(child) > _MAX_ID or not await _create_owned(conn, child, session_id, name, project, now):
        child = uuid4().hex  # the readable id is taken by another session, or too long
        await _create_owned(conn, child, session_id, name, project, now)
    return child


async def _create_owned(conn: Any, child: str, owner: str, name: str, project: str | None, now: int) -> bool:
    """Create session ``child`` owned by ``owner``; False (nothing written) when the id is taken,
    even by a session another writer created a moment ago: never take over someone's session."""
    seg = await conn.fetchval("INSERT INTO segments (owner) VALUES ($1) RETURNING seg", child)
    sid = await conn.fetchval(
        "INSERT INTO sessions (id, seg, project, created_at, updated_at, owner_id, agent_name)"
        " VALUES ($1, $2, $3, $4, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING sid",
        child,
        seg,
        project,
        now,
        owner,
        name,
    )
    if sid is None:
        await conn.execute("DELETE FROM segments WHERE seg = $1", seg)
        return False
    return True


async def _write_subagent(
    conn: Any, child: str, project: str | None, sub: _Subagent, stored: tuple[int, str] | None, now: int
) -> None:
    row = await writes.locked(conn, child)
    assert row is not None
    n, held = len(sub.items), int(row["next_position"])
    start = 0
    if stored is not None:
        count, digest = stored
        if held == count <= n and sub.digests[count] == digest:
            start = count  # the stored history is a prefix of this one: append the rest
    if start == 0 and held:
        await writes.clear(conn, child)
    if start >= n:
        return
    rows = sub.rows[max(start - sub.first, 0) :]  # encoded ahead from `first`
    if start < sub.first:  # the session holds less than the save expected: encode the difference
        rows = _encode(sub.name, sub.items[start : sub.first], start, now) + rows
    preview = preview_for([message_of(item) for item in sub.items[start:]])
    await writes.append_rows(conn, child, project, rows, preview)


async def _stored_counts(session: PostgresContextStore) -> dict[str, tuple[int, str]]:
    async with translated(f"session {session.session_id!r}"):
        raw = await session.pool.fetchval(
            "SELECT t.subagents FROM session_states t JOIN sessions s ON s.sid = t.sid WHERE s.id = $1",
            session.session_id,
        )
    return {} if raw is None else {name: (count, digest) for name, count, digest in _SUBAGENTS.decode(raw)}


async def save_state(session: PostgresContextStore, state: ResumableState) -> None:
    """Store ``state`` with ``session`` in one transaction: its fields, and each subagent's
    history as a session owned by this one (creating the session if it has no row yet).

    A value that cannot be encoded raises :class:`~axio_context.state.StateEncodeError` naming
    it, before anything is written.
    """
    if not isinstance(session, PostgresContextStore):
        raise TypeError(f"save_state takes a PostgresContextStore, got {type(session).__name__}")
    if not isinstance(state, ResumableState):
        raise TypeError(f"save_state takes a ResumableState, got {type(state).__name__}")
    history: Any = state.subagent_history
    if not isinstance(history, dict):
        raise StateEncodeError(f"subagent_history must be a dict, got {type(history).__name__}")
    now = writes.now_ms()
    # What the last save stored, to encode only the messages past it (the transaction checks
    # again under the lock: another writer in between costs an encoding there, never a wrong write).
    stored = await _stored_counts(session) if history else {}
    subs = [_prepare(name, items, stored.get(name), now) for name, items in history.items()]
    fields = state.to_dict(subagents=False)
    try:
        encoded_fields = _JSON.encode(fields).decode()
    except (TypeError, ValueError, OverflowError) as exc:
        raise StateEncodeError(f"{type(state).__name__} cannot be encoded: {exc}") from None
    session_id, project = session.session_id, session.project
    async with translated(f"session {session_id!r}"), session.pool.acquire() as conn, conn.transaction():
        await writes.ensure_session(conn, session_id, project, now)
        row = await writes.locked(conn, session_id)  # one saver of this session at a time
        old = await conn.fetchrow("SELECT state, subagents FROM session_states WHERE sid = $1", row["sid"])
        before: dict[str, tuple[int, str]] = {}
        if old is not None:
            kept = _OBJECT.decode(old["state"])
            # Keys the saving class does not know (it sent none of them) stay as they were.
            merged = {**{k: v for k, v in kept.items() if k not in fields}, **fields}
            encoded_fields = _JSON.encode(merged).decode()
            before = {name: (count, digest) for name, count, digest in _SUBAGENTS.decode(old["subagents"])}
        listed: list[tuple[str, int, str]] = []
        for sub in subs:
            child = await _child_id(conn, session_id, sub.name, project, now)
            await _write_subagent(conn, child, project, sub, before.get(sub.name), now)
            listed.append((sub.name, len(sub.items), sub.digests[-1]))
        await conn.execute(
            "INSERT INTO session_states (sid, type, state, subagents, saved_at) VALUES ($1, $2, $3, $4, $5)"
            " ON CONFLICT (sid) DO UPDATE SET type = excluded.type, state = excluded.state,"
            " subagents = excluded.subagents, saved_at = excluded.saved_at",
            row["sid"],
            state_type_name(type(state)),
            encoded_fields,
            _JSON.encode(listed).decode(),
            now,
        )


async def _load(
    session: PostgresContextStore, histories: bool
) -> tuple[StoredState, dict[str, list[dict[str, Any]]]] | None:
    session_id = session.session_id
    async with (
        translated(f"session {session_id!r}"),
        session.pool.acquire() as conn,
        conn.transaction(isolation="repeatable_read", readonly=True),
    ):
        r = await conn.fetchrow(
            "SELECT t.type, t.state, t.subagents, t.saved_at FROM session_states t"
            " JOIN sessions s ON s.sid = t.sid WHERE s.id = $1",
            session_id,
        )
        if r is None:
            return None
        try:
            state = _OBJECT.decode(r["state"])
            listed = _SUBAGENTS.decode(r["subagents"])
        except msgspec.DecodeError as exc:
            raise StateDecodeError(
                f"the state stored with session {session_id!r} does not decode: {exc}"
            ) from None
        ids: dict[str, str] = {}
        history: dict[str, list[dict[str, Any]]] = {}
        for name, _count, _digest in listed:
            child = await conn.fetchrow(
                "SELECT id, seg, next_position FROM sessions WHERE owner_id = $1 AND agent_name = $2",
                session_id,
                name,
            )
            if child is None:  # its session was deleted since: the history went with it
                continue
            ids[name] = str(child["id"])
            if histories:
                rows = await lineage.read_rows(conn, child["seg"], child["next_position"])
                history[name] = [message_dict_of(m) for m in lineage.decode(ids[name], rows)]
    return StoredState(session_id, str(r["type"]), state, ids, int(r["saved_at"])), history


async def load_stored(session: PostgresContextStore) -> StoredState | None:
    """The state stored with ``session`` as it is stored (no class applied), or None."""
    found = await _load(session, False)
    return None if found is None else found[0]


@overload
async def load_state(session: PostgresContextStore) -> ResumableState | None: ...
@overload
async def load_state(session: PostgresContextStore, state_type: type[S]) -> S | None: ...
async def load_state(
    session: PostgresContextStore, state_type: type[ResumableState] = ResumableState
) -> ResumableState | None:
    """The state stored with ``session`` as ``state_type``, or None when none was saved.

    Any ResumableState class reads any saved state: fields it lacks take their defaults, fields
    it does not declare are kept on the instance and written back by the next save.
    ``subagent_history`` is rebuilt from the subagent sessions.
    """
    found = await _load(session, True)
    if found is None:
        return None
    stored, history = found
    return state_type.from_dict({**stored.state, "subagent_history": history})
