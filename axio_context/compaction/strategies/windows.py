"""Strategies that keep a window of the history: repair, sliding window, hard truncation, merging."""

from __future__ import annotations

from ...messages import Message
from ..pairs import last_group_start, repair_tool_pairs
from .base import CompactionContext, Strategy, head_length, message_chars

__all__ = ["HardTruncation", "MergeConsecutive", "RepairToolPairs", "SlidingWindow"]


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
