"""The history provider: an agent's messages per ``(agent_id, session_id)``, each tagged with the
run that wrote it (ravi's ``HistoryProvider`` contract), and its in-memory version.

Positions are the order of appends and never change: :meth:`HistoryProvider.clear_run` takes a
run's messages out of every read and leaves the others where they were.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from ..messages import Message
from .chat import ChatMessageLike, as_message
from .errors import RunSessionError

__all__ = [
    "HistoryProvider",
    "InMemoryHistoryProvider",
    "check_ids",
    "check_messages",
    "check_page",
]


@runtime_checkable
class HistoryProvider(Protocol):
    """Where agents keep their conversations: messages keyed by ``(agent_id, session_id)``,
    each tagged with its ``run_id`` (``""``: written outside a run)."""

    async def append(
        self, agent_id: str, message: Message | ChatMessageLike, *, session_id: str, run_id: str = ""
    ) -> None:
        """Append one message (a ravi chat message is converted to a :class:`Message`)."""
        ...

    async def append_many(
        self,
        agent_id: str,
        messages: Sequence[Message | ChatMessageLike],
        *,
        session_id: str,
        run_id: str = "",
    ) -> None:
        """Append messages in order, all or none."""
        ...

    async def get_messages(
        self, agent_id: str, *, session_id: str, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        """The messages in append order, ``offset`` first skipped, at most ``limit``."""
        ...

    async def clear(self, agent_id: str, *, session_id: str) -> None:
        """Forget every message of the agent in the session."""
        ...

    async def clear_run(self, agent_id: str, *, session_id: str, run_id: str) -> None:
        """Take one run's messages out of every read; unknown agent, session or run: no-op."""
        ...

    async def count_messages(self, agent_id: str, *, session_id: str) -> int:
        """How many messages :meth:`get_messages` would return without a limit."""
        ...


def check_ids(agent_id: object, session_id: object, run_id: object = "") -> None:
    """Refuse ids that are not strings, and an empty session id, naming the field."""
    if not isinstance(agent_id, str):
        raise TypeError(f"agent_id must be a str, got {type(agent_id).__name__}")
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id:
        raise ValueError("session_id must not be empty")
    if not isinstance(run_id, str):
        raise TypeError(f"run_id must be a str, got {type(run_id).__name__}")


def check_messages(messages: Iterable[object]) -> list[Message]:
    """The batch as a list of :class:`Message`, ravi's chat messages (role and string content,
    or their dict form) converted; anything else is refused before any write."""
    return [as_message(m, f"messages[{i}]") for i, m in enumerate(list(messages))]


def check_page(limit: object, offset: object) -> None:
    """Refuse a negative or non-integer ``limit`` / ``offset``, naming which."""
    if limit is not None and (type(limit) is not int or limit < 0):
        raise ValueError(f"limit must be None or an int >= 0, got {limit!r}")
    if type(offset) is not int or offset < 0:
        raise ValueError(f"offset must be an int >= 0, got {offset!r}")


class InMemoryHistoryProvider:
    """A :class:`HistoryProvider` in a dict: for tests and for agents whose history need not
    outlive the process. Messages are copied in and out, so callers cannot change what it holds."""

    def __init__(self) -> None:
        self._histories: dict[tuple[str, str], list[tuple[str, Message]]] = {}
        self._runs: dict[str, str] = {}  # run_id -> the session it belongs to

    def _claim_run(self, session_id: str, run_id: str) -> None:
        if not run_id:
            return
        owner = self._runs.setdefault(run_id, session_id)
        if owner != session_id:
            raise RunSessionError(f"run_id {run_id!r} belongs to session {owner!r}, not {session_id!r}")

    async def append(
        self, agent_id: str, message: Message | ChatMessageLike, *, session_id: str, run_id: str = ""
    ) -> None:
        await self.append_many(agent_id, [message], session_id=session_id, run_id=run_id)

    async def append_many(
        self,
        agent_id: str,
        messages: Sequence[Message | ChatMessageLike],
        *,
        session_id: str,
        run_id: str = "",
    ) -> None:
        check_ids(agent_id, session_id, run_id)
        batch = check_messages(messages)
        if not batch:
            return
        self._claim_run(session_id, run_id)
        rows = self._histories.setdefault((agent_id, session_id), [])
        rows.extend((run_id, _copy(m)) for m in batch)

    async def get_messages(
        self, agent_id: str, *, session_id: str, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        check_ids(agent_id, session_id)
        check_page(limit, offset)
        rows = self._histories.get((agent_id, session_id), [])
        end = None if limit is None else offset + limit
        return [_copy(m) for _, m in rows[offset:end]]

    async def clear(self, agent_id: str, *, session_id: str) -> None:
        check_ids(agent_id, session_id)
        self._histories.pop((agent_id, session_id), None)

    async def clear_run(self, agent_id: str, *, session_id: str, run_id: str) -> None:
        check_ids(agent_id, session_id, run_id)
        rows = self._histories.get((agent_id, session_id))
        if rows:
            rows[:] = [(r, m) for r, m in rows if r != run_id]

    async def count_messages(self, agent_id: str, *, session_id: str) -> int:
        check_ids(agent_id, session_id)
        return len(self._histories.get((agent_id, session_id), []))

    async def get_run_ids(self, agent_id: str, *, session_id: str) -> list[str]:
        """The run id of each message, in the order of :meth:`get_messages`."""
        check_ids(agent_id, session_id)
        return [r for r, _ in self._histories.get((agent_id, session_id), [])]


def _copy(message: Message) -> Message:
    """A copy the caller may change: every field kept (id, timestamp, metadata too, as the SQL
    providers give them back)."""
    metadata = None if message.metadata is None else copy.deepcopy(message.metadata)
    return msgspec.structs.replace(message, content=list(message.content), metadata=metadata)
