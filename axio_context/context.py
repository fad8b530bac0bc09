"""The ContextStore contract and the in-memory store.

``ContextStore`` has axio 0.12's whole surface and default behaviours, so code written against
axio ports by changing imports. Additions (``append_many``) have defaults built on the abstract
methods, so a third-party store written for axio still satisfies this contract.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Self
from uuid import uuid4

import msgspec

from .checkpoints import Checkpoint
from .codec import check_message
from .errors import CheckpointError, DecodeError, LimitError
from .messages import Message, SessionInfo, preview_of
from .tokens import DefaultEstimator, TokenCounter
from .usage import token_count, token_totals_after_add

__all__ = ["ContextStore", "MemoryContextStore", "check_limit", "tail_of_view"]


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

    async def get_tail(self, limit: int) -> list[Message]:
        """The last ``limit`` messages of :meth:`get_history`'s view. Stores of this package
        read only those rows (their ``get_history(limit=...)``); this default reads them all."""
        n = check_limit(limit)
        return (await self.get_history())[-n:] if n else []

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


def check_limit(limit: object) -> int:
    """``limit`` as a message count; :class:`LimitError` unless it is an int of 0 or more."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise LimitError(f"history limit must be a whole number of messages, 0 or more, got {limit!r:.40}")
    return limit


def tail_of_view(summary: list[Message], own: list[Message], limit: int) -> list[Message]:
    """The last ``limit`` messages of ``summary + own``, where ``own`` already holds the last
    ``limit`` (or all) of the messages after the checkpoint."""
    need = limit - len(own)
    return [*summary[-need:], *own] if need > 0 and summary else own[-limit:] if limit else []


def _check_batch(messages: Iterable[Message]) -> None:
    for i, message in enumerate(messages):
        try:
            check_message(message)
        except DecodeError as exc:
            raise DecodeError(f"message {i}: {exc}") from None


