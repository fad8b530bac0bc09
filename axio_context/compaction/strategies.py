"""View strategies: what the model sees, computed before each call, never deleting anything.

A strategy takes the messages a store returns and gives back a (usually smaller) list for the
next model call; the store is not touched. ``CompactionPipeline([...])`` feeds each step's
output to the next. Steps are :class:`Strategy` objects or plain callables
``list[Message] -> list[Message]`` (sync or async, optionally taking a
:class:`CompactionContext` as second argument).

Every strategy ends with :func:`~axio_context.compaction.pairs.repair_tool_pairs`, so no view
starts with a tool_result or holds a call without its result (except calls in the final
assistant message, still awaiting results); a call whose result never arrived gets a synthetic
error result in the view. Plain-callable steps are repaired the same way.

Strategies that cut history keep the *head* of a view: leading system messages and a summary
pair written by an earlier compaction.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Self, TypeAlias, cast

from ..blocks import (
    ContentBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)
from ..codec import encode_message_msgpack
from ..messages import Message, input_text
from ..tokens import DefaultEstimator, TokenCounter
from .compact import leading_system_count, run_summarizer
from .models import context_window_for
from .pairs import last_group_start, repair_tool_pairs, result_id, safe_split
from .summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    context_window_of,
    is_summary_pair,
    summary_messages,
)

__all__ = [
    "CompactionContext",
    "CompactionPipeline",
    "HardTruncation",
    "MergeConsecutive",
    "PruneToolCalls",
    "RepairToolPairs",
    "SlidingWindow",
    "Step",
    "Strategy",
    "Summarization",
    "TokenBudget",
    "TruncateToolResults",
    "as_strategy",
    "head_length",
    "message_chars",
]

logger = logging.getLogger("axio_context.compaction")


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


_Result: TypeAlias = list[Message] | Awaitable[list[Message]]
Step: TypeAlias = (
    Strategy | Callable[[list[Message]], _Result] | Callable[[list[Message], CompactionContext], _Result]
)


class _Function(Strategy):
    """A plain callable as a step; its output is repaired like every strategy's."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.takes_context = _positional_arity(fn) >= 2

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        result = self.fn(messages, context) if self.takes_context else self.fn(messages)
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, list):
            raise TypeError(f"pipeline step {self.fn!r} returned {type(result).__name__}, not a list")
        return repair_tool_pairs(cast(list[Message], result))

    def __repr__(self) -> str:
        return f"_Function({self.fn!r})"


def _positional_arity(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in kinds)


def as_strategy(step: Step) -> Strategy:
    """``step`` as a :class:`Strategy` (plain callables are wrapped)."""
    if isinstance(step, Strategy):
        return step
    if not callable(step):
        raise TypeError(f"a pipeline step must be a Strategy or a callable, got {type(step).__name__}")
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


# --- the strategies -------------------------------------------------------------------------------


class RepairToolPairs(Strategy):
    """Only the repair: synthetic results for interrupted calls, orphan results removed."""

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        return repair_tool_pairs(messages)

    def __repr__(self) -> str:
        return "RepairToolPairs()"


class SlidingWindow(Strategy):
    """Keep the last ``keep_last`` messages (plus the head, with ``keep_head``).

    A result whose call fell out of the window is removed with it, so the window may hold a
    message fewer than asked, except for the last message: it is what the model answers, so
    when it is a result the window widens to take its call too (one message more than asked)
    rather than empty the view. ``keep_last=0`` keeps only the head.
    """

    def __init__(self, keep_last: int, *, keep_head: bool = True) -> None:
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {keep_last}")
        self.keep_last = keep_last
        self.keep_head = keep_head

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        view = repair_tool_pairs(messages)  # the window counts the messages the model would see
        head = head_length(view) if self.keep_head else 0
        start = len(view) - self.keep_last
        if start <= head:
            return view
        if self.keep_last:
            start = min(start, last_group_start(view, head))
        return repair_tool_pairs([*view[:head], *view[start:]])

    def __repr__(self) -> str:
        return f"SlidingWindow({self.keep_last})"


