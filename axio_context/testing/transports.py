"""axio's ``StubTransport`` for tests that compact through a transport, without axio installed.

axio's ``AutoCompactStore(store, transport)`` is tested with ``axio.testing.StubTransport``: a
transport whose ``stream()`` yields prepared events, one list per call. This is the same stub
(the same constructor, the same "last list repeats" and "an exception in the list is raised
where it sits"), with the one event compaction reads, :class:`TextDelta`. With axio installed,
its own ``StubTransport`` and events work as well (see docs/porting-axio.md).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["StubTransport", "TextDelta", "make_stub_transport", "make_text_response"]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the model's answer text (axio's ``TextDelta`` fields)."""

    index: int
    delta: str


class StubTransport:
    """A CompletionTransport that yields prepared event lists: the n-th ``stream()`` call gets
    the n-th list (the last one again once they run out)."""

    def __init__(self, responses: Sequence[Sequence[Any]] | None = None) -> None:
        self._responses: list[Sequence[Any]] = list(responses or [])
        self._call_count = 0
        #: Each call's ``(messages, tools, system)``, for a test to look at.
        self.calls: list[tuple[list[Any], list[Any], str]] = []

    @property
    def call_count(self) -> int:
        """How many times :meth:`stream` was called."""
        return self._call_count

    def stream(self, messages: list[Any], tools: list[Any], system: str) -> AsyncIterator[Any]:
        """The next prepared list, as an async stream."""
        if not self._responses:
            raise RuntimeError("StubTransport has no responses to give")
        events = self._responses[min(self._call_count, len(self._responses) - 1)]
        self._call_count += 1
        self.calls.append((list(messages), list(tools), system))
        return _generate(events)


async def _generate(events: Sequence[Any]) -> AsyncIterator[Any]:
    for event in events:
        if isinstance(event, BaseException):
            raise event
        yield event


def make_text_response(text: str = "Done") -> list[Any]:
    """One answer of ``text`` (axio's helper of the same name also ends it with an IterationEnd,
    which compaction does not read)."""
    return [TextDelta(0, text)]


def make_stub_transport() -> StubTransport:
    """A stub answering "Hello world" in two pieces, as axio's."""
    return StubTransport([[TextDelta(0, "Hello"), TextDelta(0, " world")]])