class MemoryContextStore(ContextStore):
    """Keeps one conversation in a Python list; ``fork()`` is a deep copy, isolated both ways.

    It implements :class:`~axio_context.checkpoints.CheckpointStore`: after a checkpoint,
    ``get_history()`` is the latest checkpoint's summary plus every message after its position,
    while ``get_full_history()`` still returns every message. Each message's estimated tokens
    are cached at append as running sums, so ``estimated_view_tokens()`` costs the same for any
    length of conversation.
    """

    def __init__(
        self,
        history: list[Message] | None = None,
        *,
        session_id: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._session_id = session_id or uuid4().hex
        self._counter: TokenCounter = token_counter or DefaultEstimator()
        self._history: list[Message] = []
        #: ``_cumulative[i]`` is the estimated tokens of ``_history[:i]``.
        self._cumulative: list[int] = [0]
        self._checkpoints: list[Checkpoint] = []
        self._summary_tokens: dict[int, int] = {}
        self._next_checkpoint_id = 1
        self._input_tokens = 0
        self._output_tokens = 0
        if history:
            _check_batch(history)
        self._extend(history or [])

    @property
    def session_id(self) -> str:
        return self._session_id

    def _extend(self, messages: Iterable[Message]) -> None:
        count = self._counter.count
        total = self._cumulative[-1]
        for message in messages:
            self._history.append(message)
            total += count(message)
            self._cumulative.append(total)

    async def append(self, message: Message) -> None:
        """Append ``message``; refused (:class:`DecodeError`, nothing kept) when a durable store
        could not give it back (see :func:`~axio_context.codec.check_message`)."""
        _check_batch((message,))
        self._extend((message,))

    async def append_many(self, messages: Iterable[Message]) -> None:
        """Append in order, all or none: one message refused refuses the batch."""
        batch = list(messages)
        _check_batch(batch)
        self._extend(batch)

    async def get_history(self, limit: int | None = None) -> list[Message]:
        """The view (the latest checkpoint's summary, then what follows it); with ``limit``,
        only its last ``limit`` messages."""
        if limit is None:
            if not self._checkpoints:
                return list(self._history)
            latest = self._checkpoints[-1]
            return [*latest.summary, *self._history[latest.position :]]
        n = check_limit(limit)
        start = max(self._checkpoints[-1].position if self._checkpoints else 0, len(self._history) - n)
        own = self._history[start:]
        return tail_of_view(self._checkpoints[-1].summary if self._checkpoints else [], own, n)

    async def get_tail(self, limit: int) -> list[Message]:
        return await self.get_history(limit=check_limit(limit))

    async def get_full_history(self) -> list[Message]:
        """Every message, ignoring checkpoints."""
        return list(self._history)

    async def add_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        """Store ``checkpoint`` as the latest; the view becomes its summary plus what follows it."""
        if not isinstance(checkpoint, Checkpoint):
            raise CheckpointError(f"expected a Checkpoint, got {type(checkpoint).__name__}")
        if not 0 <= checkpoint.position <= len(self._history):
            raise CheckpointError(
                f"checkpoint position {checkpoint.position} is outside the transcript "
                f"(0..{len(self._history)} messages)"
            )
        if not all(isinstance(m, Message) for m in checkpoint.summary):
            raise CheckpointError("a checkpoint's summary must be a list of Message")
        stored = msgspec.structs.replace(
            checkpoint,
            id=self._next_checkpoint_id,
            created_at=datetime.now(UTC).isoformat(timespec="microseconds"),
        )
        self._next_checkpoint_id += 1
        self._summary_tokens[stored.id] = sum(self._counter.count(m) for m in stored.summary)
        self._checkpoints.append(stored)
        return stored

    async def list_checkpoints(self) -> list[Checkpoint]:
        """This session's checkpoints, oldest first."""
        return list(self._checkpoints)

    async def estimated_view_tokens(self) -> int:
        """Estimated tokens of ``get_history()``, from the cached per-message counts."""
        end = self._cumulative[-1]
        if not self._checkpoints:
            return end
        latest = self._checkpoints[-1]
        return self._summary_tokens[latest.id] + end - self._cumulative[latest.position]

    async def clear(self) -> None:
        self._history.clear()
        self._cumulative = [0]
        self._checkpoints.clear()
        self._summary_tokens.clear()
        self._input_tokens = 0
        self._output_tokens = 0

    async def pop(self) -> Message | None:
        """Remove and return the last message (a chat app's "retry"); ``None`` when empty.

        Checkpoints that covered the removed message are dropped with it.
        """
        if not self._history:
            return None
        message = self._history.pop()
        self._cumulative.pop()
        end = len(self._history)
        for dropped in [cp for cp in self._checkpoints if cp.position > end]:
            self._summary_tokens.pop(dropped.id, None)
        self._checkpoints = [cp for cp in self._checkpoints if cp.position <= end]
        return message

    async def fork(self) -> MemoryContextStore:
        store = MemoryContextStore(session_id=None, token_counter=self._counter)
        store._history = copy.deepcopy(self._history)
        store._cumulative = list(self._cumulative)
        store._checkpoints = copy.deepcopy(self._checkpoints)
        store._summary_tokens = dict(self._summary_tokens)
        store._next_checkpoint_id = self._next_checkpoint_id
        store._input_tokens = self._input_tokens
        store._output_tokens = self._output_tokens
        return store

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Set the totals: whole numbers in 0..2**63-1, else TokenCountError and no change."""
        totals = token_count("input_tokens", input_tokens), token_count("output_tokens", output_tokens)
        self._input_tokens, self._output_tokens = totals

    async def get_context_tokens(self) -> tuple[int, int]:
        return self._input_tokens, self._output_tokens

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the totals; a total that would leave 0..2**63-1 is refused (TokenCountError),
        changing nothing, as :meth:`set_context_tokens` refuses it."""
        current = (self._input_tokens, self._output_tokens)
        self._input_tokens, self._output_tokens = token_totals_after_add(current, input_tokens, output_tokens)

    async def list_sessions(self) -> list[SessionInfo]:
        """One entry for this session, counting the full transcript (not the compacted view)."""
        return [
            SessionInfo(
                session_id=self._session_id,
                message_count=len(self._history),
                preview=preview_of(self._history),
                created_at="",
                input_tokens=self._input_tokens,
                output_tokens=self._output_tokens,
            )
        ]