class TruncateToolResults(Strategy):
    """Cut long successful tool results to ``max_chars``, marking each cut ``[N chars truncated]``.

    Error results are left whole (the model needs the whole error). Results in the last
    ``keep_recent`` messages are left whole too.
    """

    def __init__(self, max_chars: int = 2_000, *, keep_recent: int = 0) -> None:
        if max_chars < 0:
            raise ValueError(f"max_chars must be >= 0, got {max_chars}")
        if keep_recent < 0:
            raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
        self.max_chars = max_chars
        self.keep_recent = keep_recent

    def _cut(self, text: str, limit: int) -> str:
        return f"{text[:limit]}\n[{len(text) - limit} chars truncated]"

    def _truncate(self, block: ToolResultBlock) -> ToolResultBlock:
        if block.is_error:
            return block
        if isinstance(block.content, str):
            if len(block.content) <= self.max_chars:
                return block
            return ToolResultBlock(block.tool_use_id, self._cut(block.content, self.max_chars))
        texts = sum(len(b.text) for b in block.content if isinstance(b, TextBlock))
        if texts <= self.max_chars:
            return block
        left = self.max_chars
        content: list[ToolResultContent] = []
        for item in block.content:
            if isinstance(item, TextBlock) and len(item.text) > left:
                content.append(TextBlock(text=self._cut(item.text, left)))
                left = 0
            else:
                content.append(item)
                if isinstance(item, TextBlock):
                    left -= len(item.text)
        return ToolResultBlock(block.tool_use_id, content)

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        out: list[Message] = []
        stop = len(messages) - self.keep_recent
        for i, msg in enumerate(messages):
            if i < stop and msg.role == "user":
                content: list[ContentBlock] | None = None
                for j, block in enumerate(msg.content):
                    if isinstance(block, ToolResultBlock):
                        cut = self._truncate(block)
                        if cut is not block:
                            content = content or list(msg.content)
                            content[j] = cut
                if content is not None:
                    msg = Message(role=msg.role, content=content)
            out.append(msg)
        return repair_tool_pairs(out)

    def __repr__(self) -> str:
        return f"TruncateToolResults({self.max_chars})"


class PruneToolCalls(Strategy):
    """Keep only the last ``keep_last`` tool calls (call/result pairs); remove older calls and
    their results.

    Pairs are matched by position, not by id alone: a result answers the nearest earlier call
    with its id that is still unanswered, so adapters that reuse ids every turn (``call_0``)
    prune the right pairs. ``keep_last`` counts pairs, as Anthropic's tool-use clearing does,
    so parallel calls of one message count one each. With ``tools``, only calls to those tools
    are pruned and counted. The assistant's text in a pruned message stays; a message left
    with nothing is dropped.
    """

    def __init__(self, keep_last: int = 3, *, tools: Collection[str] | None = None) -> None:
        if keep_last < 0:
            raise ValueError(f"keep_last must be >= 0, got {keep_last}")
        self.keep_last = keep_last
        self.tools = frozenset(tools) if tools is not None else None

    def _prunable(self, block: ContentBlock) -> bool:
        return isinstance(block, ToolUseBlock) and (self.tools is None or block.name in self.tools)

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        calls: list[tuple[int, int]] = []  # (message, block) of each prunable call, in order
        unanswered: dict[str, list[tuple[int, int]]] = {}
        answer: dict[tuple[int, int], tuple[int, int]] = {}  # call -> its result
        for i, msg in enumerate(messages):
            for j, block in enumerate(msg.content):
                rid = result_id(block)
                if rid is not None:
                    waiting = unanswered.get(rid)
                    if waiting:
                        answer[waiting.pop()] = (i, j)
                elif isinstance(block, ToolUseBlock) and msg.role == "assistant":
                    unanswered.setdefault(block.id, []).append((i, j))
                    if self._prunable(block):
                        calls.append((i, j))
        old = calls[: max(0, len(calls) - self.keep_last)]
        if not old:
            return repair_tool_pairs(messages)
        drop = set(old)
        drop.update(answer[c] for c in old if c in answer)
        out: list[Message] = []
        for i, msg in enumerate(messages):
            content = [b for j, b in enumerate(msg.content) if (i, j) not in drop]
            if len(content) == len(msg.content):
                out.append(msg)
            elif content:
                out.append(Message(role=msg.role, content=content))
        return repair_tool_pairs(out)

    def __repr__(self) -> str:
        return f"PruneToolCalls({self.keep_last})"


