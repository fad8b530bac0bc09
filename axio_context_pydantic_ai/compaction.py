"""Our compaction as a pydantic-ai history capability.

:func:`compact_history` gives a ``ProcessHistory`` capability (``Agent(...,
capabilities=[compact_history(SlidingWindow(8))])``) whose processor runs our strategies over
the messages pydantic-ai is about to send: they become our messages (native blocks, see
:mod:`.messages`), the strategies make the view, and each message of the view that a strategy
kept unchanged is given back as the very pydantic-ai message it came from; a summary or a
message a strategy changed is rebuilt from its blocks. Our strategies never split a tool call
from its result (they repair pairs), and the view is checked once more in pydantic-ai's terms:
a tool return whose call is not before it is dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import msgspec
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import ProcessHistory

from axio_context.compaction import CompactionContext, CompactionPipeline, Step
from axio_context.messages import Message
from axio_context.tokens import TokenCounter

from .messages import blocks_of, dump_message, rebuilt, tool_names

__all__ = ["compact_history", "history_processor"]

#: The metadata key marking which input message one of ours came from, while a view is made.
_INDEX: Final = "pydantic_ai_index"

Processor = Callable[[list[pm.ModelMessage]], Awaitable[list[pm.ModelMessage]]]


def history_processor(
    *steps: Step, counter: TokenCounter | None = None, max_tokens: int | None = None
) -> Processor:
    """A pydantic-ai history processor running ``steps`` (our strategies, in order)."""
    if not steps:
        raise ValueError("compaction needs at least one step (a strategy such as SlidingWindow)")
    pipeline = CompactionPipeline(steps)
    context = (
        CompactionContext(max_tokens=max_tokens)
        if counter is None
        else CompactionContext(counter=counter, max_tokens=max_tokens)
    )

    async def process(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
        natives: list[Message] = []
        for n, model_message in enumerate(messages):
            role, blocks = blocks_of(msgspec.json.decode(dump_message(model_message)))
            natives.append(Message(role=role, content=blocks, metadata={_INDEX: n}))
        view = await pipeline(natives, context)
        names = tool_names(messages)
        out: list[pm.ModelMessage] = []
        for message in view:
            i = (message.metadata or {}).get(_INDEX)
            if isinstance(i, int) and 0 <= i < len(natives) and _same(message, natives[i]):
                out.append(messages[i])
            else:
                out.append(rebuilt(message, names))
        return _mend_pairs(out)

    return process


def compact_history(
    *steps: Step, counter: TokenCounter | None = None, max_tokens: int | None = None
) -> ProcessHistory[Any]:
    """A ``ProcessHistory`` capability running ``steps`` before each model request."""
    return ProcessHistory(history_processor(*steps, counter=counter, max_tokens=max_tokens))


def _same(a: Message, b: Message) -> bool:
    return a.role == b.role and a.content == b.content


def _mend_pairs(messages: Sequence[pm.ModelMessage]) -> list[pm.ModelMessage]:
    """Drop tool returns (and retries) whose call is not earlier in the view; a request left
    with no parts goes with them."""
    called: set[str] = set()
    out: list[pm.ModelMessage] = []
    for message in messages:
        if isinstance(message, pm.ModelResponse):
            called.update(p.tool_call_id for p in message.parts if isinstance(p, pm.ToolCallPart))
            out.append(message)
            continue
        parts = [p for p in message.parts if not _orphan(p, called)]
        if len(parts) == len(message.parts):
            out.append(message)
        elif parts:
            out.append(
                pm.ModelRequest(parts=parts, timestamp=message.timestamp, instructions=message.instructions)
            )
    return out


def _orphan(part: pm.ModelRequestPart, called: set[str]) -> bool:
    if isinstance(part, pm.ToolReturnPart):
        return part.tool_call_id not in called
    if type(part).__name__ == "RetryPromptPart":
        return bool(getattr(part, "tool_name", None)) and getattr(part, "tool_call_id", "") not in called
    return False
