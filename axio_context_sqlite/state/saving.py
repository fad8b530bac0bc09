"""save_state / load_state on SQLite: the shared :mod:`axio_context.state.stored` on the
connection's worker thread, with this backend's session writes (subagent histories appended
through :mod:`..store.appending`, so they are indexed and previewed like any session's)."""

from __future__ import annotations

from typing import Any, Final, TypeVar, overload

from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context.state.stored import StoredState, load_states, save_states, subagent_session_id
from axio_context.tokens import DefaultEstimator

from ..store import appending, reading, sessions
from ..store.context_store import SQLiteContextStore
from ..store.keys import now_ms
from ..store.message_rows import EncodedMessage, encode_message
from ..store.runner import SQLiteRunner
from ..store.session_rows import create_session, session_row

__all__ = ["StoredState", "load_state", "load_stored", "save_state", "subagent_session_id"]

S = TypeVar("S", bound=ResumableState)

_ESTIMATOR: Final = DefaultEstimator()


class _Writes:
    """SQLite's :class:`~axio_context.state.stored.SessionWrites`: rows are an encoded message
    and its token estimate."""

    @staticmethod
    def encode(message: Message, index: int, now: int) -> tuple[EncodedMessage, int]:
        return encode_message(message, index=index), _ESTIMATOR.count(message)

    @staticmethod
    def own(c: Any, session_id: str, project: str | None, now: int) -> int:
        row = session_row(c, session_id)
        if row is None:  # the write transaction already holds the database's write lock
            create_session(c, session_id, project, now)
            row = session_row(c, session_id)
            assert row is not None
        return row.sid

    @staticmethod
    def create_owned(c: Any, child: str, owner: str, name: str, project: str | None, now: int) -> bool:
        if c.execute("SELECT 1 FROM sessions WHERE id = ?", (child,)).fetchone() is not None:
            return False
        create_session(c, child, project, now)
        c.execute("UPDATE sessions SET owner_id = ?, agent_name = ? WHERE id = ?", (owner, name, child))
        return True

    @staticmethod
    def length(c: Any, session_id: str) -> int:
        row = session_row(c, session_id)
        assert row is not None
        return row.next_position

    @staticmethod
    def clear(c: Any, session_id: str) -> None:
        sessions.clear(c, session_id)

    @staticmethod
    def append(
        c: Any, session_id: str, project: str | None, rows: list[tuple[EncodedMessage, int]], preview: Any
    ) -> None:
        appending.append(c, session_id, project, [r[0] for r in rows], [r[1] for r in rows], preview)

    @staticmethod
    def history(c: Any, session_id: str) -> list[Message]:
        return reading.get_full(c, session_id)


_WRITES: Final = _Writes()


async def save_state(session: SQLiteContextStore, state: ResumableState) -> None:
    """Store ``state`` with ``session`` in one transaction: its fields, and each subagent's
    history as a session owned by this one (creating the session if it has no row yet).

    A value that cannot be encoded, or that a load could not give back as ``type(state)``,
    raises :class:`~axio_context.state.StateEncodeError` naming it, before anything is written.
    """
    runner = SQLiteRunner(session.connection)
    await save_states(runner, _WRITES, session.session_id, session.project, state, now_ms())


async def load_stored(session: SQLiteContextStore) -> StoredState | None:
    """The state stored with ``session`` as it is stored (no class applied), or None."""
    found = await load_states(SQLiteRunner(session.connection), _WRITES, session.session_id, False)
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
    found = await load_states(SQLiteRunner(session.connection), _WRITES, session.session_id, True)
    if found is None:
        return None
    stored, history = found
    return state_type.from_dict({**stored.state, "subagent_history": history})
