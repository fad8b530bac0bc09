"""AxioContextSession: exact item round trips, native blocks (search, show, tokens, compaction),
limits, threads and loops, ownership, bad input. Real SQLite files, real openai-agents runs on
its offline ScriptedModel."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import threading
from typing import Any

import pytest
from agents import Agent, Runner, SessionSettings
from agents.testing import ScriptedModel
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from axio_context import ImageBlock, ProviderBlock, TextBlock, ToolUseBlock
from axio_context.compaction import AutoCompactStore
from axio_context.compaction.summarizers.extractive import ExtractiveSummarizer
from axio_context.errors import SessionOwnerError, StoreClosedError
from axio_context.testing import text
from axio_context_openai_agents import ITEM_KEY, AxioContextSession, ItemError
from axio_context_sqlite.cli.backends import opener
from tests.support.backends import Backend

PNG = "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 400).decode()


def every_item() -> list[dict[str, Any]]:
    """One item of every kind openai-agents writes, with the awkward values."""
    return [
        {"role": "developer", "content": "Answer in French."},
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Bonjour ✓ 日本語 \u2028 \\u0000"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is in this picture of a quokka?"},
                {"type": "input_image", "image_url": PNG, "detail": "high"},
                {"type": "input_file", "file_data": "JVBERi0xLjQK" * 50, "filename": "a.pdf"},
            ],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": "A quokka.", "annotations": [], "logprobs": [{"lp": -0.5}]},
                {"type": "refusal", "refusal": "no faces"},
            ],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Oslo", "days": 3, "ratio": 1.0',  # not valid JSON
            "status": "completed",
        },
        {"type": "function_call", "call_id": "call_2", "name": "noop", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 °C"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "done"}, {"type": "input_image", "image_url": PNG}],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Thought about the weather."}],
            "encrypted_content": "gAAAAB" + "x" * 3000,
        },
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "quokka habitat"},
        },
        {
            "type": "file_search_call",
            "id": "fs_1",
            "queries": ["q"],
            "status": "completed",
            "results": [{"file_id": "f", "score": 0.5, "text": "hit"}, {"score": 1, "text": "int score"}],
        },
        {
            "type": "computer_call",
            "id": "cc_1",
            "call_id": "c3",
            "action": {"type": "click", "x": 10, "y": 20.0},
        },
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBOR" * 400},
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "s",
            "name": "t",
            "arguments": "{}",
            "output": None,
        },
        {"type": "item_reference", "id": "msg_0"},
        {
            "type": "custom_tool_call_output",
            "call_id": "c4",
            "output": "big int 123456789012345678901234567890",
        },
        {
            "type": "brand_new_item",
            "nested": {"n": 1, "f": 1.0, "neg0": -0.0, "big": 2**70, "list": [1, 2.5]},
        },
    ]


def _deep(depth: int) -> list[Any]:
    """A list ``depth`` lists deep (built without recursion)."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _session(*args: Any, **kwargs: Any) -> Any:
    """A session typed loosely: these tests hand it items of every shape, not openai's TypedDicts."""
    return AxioContextSession(*args, **kwargs)


def _dumps(items: list[Any]) -> list[str]:
    return [json.dumps(i, sort_keys=True) for i in items]


async def test_every_item_comes_back_exactly(backend_db: Backend) -> None:
    db = backend_db.where
    items = every_item()
    session = _session("s", db, project="p")
    await session.add_items(items[:3])
    await session.add_items(items[3:])
    assert _dumps(await session.get_items()) == _dumps(items)
    session.close()
    again = _session("s", db, project="p")  # a new connection reads the same
    got = await again.get_items()
    assert _dumps(got) == _dumps(items)
    assert type(got[-1]["nested"]["n"]) is int and type(got[-1]["nested"]["f"]) is float
    assert got[11]["results"][1]["score"] == 1 and type(got[11]["results"][1]["score"]) is int
    again.close()


async def test_items_are_native_blocks_for_show_search_and_tokens(backend_db: Backend) -> None:
    db = backend_db.where
    session = _session("s", db, project="p")
    await session.add_items(every_item())
    session.close()
    async with backend_db.open():
        store = backend_db.store("s", project="p")
        history = await store.get_history()
        assert history[0].role == "system" and history[0].content == [TextBlock(text="Answer in French.")]
        image = history[3].content[1]  # a data URL image: an image block, its bytes decoded
        assert isinstance(image, ImageBlock) and image.data == bytes(range(256)) * 400
        assert isinstance(history[3].content[2], ProviderBlock)  # a file: kept as provider data
        call = history[5].content[0]
        assert isinstance(call, ToolUseBlock) and call.name == "get_weather" and call.id == "call_1"
        assert (
            history[4].id == "msg_1" and history[4].metadata is not None and ITEM_KEY in history[4].metadata
        )
        # Two images, an encrypted reasoning item and a PDF: not hundreds of KB of "text".
        assert await store.estimated_view_tokens() < 6_000
    async with opener(db) as database:
        view = await database.show("s", full=True)
        assert [m.role for m in view.messages][:3] == ["system", "system", "user"]
        for word, position in (("quokka", 3), ("Oslo", 5), ("habitat", 10), ("sunny", 7)):
            hits = await database.search(word, mode="keyword")
            assert position in {h.position for h in hits}, word


