"""Strategies that shrink tool traffic: long results truncated, old calls pruned."""

from __future__ import annotations

from collections.abc import Collection

from ...blocks import (
    ContentBlock,
    TextBlock,
    ToolResultBlock,
    ToolResultContent,
    ToolUseBlock,
)
from ...messages import Message
from ..pairs import repair_tool_pairs, result_id
from .base import CompactionContext, Strategy

__all__ = ["PruneToolCalls", "TruncateToolResults"]


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
