"""SQLHistoryProvider: the history provider on the same SQL database as the sessions, written
once over a backend's runner and :class:`~.sql.ThreadStatements` (see :mod:`.sql`). A backend
adds how it opens and closes, its :class:`~axio_context.ContextStore` of a thread, and its
append, the hot path each backend writes as its own one-statement form.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..messages import Message
from ..sql import Runner
from ..tokens import DefaultEstimator, TokenCounter
from . import sql as plans
from .chat import ChatMessageLike
from .history import check_ids, check_messages, check_page
from .sql import ThreadStatements

__all__ = ["SQLHistoryProvider"]


class SQLHistoryProvider:
    """A :class:`~axio_context.agents.HistoryProvider` in a SQL database: each
    ``(agent_id, session_id)`` is one ordinary session. New sessions are filed under
    ``project`` (default: the resolved current directory, as the backend's context store)."""

    def __init__(
        self,
        runner: Runner,
        statements: ThreadStatements,
        *,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._runner = runner
        self._sql = statements
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    def _check(self, agent_id: str, session_id: str, run_id: str = "") -> None:
        """Refuse ids that are not text, naming the field (a backend adds its own limits)."""
        check_ids(agent_id, session_id, run_id)

    async def session_key(self, agent_id: str, session_id: str) -> str:
        """The id of the session holding this agent's history in ``session_id`` (created if new)."""
        self._check(agent_id, session_id)
        found = await self._runner.read(plans.find_thread, self._sql, agent_id, session_id)
        if found is None:
            found = await self._runner.write(
                plans.ensure_thread, self._sql, agent_id, session_id, self._project
            )
        return str(found[1])

    async def append(
        self, agent_id: str, message: Message | ChatMessageLike, *, session_id: str, run_id: str = ""
    ) -> None:
        """Append one message, tagged with ``run_id``."""
        await self.append_many(agent_id, [message], session_id=session_id, run_id=run_id)

    async def append_many(
        self,
        agent_id: str,
        messages: Sequence[Message | ChatMessageLike],
        *,
        session_id: str,
        run_id: str = "",
    ) -> None:
        """Append messages in order, with their run tags, as one transaction: all or none."""
        self._check(agent_id, session_id, run_id)
        batch = check_messages(messages)
        if batch:
            await self._append(agent_id, session_id, batch, run_id)

    async def _append(self, agent_id: str, session_id: str, batch: list[Message], run_id: str) -> None:
        """The backend's append of a checked, non-empty batch."""
        raise NotImplementedError

    async def get_messages(
        self, agent_id: str, *, session_id: str, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        """Messages ``offset .. offset + limit`` in append order, cleared runs left out."""
        check_ids(agent_id, session_id)
        check_page(limit, offset)
        self._check(agent_id, session_id)
        return await self._runner.read(plans.page, self._sql, agent_id, session_id, limit, offset)

    async def clear(self, agent_id: str, *, session_id: str) -> None:
        """Forget the agent's history in ``session_id`` (forks of it keep theirs)."""
        self._check(agent_id, session_id)
        await self._runner.write(plans.clear_thread, self._sql, agent_id, session_id)

    async def clear_run(self, agent_id: str, *, session_id: str, run_id: str) -> None:
        """Hide the run's messages from every read of the provider; unknown agent, session or
        run: no-op. The rows stay (positions never change); a fork made before keeps seeing
        them, one made after inherits the marks."""
        self._check(agent_id, session_id, run_id)
        await self._runner.write(plans.clear_run, self._sql, agent_id, session_id, run_id)

    async def count_messages(self, agent_id: str, *, session_id: str) -> int:
        """How many messages :meth:`get_messages` returns without a limit."""
        self._check(agent_id, session_id)
        return await self._runner.read(plans.count, self._sql, agent_id, session_id)

    async def get_run_ids(self, agent_id: str, *, session_id: str) -> list[str]:
        """The run id of each message, in the order of :meth:`get_messages` (``""``: no run)."""
        self._check(agent_id, session_id)
        return await self._runner.read(plans.run_ids, self._sql, agent_id, session_id)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(project={self._project!r})"
