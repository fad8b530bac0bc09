"""save_state / load_state on PostgreSQL: the shared :mod:`axio_context.state.stored` on an
asyncpg pool, with this backend's session writes. A save holds the owner's row lock (two savers
of one session queue, never interleave) and each subagent session's row lock while it is
written; a subagent session is never taken over from another writer that made the same id."""

from __future__ import annotations

from typing import Any, Final, TypeVar, overload

from axio_context.codec import check_message
from axio_context.messages import Message
from axio_context.state import ResumableState
from axio_context.state.stored import StoredState, load_states, save_states, subagent_session_id
from axio_context.tokens import DefaultEstimator

from . import lineage, writes
from .runner import PostgresRunner
from .store import PostgresContextStore

__all__ = ["StoredState", "load_state", "load_stored", "save_state", "subagent_session_id"]

S = TypeVar("S", bound=ResumableState)

_ESTIMATOR: Final = DefaultEstimator()


class _Writes:
    """PostgreSQL's :class:`~axio_context.state.stored.SessionWrites` (rows: ``writes.Encoded``)."""

    @staticmethod
    def encode(message: Message, index: int, now: int) -> writes.Encoded:
        check_message(message)  # what the read path could not give back is refused first
        return writes.encode(message, _ESTIMATOR.count(message), now)

    @staticmethod
    async def own(conn: Any, session_id: str, project: str | None, now: int) -> int:
        await writes.ensure_session(conn, session_id, project, now)
        return int((await writes.locked(conn, session_id))["sid"])

    @staticmethod
    async def create_owned(
        conn: Any, child: str, owner: str, name: str, project: str | None, now: int
    ) -> bool:
        # Even a session another writer created a moment ago is never taken over.
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

    @staticmethod
    async def length(conn: Any, session_id: str) -> int:
        row = await writes.locked(conn, session_id)
        assert row is not None
        return int(row["next_position"])

    @staticmethod
    async def clear(conn: Any, session_id: str) -> None:
        await writes.clear(conn, session_id)

    @staticmethod
    async def append(
        conn: Any, session_id: str, project: str | None, rows: list[writes.Encoded], preview: Any
    ) -> None:
        await writes.append_rows(conn, session_id, project, rows, preview)

    @staticmethod
    async def history(conn: Any, session_id: str) -> list[Message]:
        s = await conn.fetchrow("SELECT seg, next_position FROM sessions WHERE id = $1", session_id)
        return lineage.decode(session_id, await lineage.read_rows(conn, s["seg"], s["next_position"]))


_WRITES: Final = _Writes()


def _runner(session: PostgresContextStore) -> PostgresRunner:
    return PostgresRunner(session.pool, f"session {session.session_id!r}")


async def save_state(session: PostgresContextStore, state: ResumableState) -> None:
    """Store ``state`` with ``session`` in one transaction: its fields, and each subagent's
    history as a session owned by this one (creating the session if it has no row yet).

    A value that cannot be encoded, or that a load could not give back as ``type(state)``,
    raises :class:`~axio_context.state.StateEncodeError` naming it, before anything is written.
    """
    if not isinstance(session, PostgresContextStore):
        raise TypeError(f"save_state takes a PostgresContextStore, got {type(session).__name__}")
    await save_states(_runner(session), _WRITES, session.session_id, session.project, state, writes.now_ms())


async def load_stored(session: PostgresContextStore) -> StoredState | None:
    """The state stored with ``session`` as it is stored (no class applied), or None."""
    found = await load_states(_runner(session), _WRITES, session.session_id, False)
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
    found = await load_states(_runner(session), _WRITES, session.session_id, True)
    if found is None:
        return None
    stored, history = found
    return state_type.from_dict({**stored.state, "subagent_history": history})
