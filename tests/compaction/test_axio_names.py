"""axio 0.12's parameter names are accepted where ours differ: ``compact_context(context=...,
transport=...)``, ``AutoCompactStore(store, transport=...)`` and axio-context-sqlite 0.12's
``SQLiteContextStore(conn, session_id, project, db_name)``."""

from __future__ import annotations

from pathlib import Path

import pytest

from axio_context import AutoCompactStore, MemoryContextStore, Message, compact_context
from axio_context.compaction import ExtractiveSummarizer, is_summary_pair
from axio_context_sqlite import SQLiteContextStore, connect
from tests.compaction.test_strategies import session


async def summarize(messages: list[Message], system_prompt: str, /) -> str:
    return f"summary of {len(messages)} messages"


async def test_compact_context_takes_axio_names() -> None:
    store = MemoryContextStore(session(6))
    out = await compact_context(context=store, transport=summarize, keep_recent=2)
    assert out is not None and is_summary_pair(out)
    assert out[0].text.startswith("summary of")
    positional = await compact_context(store, summarize, keep_recent=2)
    assert positional == out
    extractive = await compact_context(context=store, transport=None, keep_recent=2)
    assert extractive is not None and is_summary_pair(extractive)


async def test_compact_context_refuses_both_or_neither() -> None:
    store = MemoryContextStore(session(3))
    with pytest.raises(TypeError, match="both 'store' and axio's 'context'"):
        await compact_context(store, summarize, context=store)
    with pytest.raises(TypeError, match="both 'summarizer' and axio's 'transport'"):
        await compact_context(store, summarize, transport=summarize)
    with pytest.raises(TypeError, match="missing required argument: 'summarizer'"):
        await compact_context(store)
    with pytest.raises(TypeError, match="missing required argument: 'store'"):
        await compact_context(transport=summarize)


async def test_by_its_name_something_that_is_no_summarizer_is_refused() -> None:
    class Transport:  # neither callable nor a transport (no stream()) nor an LLM client
        model = None

    with pytest.raises(TypeError, match="compact_context"):
        await compact_context(context=MemoryContextStore(session(3)), transport=Transport())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AutoCompactStore"):
        AutoCompactStore(MemoryContextStore(), transport=Transport())  # type: ignore[arg-type]


async def test_auto_compact_store_takes_transport() -> None:
    store = AutoCompactStore(MemoryContextStore(), transport=summarize, keep_recent=2, max_tokens=10)
    assert store.summarizer is summarize
    await store.append_many(session(3))
    await store.add_context_tokens(11, 0)
    assert len(await store.list_checkpoints()) == 1
    fork = await store.fork()
    assert fork.summarizer is summarize
    assert isinstance(AutoCompactStore(MemoryContextStore(), None).summarizer, ExtractiveSummarizer)
    with pytest.raises(TypeError, match="missing required argument: 'summarizer'"):
        AutoCompactStore(MemoryContextStore())


async def test_sqlite_store_takes_db_name(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", None, "axio_context")
        await store.append(session(1)[0])
        named = SQLiteContextStore(conn, "s", db_name="other")
        assert await named.get_history() == session(1)[:1]
