"""ravi's compaction names, as thin aliases over this package's strategies with ravi's defaults.

Each alias *is* one of our strategies (so it fits a :class:`~axio_context.compaction.CompactionPipeline`,
a :class:`~axio_context.compaction.TokenBudget` or :class:`ContextConfig`) and adds ravi's
``await strategy.compact(raw)``. A strategy of your own subclasses :class:`CompactionStrategy`
and overrides ``compact``. No alias changes the messages it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Self

from ..blocks import ToolUseBlock
from ..compaction import strategies as base
from ..compaction.compact import leading_system_count, run_summarizer
from ..compaction.pairs import repair_tool_pairs, safe_split
from ..compaction.summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    summary_messages,
)
from ..messages import Message
from ..tokens import TokenCounter

__all__ = [
    "CompactionPipeline",
    "CompactionStrategy",
    "SelectiveToolCallCompactionStrategy",
    "SlidingWindowCompaction",
    "SummarizationCompaction",
    "TokenBudgetComposedStrategy",
    "ToolResultCompactionStrategy",
    "TruncationStrategy",
]


class CompactionStrategy(base.Strategy):
    """ravi's strategy base: ``await strategy.compact(raw)`` returns the compacted view.

    Subclass and override :meth:`compact` (ravi's way) or :meth:`apply` (ours); either works
    in every pipeline. (An object that only has ``async compact(raw)`` works too, unsubclassed.)
    """

    async def apply(self, messages: list[Message], context: base.CompactionContext) -> list[Message]:
        if type(self).compact is base.Strategy.compact:
            raise TypeError(f"{type(self).__name__} must override compact() or apply()")
        return await self.compact(messages)


#: ravi's ``CompactionPipeline(strategies)`` is the one pipeline class (each strategy applied to
#: the previous output, ``compact`` included); it counts as a :class:`CompactionStrategy`.
CompactionPipeline = base.CompactionPipeline
CompactionStrategy.register(CompactionPipeline)


class SlidingWindowCompaction(base.SlidingWindow, CompactionStrategy):
    """At most ``max_messages`` messages: the system head, then the most recent ones (no call
    cut from its result)."""

    def __init__(self, max_messages: int = 100) -> None:
        if max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, got {max_messages}")
        super().__init__(max_messages)
        self.max_messages = max_messages

    async def apply(self, messages: list[Message], context: base.CompactionContext) -> list[Message]:
        head = base.head_length(messages)
        # ravi counts the whole window; the head is part of it.
        window = base.SlidingWindow(max(self.max_messages - head, 0), keep_head=True)
        return await window.apply(messages, context)

    def __repr__(self) -> str:
        return f"SlidingWindowCompaction(max_messages={self.max_messages})"


class ToolResultCompactionStrategy(base.TruncateToolResults, CompactionStrategy):
    """Successful tool results cut to ``max_chars`` characters (errors kept whole)."""

    def __init__(self, max_chars: int = 500) -> None:
        super().__init__(max_chars)


class SelectiveToolCallCompactionStrategy(CompactionStrategy):
    """Keep the tool calls (and their results) of the last ``keep_recent_groups`` assistant
    messages that made calls; older calls and results are removed, their text kept."""

    def __init__(self, keep_recent_groups: int = 5) -> None:
        if keep_recent_groups < 0:
            raise ValueError(f"keep_recent_groups must be >= 0, got {keep_recent_groups}")
        self.keep_recent_groups = keep_recent_groups

    async def apply(self, messages: list[Message], context: base.CompactionContext) -> list[Message]:
        groups = [
            sum(isinstance(b, ToolUseBlock) for b in m.content)
            for m in messages
            if m.role == "assistant" and any(isinstance(b, ToolUseBlock) for b in m.content)
        ]
        recent = groups[len(groups) - self.keep_recent_groups :] if self.keep_recent_groups else []
        # A group is one assistant message's calls: keeping the calls of the last N groups is
        # keeping the last sum(calls) call/result pairs, which PruneToolCalls matches by position.
        return await base.PruneToolCalls(keep_last=sum(recent)).apply(messages, context)

    def __repr__(self) -> str:
        return f"SelectiveToolCallCompactionStrategy(keep_recent_groups={self.keep_recent_groups})"


class TruncationStrategy(base.HardTruncation, CompactionStrategy):
    """Drop the oldest messages until at most ``max_messages`` and ``max_chars`` remain."""

    def __init__(self, max_messages: int | None = 100, max_chars: int | None = None) -> None:
        super().__init__(max_messages=max_messages, max_chars=max_chars)


class SummarizationCompaction(CompactionStrategy):
    """Keep the most recent messages worth ``recent_token_budget`` tokens verbatim and replace
    the older ones by a summary, once they are worth ``min_old_tokens`` or more.

    The system head stays verbatim ahead of the summary; no call is cut from its result; a
    failing summarizer leaves the view unchanged (logged). ``llm=`` is ravi's name: an LLM
    client (``complete``/``chat``/``generate``), an axio transport or a summarizer.
    """

    def __init__(
        self,
        summarizer: Summarizer | None = None,
        recent_token_budget: int = 8_000,
        min_old_tokens: int = 2_000,
        *,
        system_prompt: str = DEFAULT_COMPACTION_PROMPT,
        llm: object | None = None,
    ) -> None:
        if llm is not None:
            if summarizer is not None:
                raise TypeError("SummarizationCompaction() got both 'summarizer' and ravi's 'llm'")
            summarizer = check_summarizer(llm, "SummarizationCompaction")
        if recent_token_budget < 0:
            raise ValueError(f"recent_token_budget must be >= 0, got {recent_token_budget}")
        if min_old_tokens < 0:
            raise ValueError(f"min_old_tokens must be >= 0, got {min_old_tokens}")
        self.summarizer: Summarizer = (
            ExtractiveSummarizer()
            if summarizer is None
            else check_summarizer(summarizer, "SummarizationCompaction")
        )
        self.recent_token_budget = recent_token_budget
        self.min_old_tokens = min_old_tokens
        self.system_prompt = system_prompt

    async def apply(self, messages: list[Message], context: base.CompactionContext) -> list[Message]:
        view = repair_tool_pairs(messages)
        system = leading_system_count(view)
        split, recent = len(view), 0
        while split > system:
            cost = context.tokens(view[split - 1 : split])
            if recent + cost > self.recent_token_budget:
                break
            recent += cost
            split -= 1
        split = safe_split(view, split, lower=system)
        if split <= system or context.tokens(view[system:split]) < self.min_old_tokens:
            return view
        text = await run_summarizer(self.summarizer, view[system:split], self.system_prompt)
        if text is None:
            return view
        return [*view[:system], *summary_messages(text), *view[split:]]

    def __repr__(self) -> str:
        return (
            f"SummarizationCompaction(recent_token_budget={self.recent_token_budget},"
            f" min_old_tokens={self.min_old_tokens})"
        )


class TokenBudgetComposedStrategy(base.TokenBudget, CompactionStrategy):
    """Apply ``strategies`` in order only until the view fits ``token_budget`` tokens."""

    def __init__(
        self,
        strategies: Sequence[base.Step],
        token_budget: int,
        *,
        counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(token_budget, strategies, counter=counter)
        self.token_budget = token_budget

    @classmethod
    def from_model(
        cls,
        model_name: str,
        strategies: Sequence[base.Step],
        trigger_ratio: float = 0.80,
        *,
        context_window: int | None = None,
        counter: TokenCounter | None = None,
    ) -> Self:
        """A budget of ``trigger_ratio`` times the model's context window."""
        budget = base.TokenBudget.from_model(
            model_name, strategies, trigger_ratio, context_window=context_window
        ).max_tokens
        return cls(strategies, budget, counter=counter)
