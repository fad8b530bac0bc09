"""The strategy protocol, how plain callables become steps, the pipeline and the token budget."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, Self, TypeAlias, cast, runtime_checkable

from ...blocks import (
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from ...messages import Message, input_text
from ...tokens import DefaultEstimator, TokenCounter
from ..compact import leading_system_count
from ..models import context_window_for
from ..pairs import repair_tool_pairs
from ..summarizers import (
    is_summary_pair,
)

__all__ = [
    "CompactionContext",
    "CompactionPipeline",
    "Compacts",
    "Step",
    "Strategy",
    "TokenBudget",
    "as_strategy",
    "head_length",
    "message_chars",
]


@dataclass(frozen=True)
class CompactionContext:
    """What a step may want to know besides the messages: how to count tokens, and the budget."""

    counter: TokenCounter = field(default_factory=DefaultEstimator)
    #: The token budget of the view, where a :class:`TokenBudget` (or the caller) set one.
    max_tokens: int | None = None

    def tokens(self, messages: Sequence[Message]) -> int:
        """Estimated tokens of ``messages``."""
        count = self.counter.count
        return sum(count(m) for m in messages)


class Strategy(ABC):
    """One step of a view pipeline."""

    @abstractmethod
    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        """The view after this step; must not modify ``messages`` or the messages in it."""

    async def __call__(
        self, messages: list[Message], context: CompactionContext | None = None
    ) -> list[Message]:
        return await self.apply(list(messages), context or CompactionContext())

    async def compact(self, raw: Sequence[Message]) -> list[Message]:
        """ravi's call form, ``await strategy.compact(raw)``: the view of ``raw`` (not changed);
        ravi's chat messages in ``raw`` are read as :class:`Message` first."""
        messages = list(raw)
        if not all(isinstance(m, Message) for m in messages):
            from ...agents.chat import as_message  # here: the agents package imports this one

            messages = [as_message(m, f"raw[{i}]") for i, m in enumerate(messages)]
        return await self.apply(messages, CompactionContext())


_Result: TypeAlias = list[Message] | Awaitable[list[Message]]


@runtime_checkable
class Compacts(Protocol):
    """ravi's strategy shape: any object with ``async def compact(raw_history)``."""

    def compact(self, raw: list[Message], /) -> Awaitable[list[Message]]: ...


Step: TypeAlias = (
    Strategy
    | Compacts
    | Callable[[list[Message]], _Result]
    | Callable[[list[Message], CompactionContext], _Result]
    | Callable[[CompactionContext, list[Message]], _Result]
)


class _Function(Strategy):
    """A plain callable as a step; its output is repaired like every strategy's."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.takes_context = _positional_arity(fn) >= 2
        self.context_first = self.takes_context and _context_first(fn)

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        if self.context_first:  # pydantic-ai's history-processor order, (ctx, messages)
            result = self.fn(context, messages)
        else:
            result = self.fn(messages, context) if self.takes_context else self.fn(messages)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, list):
            raise TypeError(f"pipeline step {self.fn!r} returned {type(result).__name__}, not a list")
        return repair_tool_pairs(cast(list[Message], result))

    def __repr__(self) -> str:
        return f"_Function({self.fn!r})"


class _Compacting(Strategy):
    """An object with ravi's ``async compact(raw)`` as a step; its output is repaired like
    every strategy's."""

    def __init__(self, strategy: Compacts) -> None:
        self.strategy = strategy

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        result = await self.strategy.compact(messages)
        if not isinstance(result, list):
            raise TypeError(f"{self.strategy!r}.compact() returned {type(result).__name__}, not a list")
        return repair_tool_pairs(result)

    def __repr__(self) -> str:
        return repr(self.strategy)


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


