"""AgentContext: one agent's view of its history, the prompt window, and the run scope.

``async with ctx.run(session_id) as run:`` tags every append made through it (or through the
AgentContext while it is the current run) with the run id, sets the context variables of
:mod:`.variables` for code deep in a tool, and on the way out honours the retention: ``RUN``
clears the run's messages whether the block ended normally, by an exception or by
cancellation (the clear is shielded from the cancellation and the cancellation goes on after).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextvars import ContextVar, Token
from types import TracebackType
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from ..memory_blocks.prompt import with_blocks
from ..messages import Message
from .chat import ChatMessageLike
from .config import ContextConfig, window_of
from .history import check_ids, check_messages
from .retention import HistoryRetention
from .variables import (
    current_agent_id,
    current_agent_label,
    current_parent_agent_id,
    current_run_id,
    current_thread_id,
)

if TYPE_CHECKING:
    from ..memory_blocks.store import BlockStore

__all__ = ["AgentContext", "AgentRun"]


class AgentContext:
    """``AgentContext(config, agent_id)``: an agent's history in ``config.history``, its prompt
    window from ``config.pipeline``, its runs kept per ``config.retention``.

    ``agent_label`` is a display name; ``parent_agent_id`` the agent that started this one (by
    default the agent of the run this one's run starts inside, if another). ``blocks``: the
    store of the agent's memory blocks, rendered into the window's system message.
    """

    def __init__(
        self,
        config: ContextConfig,
        agent_id: str,
        *,
        agent_label: str = "",
        parent_agent_id: str | None = None,
        blocks: BlockStore | None = None,
    ) -> None:
        if not isinstance(config, ContextConfig):
            raise TypeError(f"config must be a ContextConfig, got {type(config).__name__}")
        if not isinstance(agent_id, str):
            raise TypeError(f"agent_id must be a str, got {type(agent_id).__name__}")
        self.config = config
        self.agent_id = agent_id
        self.agent_label = agent_label
        self.parent_agent_id = parent_agent_id
        self.blocks = blocks

    def _run_id_for(self, session_id: str) -> str:
        """The current run's id when it is this agent's run in ``session_id``, else ``""``."""
        if current_agent_id.get() == self.agent_id and current_thread_id.get() == session_id:
            return current_run_id.get() or ""
        return ""

    async def append(
        self, session_id: str, message: Message | ChatMessageLike, *, run_id: str | None = None
    ) -> None:
        """Append one message (tagged with the current run, unless ``run_id`` says otherwise)."""
        await self.append_many(session_id, [message], run_id=run_id)

    async def append_many(
        self, session_id: str, messages: Sequence[Message | ChatMessageLike], *, run_id: str | None = None
    ) -> None:
        """Append messages as one write; nothing is written under ``HistoryRetention.NONE``."""
        check_ids(self.agent_id, session_id, "" if run_id is None else run_id)
        batch = check_messages(messages)
        if self.config.retention is HistoryRetention.NONE or not batch:
            return
        tag = self._run_id_for(session_id) if run_id is None else run_id
        await self.config.history.append_many(self.agent_id, batch, session_id=session_id, run_id=tag)

    async def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[Message]:
        """The stored history (see :meth:`HistoryProvider.get_messages`)."""
        return await self.config.history.get_messages(
            self.agent_id, session_id=session_id, limit=limit, offset=offset
        )

    async def get_prompt_window(self, session_id: str) -> list[Message]:
        """Read the history, put the agent's memory blocks (if it has a block store) into the system
        message (:mod:`axio_context.memory_blocks.prompt`'s format), run the pipeline over that, so
        its token counts include the blocks, and return the window; nothing stored is changed."""
        history = await self.get_messages(session_id)
        if self.blocks is not None:
            history = with_blocks(history, await self.blocks.list_blocks(agent_id=self.agent_id))
        return await window_of(self.config.pipeline, history)

    async def clear(self, session_id: str) -> None:
        """Forget this agent's history in ``session_id``."""
        await self.config.history.clear(self.agent_id, session_id=session_id)

    def run(self, session_id: str, run_id: str | None = None) -> AgentRun:
        """A run scope: ``async with ctx.run(session_id) as run:`` (a new uuid4 hex run id by default)."""
        return AgentRun(self, session_id, uuid4().hex if run_id is None else run_id)

    def __repr__(self) -> str:
        return f"AgentContext({self.config!r}, {self.agent_id!r})"


class AgentRun:
    """One run of an agent in a session; use it with ``async with`` (see :meth:`AgentContext.run`)."""

    def __init__(self, context: AgentContext, session_id: str, run_id: str) -> None:
        check_ids(context.agent_id, session_id, run_id)
        if not run_id:
            raise ValueError("run_id must not be empty")
        self.context = context
        self.session_id = session_id
        self.run_id = run_id
        self.parent_agent_id: str | None = context.parent_agent_id
        self._tokens: list[tuple[Any, Token[Any]]] = []

    @property
    def agent_id(self) -> str:
        return self.context.agent_id

    async def append(self, message: Message | ChatMessageLike) -> None:
        """Append one message tagged with this run."""
        await self.context.append_many(self.session_id, [message], run_id=self.run_id)

    async def append_many(self, messages: Sequence[Message | ChatMessageLike]) -> None:
        """Append messages, tagged with this run, as one write."""
        await self.context.append_many(self.session_id, messages, run_id=self.run_id)

    async def get_messages(self, *, limit: int | None = None, offset: int = 0) -> list[Message]:
        """The agent's stored history in this session."""
        return await self.context.get_messages(self.session_id, limit=limit, offset=offset)

    async def get_prompt_window(self) -> list[Message]:
        """The prompt window of this session (see :meth:`AgentContext.get_prompt_window`)."""
        return await self.context.get_prompt_window(self.session_id)

    async def __aenter__(self) -> AgentRun:
        if self._tokens:
            raise RuntimeError(f"run {self.run_id!r} is already active")
        outer_agent = current_agent_id.get()
        if self.parent_agent_id is None and outer_agent is not None and outer_agent != self.agent_id:
            self.parent_agent_id = outer_agent
        values: tuple[tuple[ContextVar[Any], Any], ...] = (
            (current_thread_id, self.session_id),
            (current_agent_id, self.agent_id),
            (current_agent_label, self.context.agent_label),
            (current_parent_agent_id, self.parent_agent_id),
            (current_run_id, self.run_id),
        )
        for var, value in values:
            self._tokens.append((var, var.set(value)))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for var, token in reversed(self._tokens):
            var.reset(token)
        self._tokens.clear()
        if self.context.config.retention is not HistoryRetention.RUN:
            return
        clearing = asyncio.ensure_future(
            self.context.config.history.clear_run(
                self.agent_id, session_id=self.session_id, run_id=self.run_id
            )
        )
        try:
            # Shielded: a run cancelled mid-way still has its messages cleared.
            await asyncio.shield(clearing)
        except asyncio.CancelledError:
            await clearing
            raise

    def __repr__(self) -> str:
        return f"AgentRun(agent_id={self.agent_id!r}, session_id={self.session_id!r}, run_id={self.run_id!r})"
