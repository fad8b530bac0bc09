"""Code written for axio 0.12 runs unchanged (issue 35, item 6): ``AutoCompactStore(store,
transport)`` and ``compact_context(ctx, transport)`` with an axio ``CompletionTransport``.

Here with :class:`axio_context.testing.StubTransport` (axio's stub, so a ported test needs no
axio); :func:`test_the_real_axio_transports` runs ``axio_real.py`` against the REAL axio 0.12.2,
its ``StubTransport``, its ``DummyCompletionTransport`` and axio-transport-openai's
``OpenAITransport`` in a Python 3.12 venv (axio needs 3.12).
"""

from __future__ import annotations

from pathlib import Path

from axio_context import (
    DEFAULT_COMPACTION_PROMPT,
    AutoCompactStore,
    MemoryContextStore,
    Message,
    compact_context,
)
from axio_context.testing import StubTransport, TextDelta, make_stub_transport, make_text_response, text

from .py312 import run


def history(n: int = 8) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(n)]


class Model:
    """axio's ``ModelSpec``, as much of it as compaction reads."""

    id = "tiny"
    context_window = 1_000


async def test_auto_compact_store_summarizes_through_a_transport() -> None:
    transport = StubTransport([make_text_response("the summary")])
    store = AutoCompactStore(MemoryContextStore(), transport, keep_recent=2)
    assert store.max_tokens == 96_000  # 0.75 of axio's 128,000 when the transport has no model
    for message in history():
        await store.append(message)
    await store.add_context_tokens(96_001, 10)
    view = await store.get_history()
    assert [m.text for m in view] == ["the summary", "Understood, context restored.", "turn 6", "turn 7"]
    [(sent, tools, system)] = transport.calls
    assert [m.text for m in sent] == [*(f"turn {i}" for i in range(6)), "Summarize the conversation above."]
    assert tools == [] and system == DEFAULT_COMPACTION_PROMPT


async def test_the_threshold_comes_from_the_transports_model() -> None:
    transport = StubTransport([make_text_response("s")])
    transport.model = Model()  # type: ignore[attr-defined]
    store = AutoCompactStore(MemoryContextStore(history()), transport, keep_recent=2)
    assert store.max_tokens == 750
    await store.add_context_tokens(751, 0)
    assert (await store.list_checkpoints())[0].summarizer == "tiny"


async def test_compact_context_takes_a_transport() -> None:
    transport = StubTransport([[TextDelta(0, "one "), TextDelta(0, "summary")]])
    compacted = await compact_context(MemoryContextStore(history(5)), transport, keep_recent=2)
    assert compacted is not None
    assert [m.text for m in compacted] == ["one summary", "Understood, context restored.", "turn 3", "turn 4"]
    assert (
        await compact_context(context=MemoryContextStore(history(5)), transport=make_stub_transport()) is None
    )


async def test_a_failing_transport_keeps_the_view() -> None:
    errors: list[BaseException] = []
    store = AutoCompactStore(
        MemoryContextStore(history()),
        StubTransport([[ConnectionError("down")]]),
        keep_recent=2,
        on_error=errors.append,
    )
    await store.add_context_tokens(200_000, 0)
    assert len(await store.get_history()) == 8
    assert isinstance(errors[0], ConnectionError)


def test_the_real_axio_transports() -> None:
    done = run(Path(__file__).with_name("axio_real.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "ok", done.stdout