def _context_first(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` takes the context first: its first parameter is named ``ctx`` or annotated
    as a context (``CompactionContext``, or pydantic-ai's ``RunContext``)."""
    try:
        first = next(iter(inspect.signature(fn).parameters.values()))
    except (StopIteration, TypeError, ValueError):
        return False
    annotation = first.annotation
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return first.name == "ctx" or str(name).split("[")[0].endswith(("CompactionContext", "RunContext"))


def as_strategy(step: Step) -> Strategy:
    """``step`` as a :class:`Strategy`: an object with ravi's ``compact(raw)`` and a plain callable
    are wrapped (``compact`` wins where an object has both)."""
    if isinstance(step, Strategy):
        return step
    if callable(getattr(step, "compact", None)):
        return _Compacting(cast(Compacts, step))
    if not callable(step):
        raise TypeError(
            "a pipeline step must be a Strategy, an object with async compact(raw), or a callable;"
            f" got {type(step).__name__}"
        )
    return _Function(step)


def head_length(messages: Sequence[Message]) -> int:
    """How many leading messages are the head: system messages, then an optional summary pair."""
    i = leading_system_count(messages)
    if is_summary_pair(messages, i):
        i += 2
    return i


def message_chars(message: Message) -> int:
    """Characters of a message's text, tool inputs, tool results and reasoning (media count 0)."""
    total = 0
    for block in message.content:
        if isinstance(block, TextBlock | ReasoningBlock):
            total += len(block.text)
        elif isinstance(block, ToolUseBlock):
            total += len(block.name) + len(input_text(block.input))
        elif isinstance(block, ToolResultBlock):
            if isinstance(block.content, str):
                total += len(block.content)
            else:
                total += sum(len(b.text) for b in block.content if isinstance(b, TextBlock))
    return total


# --- pipeline -----------------------------------------------------------------------------------


class CompactionPipeline(Strategy):
    """Steps applied in order, each to the previous one's output; no steps means no change."""

    def __init__(self, steps: Sequence[Step] = ()) -> None:
        self.steps: list[Strategy] = [as_strategy(s) for s in steps]

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        view = messages
        for step in self.steps:
            view = await step.apply(view, context)
        return view

    def __repr__(self) -> str:
        return f"CompactionPipeline({self.steps!r})"


class TokenBudget(Strategy):
    """Applies its children in order only until the view fits ``max_tokens`` (estimated).

    A view that already fits passes through (repaired). Children see the budget in
    ``context.max_tokens`` and count with ``counter`` (default: the context's). If every child
    ran and the view still does not fit, the last output is returned: end the list with
    :class:`HardTruncation`, which cuts to this budget, for a guarantee (only a last message
    that alone exceeds the budget is kept over it: the model must see what it answers).
    """

    def __init__(
        self, max_tokens: int, strategies: Sequence[Step], *, counter: TokenCounter | None = None
    ) -> None:
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        self.max_tokens = max_tokens
        self.strategies = [as_strategy(s) for s in strategies]
        self.counter = counter

    @classmethod
    def from_model(
        cls,
        name: str,
        strategies: Sequence[Step],
        trigger_ratio: float = 0.8,
        *,
        context_window: int | None = None,
        counter: TokenCounter | None = None,
    ) -> Self:
        """A budget of ``trigger_ratio`` times the model's context window (from the known-models
        table, or ``context_window``); an unknown name raises :class:`UnknownModelError`."""
        if not 0 < trigger_ratio <= 1:
            raise ValueError(f"trigger_ratio must be in (0, 1], got {trigger_ratio}")
        window = context_window or context_window_for(name)
        return cls(int(window * trigger_ratio), strategies, counter=counter)

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        ctx = replace(context, max_tokens=self.max_tokens, counter=self.counter or context.counter)
        view = repair_tool_pairs(messages)
        for step in self.strategies:
            if ctx.tokens(view) <= self.max_tokens:
                break
            view = await step.apply(view, ctx)
        return view

    def __repr__(self) -> str:
        return f"TokenBudget({self.max_tokens}, {self.strategies!r})"