async def test_compaction_works_on_a_session(backend_db: Backend) -> None:
    db = backend_db.where
    session = _session("s", db, project="p")
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} about otters"}
        for i in range(20)
    ]
    await session.add_items(turns)
    async with backend_db.open():
        compacting = AutoCompactStore(
            backend_db.store("s", project="p"), ExtractiveSummarizer(), keep_recent=4
        )
        assert await compacting.compact()
    items = await session.get_items()
    assert items[-4:] == turns[-4:]  # the recent items exactly, after the summary
    assert items[0]["role"] == "user" and "otters" in items[0]["content"] and len(items) < len(turns)
    assert await session.get_items(limit=2) == turns[-2:]
    session.close()


async def test_limit_semantics(backend_db: Backend) -> None:
    session = _session("s", backend_db.where, session_settings=SessionSettings(limit=3))
    items: list[Any] = [{"role": "user", "content": f"m{i}"} for i in range(10)]
    await session.add_items(items)
    assert await session.get_items() == items[-3:]  # session_settings.limit
    assert await session.get_items(limit=5) == items[-5:]  # explicit overrides the settings
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == items  # as SQLite's LIMIT -1: everything
    assert await session.get_items(limit=100) == items
    session.session_settings = SessionSettings()
    assert await session.get_items() == items
    assert await session.pop_item() == items[-1]
    assert await session.get_items(limit=1) == [items[-2]]
    await session.clear_session()
    assert await session.get_items() == [] and await session.pop_item() is None
    session.close()


async def test_sync_construction_run_sync_and_many_threads(backend_db: Backend) -> None:
    db = backend_db.where
    session = _session("shared", db)  # constructed inside this running loop

    def run_sync_in_thread() -> str:
        model = ScriptedModel()
        model.enqueue([_text("Paris")])
        loop = asyncio.new_event_loop()  # run_sync runs on the thread's loop: one we close
        asyncio.set_event_loop(loop)
        try:
            result = Runner.run_sync(Agent(name="a", model=model), "capital of France?", session=session)
        finally:
            asyncio.set_event_loop(None)
            loop.close()
        return str(result.final_output)

    assert await asyncio.to_thread(run_sync_in_thread) == "Paris"

    def writer(n: int) -> None:
        async def write() -> None:
            own = _session(f"t{n}", db)
            for k in range(5):
                batch: list[Any] = [{"role": "user", "content": f"t{n}-{k}-{j}"} for j in range(4)]
                await session.add_items(batch)
                await own.add_items(batch)
            own.close()

        asyncio.run(write())  # a loop of its own, in a thread of its own

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared = await session.get_items()
    assert len(shared) == 2 + 6 * 5 * 4
    texts = [i["content"] for i in shared[2:]]
    for start in range(0, len(texts), 4):  # each batch whole and in order, never interleaved
        n, k = texts[start].split("-")[:2]
        assert texts[start : start + 4] == [f"{n}-{k}-{j}" for j in range(4)]
    for n in range(6):
        own = _session(f"t{n}", db)
        assert len(await own.get_items()) == 20
        own.close()
    session.close()


def _text(content: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(text=content, type="output_text", annotations=[], logprobs=[])],
    )


async def test_cancelled_pop_keeps_its_outcome(backend_db: Backend) -> None:
    session = _session("s", backend_db.where)
    await session.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    task = asyncio.create_task(session.pop_item())
    await asyncio.sleep(0)  # submitted to the session's loop
    task.cancel()
    # SQLite's inline pop is done before the cancel, no longer the caller's to stop; one that
    # waits (test_agents_inline_writes) is done, then the cancellation raised
    with contextlib.suppress(asyncio.CancelledError):
        assert await task == {"role": "user", "content": "b"}
    assert await session.get_items() == [{"role": "user", "content": "a"}]  # popped, not lost halfway
    session.close()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("just text", "items\\[1\\]: an item must be a dict, got str"),
        ({"content": "no type, no role"}, "items\\[1\\]: an item needs a `type`"),
        ({"type": 3}, "items\\[1\\]: `type` must be a string"),
        ({"type": "message", "role": "user", "content": {1, 2}}, "items\\[1\\]: not JSON-serialisable"),
        ({"type": "message", "role": "user", "content": _deep(5_000)}, "items\\[1\\]: nested too deeply"),
    ],
)
async def test_bad_items_are_refused_whole(backend_db: Backend, bad: Any, message: str) -> None:
    session = _session("s", backend_db.where)
    await session.add_items([{"role": "user", "content": "kept"}])
    with pytest.raises(ItemError, match=message):
        await session.add_items([{"role": "user", "content": "not kept"}, bad])
    assert await session.get_items() == [{"role": "user", "content": "kept"}]
    session.close()
    with pytest.raises(StoreClosedError, match="AxioContextSession is closed"):
        await session.get_items()


async def test_a_session_of_another_adapter_is_refused(backend_db: Backend) -> None:
    db = backend_db.where
    async with backend_db.open():
        native = backend_db.store("native", project="p")
        await native.append(text("user", "written by plain axio code"))
        other = backend_db.store("other", project="p")
        await other.set_metadata({"adapter": "pydantic-ai", "title": "x"})
    for sid, owner in (("native", "not written by"), ("other", "belongs to the 'pydantic-ai' adapter")):
        session = _session(sid, db)
        with pytest.raises(SessionOwnerError, match=owner):
            await session.add_items([{"role": "user", "content": "mixed?"}])
        with pytest.raises(SessionOwnerError):
            await session.get_items()
        session.close()
    mine = _session("mine", db)
    await mine.add_items([{"role": "user", "content": "hi"}])
    mine.close()
    async with backend_db.open():
        assert await backend_db.store("mine", project="p").get_metadata() == {"adapter": "openai-agents"}
        assert len(await backend_db.store("native", project="p").get_history()) == 1
