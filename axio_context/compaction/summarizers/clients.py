"""Model clients of the seed systems as summarizers: axio's transports and ravi's LLM clients.

axio's ``AutoCompactStore(store, transport)`` and ``compact_context(ctx, transport)`` summarize
through an axio ``CompletionTransport`` (anything with ``stream(messages, tools, system)``) and
read the threshold from ``transport.model.context_window``. :class:`TransportSummarizer` does the
same: it sends the old messages, then axio's own request ("Summarize the conversation above."),
with the compaction prompt as the system prompt and no tools, and joins the streamed text.
Messages go to the transport as axio's own ``Message`` objects when axio is installed (its
transports read axio's block classes), else as ours (a duck-typed transport reads the same
attribute names). axio is imported only then, never when this module loads.

ravi's ``SummarizationCompaction(llm=...)`` takes an LLM client; :class:`ClientSummarizer` calls
its ``complete``, ``chat`` or ``generate`` with OpenAI-shaped messages (the compaction prompt as
the system message, the rendered transcript as the user message) and reads the text reply.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final, Protocol, cast, runtime_checkable

from ...blocks import TextBlock
from ...messages import Message
from .protocol import Summarizer
from .rendering import render_transcript

__all__ = [
    "SUMMARIZE_REQUEST",
    "ClientSummarizer",
    "CompletionTransport",
    "TransportSummarizer",
    "check_summarizer",
    "client_method",
]

#: The user turn axio's compaction adds after the old messages.
SUMMARIZE_REQUEST: Final = "Summarize the conversation above."

#: The methods of an LLM client tried, in order, by :class:`ClientSummarizer`.
_CLIENT_METHODS: Final = ("complete", "chat", "generate")


@runtime_checkable
class CompletionTransport(Protocol):
    """axio's ``CompletionTransport``: ``stream(messages, tools, system)`` yields stream events."""

    def stream(self, messages: list[Any], tools: list[Any], system: str, /) -> AsyncIterator[Any]: ...


class TransportSummarizer:
    """An axio ``CompletionTransport`` as a :class:`~.protocol.Summarizer`.

    ``model`` is the transport's (so ``context_window_of`` reads ``model.context_window`` and
    checkpoints record ``model.id``, as axio sizes its threshold).
    """

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.model = getattr(transport, "model", None)

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        request = [*messages, Message(role="user", content=[TextBlock(text=SUMMARIZE_REQUEST)])]
        parts: list[str] = []
        async for event in self.transport.stream(_for_transport(request), [], system_prompt):
            kind = type(event).__name__
            if kind == "TextDelta":
                parts.append(event.delta)
            elif kind == "Error":  # axio's error event carries the exception the stream hit
                raise event.exception
        return "".join(parts)

    def __repr__(self) -> str:
        return f"TransportSummarizer({self.transport!r})"


def _for_transport(messages: Sequence[Message]) -> list[Any]:
    """``messages`` as axio's own Message objects when axio is installed, else as they are.

    A block axio cannot read (one of our additions) is left out of the copy it gets.
    """
    try:  # by name: axio is optional and has no stubs here
        axio_block = importlib.import_module("axio.blocks").from_dict
        axio_message = importlib.import_module("axio.messages").Message
    except ImportError:
        return list(messages)
    out: list[Any] = []
    for message in messages:
        blocks = []
        for block in message.to_dict()["content"]:
            try:
                blocks.append(axio_block(block))
            except (KeyError, TypeError, ValueError):
                continue
        out.append(axio_message(role=message.role, content=blocks))
    return out


def client_method(client: object) -> str | None:
    """The name of the method :class:`ClientSummarizer` would call on ``client``, if it has one."""
    for name in _CLIENT_METHODS:
        if callable(getattr(client, name, None)):
            return name
    return None


class ClientSummarizer:
    """ravi's LLM client as a :class:`~.protocol.Summarizer`: one call of its ``complete``,
    ``chat`` or ``generate`` (the first it has) with ``[system, user]`` messages as dicts."""

    def __init__(self, client: Any) -> None:
        method = client_method(client)
        if method is None:
            raise TypeError(f"an LLM client needs one of {', '.join(_CLIENT_METHODS)}()")
        self.client = client
        self.method = method
        self.model = getattr(client, "model", None)

    async def __call__(self, messages: list[Message], system_prompt: str, /) -> str:
        request = [
            {"role": "system", "content": system_prompt},
            {"role": "user", "content": render_transcript(messages)},
        ]
        reply: Any = getattr(self.client, self.method)(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return _reply_text(reply)

    def __repr__(self) -> str:
        return f"ClientSummarizer({self.client!r})"


def _reply_text(reply: Any) -> str:
    """The text of a client's reply: a string, or its ``content`` / ``text`` / ``message.content``."""
    if isinstance(reply, str):
        return reply
    for owner in (reply, getattr(reply, "message", None)):
        for attr in ("content", "text"):
            value = owner.get(attr) if isinstance(owner, dict) else getattr(owner, attr, None)
            if isinstance(value, str):
                return value
    raise TypeError(f"the LLM client replied with {type(reply).__name__}, which holds no text")


def check_summarizer(summarizer: object, where: str) -> Summarizer:
    """``summarizer`` as a :class:`Summarizer`, or a :class:`TypeError` naming what ``where`` got.

    An async callable is used as it is. The seeds' model clients are accepted as their code passes
    them: an axio ``CompletionTransport`` (it has ``stream()``) summarizes through the transport
    and sizes the threshold from ``transport.model.context_window``, as axio does; ravi's LLM
    client (``complete``/``chat``/``generate``) answers one request. Checked when handed over,
    not when the first compaction fails.
    """
    if callable(summarizer):
        return cast(Summarizer, summarizer)
    if callable(getattr(summarizer, "stream", None)):
        return TransportSummarizer(summarizer)
    if client_method(summarizer) is not None:
        return ClientSummarizer(summarizer)
    kind = type(summarizer)
    raise TypeError(
        f"{where} needs a Summarizer (an async callable (messages, system_prompt) -> str), an axio"
        " transport (stream()) or an LLM client (complete(), chat() or generate()); got "
        f"{kind.__module__}.{kind.__qualname__}, which is none of them."
    )
