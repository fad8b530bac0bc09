"""The summarizing strategy: older messages replaced in the view by a model-written summary."""

from __future__ import annotations

import hashlib

from ...codec import encode_message_msgpack
from ...messages import Message
from ..compact import leading_system_count, run_summarizer
from ..pairs import repair_tool_pairs, safe_split
from ..summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    context_window_of,
    is_summary_pair,
    summary_messages,
)
from .base import CompactionContext, Strategy, head_length

__all__ = ["Summarization"]


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
