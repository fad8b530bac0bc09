"""Our compaction as a pydantic-ai history capability.

:func:`compact_history` gives a ``ProcessHistory`` capability (``Agent(...,
capabilities=[compact_history(SlidingWindow(8))])``) whose processor runs our strategies over
the messages pydantic-ai is about to send: they become our messages (native blocks, see
:mod:`.messages`), the strategies make the view, and each message of the view that a strategy
kept unchanged is given back as the very pydantic-ai message it came from; a summary or a
message a strategy changed is rebuilt from its blocks. Our strategies never split a tool call
from its result (they repair pairs), and the view is checked once more in pydantic-ai's terms:
a tool return whose call is not before it is dropped.

A step may also be one of pydantic-ai's own history processors that take the run context first
(``def keep_recent(ctx: RunContext, messages)``, sync or async, as pydantic-ai lists them): it runs
on pydantic-ai's messages with the run's context, in its place among our steps. pydantic-ai hands
the context to a processor whose first parameter is annotated ``RunContext``; a first parameter
named ``ctx`` is taken as the context too.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, cast, get_origin

import msgspec
from pydantic_ai import RunContext
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import ProcessHistory

from axio_context.compaction import CompactionContext, CompactionPipeline, Step, Strategy
from axio_context.messages import Message
from axio_context.tokens import TokenCounter

from .messages import blocks_of, dump_message, rebuilt, tool_names

__all__ = ["compact_history", "history_processor", "takes_run_context"]

#: The metadata key marking which input message one of ours came from, while a view is made.
_INDEX: Final = "pydantic_ai_index"

Processor = Callable[..., Awaitable[list[pm.ModelMessage]]]
_Messages = list[pm.ModelMessage]


def takes_run_context(step: object) -> bool:
    """Whether ``step`` is a history processor taking pydantic-ai's run context first: its first of
    two positional parameters is annotated ``RunContext`` (pydantic-ai's own test) or named ``ctx``."""
    if not callable(step) or callable(getattr(step, "compact", None)) or isinstance(step, Strategy):
        return False
    try:
        signature = inspect.signature(step, eval_str=True)
    except (NameError, TypeError, ValueError):
        try:
            signature = inspect.signature(step)
        except (TypeError, ValueError):
            return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in signature.parameters.values() if p.kind in kinds]
    if len(positional) != 2:
        return False
    first = positional[0]
    annotation = first.annotation
    return annotation is RunContext or get_origin(annotation) is RunContext or first.name == "ctx"


def history_processor(
    *steps: Step | Callable[..., Any], counter: TokenCounter | None = None, max_tokens: int | None = None
) -> Processor:
    """A pydantic-ai history processor running ``steps`` in order: our strategies, and pydantic-ai
    history processors that take the run context first. With one of those among the steps, the
    processor takes ``(ctx, messages)`` (pydantic-ai passes the context); else ``(messages)``."""
    if not steps:
        raise ValueError("compaction needs at least one step (a strategy such as SlidingWindow)")
    context = (
        CompactionContext(max_tokens=max_tokens)
        if counter is None
        else CompactionContext(counter=counter, max_tokens=max_tokens)
    )
    stages: list[Callable[[Any, _Messages], Awaitable[_Messages]]] = []
    ours: list[Step] = []
    for step in (*steps, None):
        if step is not None and not takes_run_context(step):
            ours.append(step)
            continue
        if ours:
            stages.append(_our_stage(CompactionPipeline(ours), context))
            ours = []
        if step is not None:
            stages.append(_their_stage(cast(Callable[..., Any], step)))
    if not any(takes_run_context(step) for step in steps):
        [only] = stages

        async def process(messages: _Messages) -> _Messages:
            return await only(None, messages)

        return process

    async def process_with_context(ctx: RunContext[Any], messages: _Messages) -> _Messages:
        for stage in stages:
            messages = await stage(ctx, messages)
        return messages

    return process_with_context


def _their_stage(processor: Callable[..., Any]) -> Callable[[Any, _Messages], Awaitable[_Messages]]:
    """A pydantic-ai history processor (context first, sync or async) as one stage."""

    async def stage(ctx: Any, messages: _Messages) -> _Messages:
        result = processor(ctx, list(messages))
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, list):
            raise TypeError(f"history processor {processor!r} returned {type(result).__name__}, not a list")
        return result

    return stage


def _our_stage(
    pipeline: CompactionPipeline, context: CompactionContext
) -> Callable[[Any, _Messages], Awaitable[_Messages]]:
    """Our steps as one stage: pydantic-ai's messages in, our view of them, theirs back out."""

    async def process(_ctx: Any, messages: _Messages) -> _Messages:
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
    *steps: Step | Callable[..., Any], counter: TokenCounter | None = None, max_tokens: int | None = None
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
