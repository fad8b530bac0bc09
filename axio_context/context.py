"""The ContextStore contract and the in-memory store.

``ContextStore`` has axio 0.12's whole surface and default behaviours, so code written against
axio ports by changing imports. Additions (``append_many``) have defaults built on the abstract
methods, so a third-party store written for axio still satisfies this contract.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Self
from uuid import uuid4

from .messages import Message, SessionInfo, preview_of

__all__ = ["ContextStore", "MemoryContextStore"]


class ContextStore(ABC):
    """Where one conversation's messages and token totals live (axio's contract)."""

    @property
    def session_id(self) -> str:
        """Lazily created uuid4 hex; works even when a subclass skips ``__init__``."""
        if "_session_id" not in self.__dict__:
            self.__dict__["_session_id"] = uuid4().hex
        return str(self.__dict__["_session_id"])

    @abstractmethod
    async def append(self, message: Message) -> None:
        """Add one message at the end of the history."""

    async def append_many(self, messages: Iterable[Message]) -> None:
        """Add several messages in order; durable stores make this one atomic step."""
        for message in messages:
            await self.append(message)

    @abstractmethod
    async def get_history(self) -> list[Message]:
        """The messages in order (the model's view, where a store compacts)."""

    async def clear(self) -> None:
        """Forget every message and the token totals; unsupported unless overridden."""
        raise NotImplementedError(f"{type(self).__name__} does not support clear()")

    async def fork(self) -> ContextStore:
        """An independent copy; by default a deep-copied MemoryContextStore, as in axio."""
        messages = copy.deepcopy(await self.get_history())
        in_tok, out_tok = await self.get_context_tokens()
        store = MemoryContextStore(messages)
        await store.set_context_tokens(in_tok, out_tok)
        return store

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Record the token totals; a no-op by default (axio drops them silently)."""

    async def get_context_tokens(self) -> tuple[int, int]:
        """The (input, output) token totals; ``(0, 0)`` by default."""
        return 0, 0

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the token totals, through get/set unless a store does it in one step."""
        cur_in, cur_out = await self.get_context_tokens()
        await self.set_context_tokens(cur_in + input_tokens, cur_out + output_tokens)

    async def close(self) -> None:
        """Release what the store holds; a no-op by default."""

    async def list_sessions(self) -> list[SessionInfo]:
        """Sessions this store can see; by default one entry for this session."""
        history = await self.get_history()
        in_tok, out_tok = await self.get_context_tokens()
        return [
            SessionInfo(
                session_id=self.session_id,
                message_count=len(history),
                preview=preview_of(history),
                created_at="",
                input_tokens=in_tok,
                output_tokens=out_tok,
            )
        ]

    @classmethod
    async def from_history(cls, history: list[Message]) -> Self:
        """A new store of this class holding ``history`` (needs a no-argument constructor)."""
        store = cls()
        await store.append_many(history)
        return store

    @classmethod
    async def from_context(cls, context: ContextStore) -> Self:
        """A new store of this class holding a copy of another store's history."""
        return await cls.from_history(await context.get_history())


class MemoryContextStore(ContextStore):
    """Keeps one conversation in a Python list; ``fork()`` is a deep copy, isolated both ways."""

    def __init__(self, history: list[Message] | None = None, *, session_id: str | None = None) -> None:
        self._session_id = session_id or uuid4().hex
        self._history: list[Message] = list(history or [])
        self._input_tokens = 0
        self._output_tokens = 0

    @property
    def session_id(self) -> str:
        return self._session_id

    async def append(self, message: Message) -> None:
        self._history.append(message)

    async def append_many(self, messages: Iterable[Message]) -> None:
        self._history.extend(messages)

    async def get_history(self) -> list[Message]:
        return list(self._history)

    async def clear(self) -> None:
        self._history.clear()
        self._input_tokens = 0
        self._output_tokens = 0

    async def pop(self) -> Message | None:
        """Remove and return the last message (a chat app's "retry"); ``None`` when empty."""
        return self._history.pop() if self._history else None

    async def fork(self) -> MemoryContextStore:
        store = MemoryContextStore(copy.deepcopy(self._history))
        store._input_tokens = self._input_tokens
        store._output_tokens = self._output_tokens
        return store

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self._input_tokens = input_tokens
        self._output_tokens = output_tokens

    async def get_context_tokens(self) -> tuple[int, int]:
        return self._input_tokens, self._output_tokens

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self._input_tokens += input_tokens
        self._output_tokens += output_tokens
