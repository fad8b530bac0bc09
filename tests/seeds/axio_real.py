"""Run by tests/seeds/test_axio.py under Python 3.12, in a venv holding the REAL axio 0.12.2 and
axio-transport-openai 0.12.2 (axio needs Python >= 3.12; ours runs from the source tree).

axio's own call forms, against our AutoCompactStore and compact_context:

- axio's ``StubTransport`` and its event helpers;
- ``OpenAITransport`` from axio's own transport package, talking to a chat-completions server on
  127.0.0.1 started here (so the request it sends is the one axio would send);
- axio's ``DummyCompletionTransport``, which fails: compaction is skipped, nothing is lost.

Prints one line per check and ``ok`` at the end; any failure raises.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
from aiohttp import web
from axio.events import TextDelta
from axio.models import ModelSpec
from axio.testing import StubTransport, make_text_response
from axio.transport import DummyCompletionTransport
from axio_transport_openai import OpenAITransport

from axio_context import AutoCompactStore, MemoryContextStore, Message, TextBlock, compact_context

SUMMARY = "The user asked about the parser; it was fixed."


def history(n: int = 8) -> list[Message]:
    role = ("user", "assistant")
    return [Message(role=role[i % 2], content=[TextBlock(text=f"turn {i}")]) for i in range(n)]


async def with_stub() -> None:
    transport = StubTransport([make_text_response(SUMMARY)])
    store = AutoCompactStore(MemoryContextStore(), transport, keep_recent=2)
    assert store.max_tokens == 96_000, store.max_tokens  # 0.75 of axio's 128,000 without a model
    for message in history():
        await store.append(message)
    await store.add_context_tokens(96_001, 10)  # axio's trigger: the input of the last call
    view = await store.get_history()
    assert view[0].text == SUMMARY and view[1].text == "Understood, context restored.", view[:2]
    assert [m.text for m in view[2:]] == ["turn 6", "turn 7"]
    assert len(await store.get_full_history()) == 8  # nothing deleted: a checkpoint
    print("StubTransport: AutoCompactStore compacted through it")

    pieces = StubTransport([[TextDelta(0, "The user "), TextDelta(0, "counted.")]])
    compacted = await compact_context(MemoryContextStore(history(5)), pieces, keep_recent=2)
    assert compacted is not None and compacted[0].text == "The user counted.", compacted
    assert len(compacted) == 4
    print("StubTransport: compact_context(ctx, transport) joined the streamed text")


async def with_openai_transport() -> None:
    requests: list[dict[str, Any]] = []

    async def completions(request: web.Request) -> web.StreamResponse:
        requests.append(await request.json())
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        chunks = [
            {"id": "c", "model": "tiny", "choices": [{"index": 0, "delta": {"content": SUMMARY[:10]}}]},
            {"id": "c", "model": "tiny", "choices": [{"index": 0, "delta": {"content": SUMMARY[10:]}}]},
            {"id": "c", "model": "tiny", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {
                "id": "c",
                "model": "tiny",
                "choices": [],
                "usage": {"prompt_tokens": 50, "completion_tokens": 9},
            },
        ]
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        async with aiohttp.ClientSession() as session:
            transport = OpenAITransport(
                base_url=f"http://127.0.0.1:{port}/v1",
                api_key="test",
                model=ModelSpec(id="tiny", context_window=1_000),
                session=session,
                max_retries=1,
            )
            store = AutoCompactStore(MemoryContextStore(), transport, keep_recent=2)
            assert store.max_tokens == 750, store.max_tokens  # 0.75 of transport.model.context_window
            for message in history():
                await store.append(message)
            await store.add_context_tokens(751, 10)
            view = await store.get_history()
            assert view[0].text == SUMMARY, view[0]
            assert [m.text for m in view[2:]] == ["turn 6", "turn 7"]
    finally:
        await runner.cleanup()
    [sent] = requests
    assert sent["model"] == "tiny" and "tools" not in sent, sent
    roles = [m["role"] for m in sent["messages"]]
    assert roles[0] == "system" and "conversation summarizer" in sent["messages"][0]["content"], sent
    last = sent["messages"][-1]
    assert last["role"] == "user" and "Summarize the conversation above." in json.dumps(last), last
    assert "turn 0" in json.dumps(sent["messages"]) and "turn 7" not in json.dumps(sent["messages"])
    print("axio_transport_openai.OpenAITransport: summarized over HTTP, threshold from its model")


async def with_dummy_transport() -> None:
    logging.getLogger("axio").setLevel(logging.CRITICAL)
    errors: list[BaseException] = []
    store = AutoCompactStore(
        MemoryContextStore(history()), DummyCompletionTransport(), keep_recent=2, on_error=errors.append
    )
    await store.add_context_tokens(200_000, 0)
    assert len(await store.get_history()) == 8  # a failing transport leaves the view as it was
    assert isinstance(errors[0], RuntimeError), errors
    print("axio.transport.DummyCompletionTransport: a failing transport loses nothing")


async def main() -> None:
    await with_stub()
    await with_openai_transport()
    await with_dummy_transport()
    print("ok")


if __name__ == "__main__":
    asyncio.run(main())