class HardTruncation(Strategy):
    """The backstop: drop the oldest messages until at most ``max_messages``, ``max_chars`` and
    ``max_tokens``.

    Inside a :class:`TokenBudget` the budget (``context.max_tokens``, counted with the budget's
    counter, media included) is a limit too, so ending a budget's list with this step
    guarantees the budget. The head is kept when it fits. The last message is always kept,
    however long, with the call it answers when it is a tool result: the model must see what it
    is answering, and a result without its call would be invalid. So the view is never empty
    (unless the input is), and only that last exchange can make it exceed a limit.
    """

    def __init__(
        self,
        *,
        max_messages: int | None = None,
        max_chars: int | None = None,
        max_tokens: int | None = None,
    ) -> None:
        if max_messages is None and max_chars is None and max_tokens is None:
            raise ValueError("HardTruncation needs max_messages, max_chars, max_tokens or several")
        if max_messages is not None and max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, got {max_messages}")
        if max_chars is not None and max_chars < 0:
            raise ValueError(f"max_chars must be >= 0, got {max_chars}")
        if max_tokens is not None and max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
        self.max_messages = max_messages
        self.max_chars = max_chars
        self.max_tokens = max_tokens

    def _token_limit(self, context: CompactionContext) -> int | None:
        limits = [x for x in (self.max_tokens, context.max_tokens) if x is not None]
        return min(limits) if limits else None

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        view = repair_tool_pairs(messages)
        n = len(view)
        token_limit = self._token_limit(context)
        chars = [message_chars(m) for m in view]
        tokens = [context.counter.count(m) for m in view] if token_limit is not None else [0] * n

        def fits(count: int, n_chars: int, n_tokens: int) -> bool:
            return (
                (self.max_messages is None or count <= self.max_messages)
                and (self.max_chars is None or n_chars <= self.max_chars)
                and (token_limit is None or n_tokens <= token_limit)
            )

        if fits(n, sum(chars), sum(tokens)):
            return view
        head = head_length(view)
        if head >= n:  # nothing but a head: keep its last message
            head = 0
        # The last message and, when it is a result, its call: kept whatever the limits say.
        floor = last_group_start(view, head)
        used = [
            head + n - floor,
            sum(chars[:head]) + sum(chars[floor:]),
            sum(tokens[:head]) + sum(tokens[floor:]),
        ]
        if not fits(*used):
            head = 0
            floor = last_group_start(view, 0)
            used = [n - floor, sum(chars[floor:]), sum(tokens[floor:])]
        start = floor
        while start > head and fits(used[0] + 1, used[1] + chars[start - 1], used[2] + tokens[start - 1]):
            start -= 1
            used = [used[0] + 1, used[1] + chars[start], used[2] + tokens[start]]
        # A result at the cut whose call fell out is dropped by the repair (fewer, never more).
        return repair_tool_pairs([*view[:head], *view[start:]])

    def __repr__(self) -> str:
        limits = {
            "max_messages": self.max_messages,
            "max_chars": self.max_chars,
            "max_tokens": self.max_tokens,
        }
        return f"HardTruncation({', '.join(f'{k}={v}' for k, v in limits.items() if v is not None)})"


class MergeConsecutive(Strategy):
    """Merge consecutive messages of the same role into one (for providers that need turns to
    alternate); the content keeps its order."""

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        out: list[Message] = []
        for msg in repair_tool_pairs(messages):
            if out and out[-1].role == msg.role:
                out[-1] = Message(role=msg.role, content=[*out[-1].content, *msg.content])
            else:
                out.append(msg)
        return out

    def __repr__(self) -> str:
        return "MergeConsecutive()"


class Summarization(Strategy):
    """Summarize the older part of a view that is over budget, keeping recent messages verbatim.

    Triggers when the view's estimated tokens exceed ``max_tokens`` (default: the enclosing
    :class:`TokenBudget`'s budget, else 75% of the summarizer's context window). It keeps the
    most recent messages worth up to ``keep_ratio`` of that, cut where no tool pair breaks, and
    puts a summary pair before them. A view that opens with a summary has it updated, not
    stacked. The last summary is remembered: when the next view extends the same prefix, only
    the new messages are sent along with it. A failing summarizer is logged and the view passes
    through unchanged.
    """

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        *,
        max_tokens: int | None = None,
        keep_ratio: float = 0.4,
        system_prompt: str = DEFAULT_COMPACTION_PROMPT,
    ) -> None:
        if not 0 <= keep_ratio < 1:
            raise ValueError(f"keep_ratio must be in [0, 1), got {keep_ratio}")
        self.summarizer: Summarizer = (
            ExtractiveSummarizer() if summarizer is None else check_summarizer(summarizer, "Summarization")
        )
        self.max_tokens = max_tokens
        self.keep_ratio = keep_ratio
        self.system_prompt = system_prompt
        self._cached: tuple[int, bytes, str] | None = None

    def _limit(self, context: CompactionContext) -> int:
        if self.max_tokens is not None:
            return self.max_tokens
        if context.max_tokens is not None:
            return context.max_tokens
        return int(context_window_of(self.summarizer) * 0.75)

    def _split(self, view: list[Message], system: int, limit: int, context: CompactionContext) -> int:
        head = head_length(view)
        keep = int(limit * self.keep_ratio)
        start = len(view) - 1
        used = context.counter.count(view[start]) if view else 0
        while start > head and used + context.counter.count(view[start - 1]) <= keep:
            start -= 1
            used += context.counter.count(view[start])
        return safe_split(view, start, lower=system)

    async def _summary(self, prefix: list[Message]) -> str | None:
        digests = hashlib.blake2b(digest_size=16)
        cached_n, cached_digest, cached_text = self._cached or (-1, b"", "")
        reuse = False
        for i, msg in enumerate(prefix):
            if i == cached_n:
                reuse = digests.copy().digest() == cached_digest
            digests.update(encode_message_msgpack(msg))
        digest = digests.digest()
        if cached_n == len(prefix) and digest == cached_digest:
            return cached_text
        if reuse:
            text = await run_summarizer(
                self.summarizer, [*summary_messages(cached_text), *prefix[cached_n:]], self.system_prompt
            )
        else:
            text = await run_summarizer(self.summarizer, prefix, self.system_prompt)
        if text is not None:
            self._cached = (len(prefix), digest, text)
        return text

    async def apply(self, messages: list[Message], context: CompactionContext) -> list[Message]:
        view = repair_tool_pairs(messages)
        limit = self._limit(context)
        if not view or context.tokens(view) <= limit:
            return view
        system = leading_system_count(view)
        split = self._split(view, system, limit, context)
        prefix = view[system:split]
        if not prefix or (len(prefix) == 2 and is_summary_pair(prefix)):
            return view
        text = await self._summary(prefix)
        if text is None:
            return view
        return repair_tool_pairs([*view[:system], *summary_messages(text), *view[split:]])

    def __repr__(self) -> str:
        return f"Summarization({self.summarizer!r})"
