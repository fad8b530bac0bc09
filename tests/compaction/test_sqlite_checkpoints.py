"""AutoCompactStore on SQLite while other writers keep going: appends that race a slow summarizer
(on the same connection and on a second one) are all kept and land after the summary; a failing
summarizer or a transcript cleared meanwhile leaves everything as it was."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from axio_context import Checkpoint, Message
from axio_context.compaction import SUMMARY_ACK, AutoCompactStore
from axio_context_sqlite import Connection, SQLiteContextStore, connect
from tests.support.sqlite_checks import check_storage, text_message, texts


class SlowSummarizer:
    """Sleeps until released (or a while), so the test can write during the summary call."""

    model = "slow-test-model"

    def __init__(self, sleep: float = 0.05) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.sleep = sleep
        self.calls = 0

    async def __call__(self, messages: list[Message], system_prompt: str) -> str:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        await asyncio.sleep(self.sleep)
        return f"summary of {len(messages)} messages"


def _conversation(n: int) -> list[Message]:
    return [text_message(f"old{i}", "user" if i % 2 == 0 else "assistant") for i in range(n)]


async def _race(
    store: AutoCompactStore, summarizer: SlowSummarizer, writers: list[SQLiteContextStore]
) -> None:
    task = asyncio.create_task(store.add_context_tokens(10_000, 10))  # over max_tokens: compacts
    await summarizer.started.wait()
    for i in range(20):
        writer = writers[i % len(writers)]
        await writer.append(text_message(f"new{i}", "user" if i % 2 == 0 else "assistant"))
    summarizer.release.set()
    await task


async def test_appends_racing_a_slow_summarizer_are_kept_after_the_summary(
    conn: Connection, db_path: Path
) -> None:
    inner = SQLiteContextStore(conn, "s", project="p")
    await inner.append_many(_conversation(10))
    summarizer = SlowSummarizer()
    store = AutoCompactStore(inner, summarizer, keep_recent=2, max_tokens=1)

    async with connect(db_path) as other:
        # Writers: the wrapper itself, the inner store, and the same session on another connection.
        await _race(store, summarizer, [store, inner, SQLiteContextStore(other, "s", project="p")])

    new = [f"new{i}" for i in range(20)]
    assert texts(await store.get_full_history()) == [f"old{i}" for i in range(10)] + new
    [checkpoint] = await store.list_checkpoints()
    assert checkpoint.summarizer == "slow-test-model"
    assert 0 < checkpoint.position <= 10
    view = await store.get_history()
    # The summarizer saw exactly the messages the checkpoint covers, none of the racing ones.
    assert texts(view[:2]) == [f"summary of {checkpoint.position} messages", SUMMARY_ACK]
    assert texts(view[2:]) == [f"old{i}" for i in range(checkpoint.position, 10)] + new
    assert summarizer.calls == 1
    assert check_storage(db_path) == {"s": 30}

    # A later compaction folds the earlier summary in instead of stacking a second one.
    second = SlowSummarizer(sleep=0)
    second.release.set()
    again = AutoCompactStore(inner, second, keep_recent=2, max_tokens=1)
    assert await again.compact()
    view = await again.get_history()
    assert [m.text for m in view].count(SUMMARY_ACK) == 1
    assert texts(view[2:]) == new[-2:]
    assert len(await again.get_full_history()) == 30


async def test_slow_summarizer_does_not_block_other_connections(db_path: Path) -> None:
    async with connect(db_path) as a, connect(db_path) as b:
        inner = SQLiteContextStore(a, "s", project="p")
        await inner.append_many(_conversation(12))
        summarizer = SlowSummarizer()
        store = AutoCompactStore(inner, summarizer, keep_recent=4, max_tokens=1)
        task = asyncio.create_task(store.compact())
        await summarizer.started.wait()
        # No transaction is open while the summarizer runs: another connection can write at once,
        # even with a tiny busy timeout.
        async with connect(db_path, busy_timeout=0.05) as impatient:
            quick = SQLiteContextStore(impatient, "s", project="p")
            await quick.append(text_message("during"))
            await quick.add_context_tokens(1, 1)
            await SQLiteContextStore(b, "other", project="p").append(text_message("elsewhere"))
        summarizer.release.set()
        assert await task
        view = texts(await store.get_history())
        assert view[-1] == "during"
        assert texts(await store.get_full_history())[-1] == "during"
    check_storage(db_path)


async def test_failing_summarizer_changes_nothing(conn: Connection, db_path: Path) -> None:
    async def broken(messages: list[Message], system_prompt: str) -> str:
        raise ConnectionError("model endpoint down")

    inner = SQLiteContextStore(conn, "s", project="p")
    await inner.append_many(_conversation(10))
    store = AutoCompactStore(inner, broken, keep_recent=2, max_tokens=1)
    await store.add_context_tokens(100, 1)  # logged, not raised
    assert await store.list_checkpoints() == []
    assert texts(await store.get_history()) == [f"old{i}" for i in range(10)]
    assert await store.get_context_tokens() == (100, 1)
    assert check_storage(db_path) == {"s": 10}


async def test_transcript_cleared_during_the_summary_call(conn: Connection, db_path: Path) -> None:
    inner = SQLiteContextStore(conn, "s", project="p")
    await inner.append_many(_conversation(10))
    summarizer = SlowSummarizer()
    store = AutoCompactStore(inner, summarizer, keep_recent=2, max_tokens=1)
    task = asyncio.create_task(store.compact())
    await summarizer.started.wait()
    await inner.clear()
    await inner.append(text_message("fresh start"))
    summarizer.release.set()
    assert not await task  # the summary no longer fits the transcript: abandoned
    assert await store.list_checkpoints() == []
    assert texts(await store.get_history()) == ["fresh start"]
    assert check_storage(db_path) == {"s": 1}


async def test_system_prompt_stays_first_in_the_view_across_compactions(db_path: Path) -> None:
    system = text_message("You are terse. Never delete files.", "system")
    async with connect(db_path) as conn:
        inner = SQLiteContextStore(conn, "s", project="p")
        await inner.append_many([system, *_conversation(10)])
        store = AutoCompactStore(inner, None, keep_recent=2, max_tokens=1)  # the offline summarizer
        assert await store.compact()
        await inner.append_many([text_message(f"later{i}") for i in range(4)])
        assert await store.compact()
    async with connect(db_path) as conn:  # what was written, read back from the file
        inner = SQLiteContextStore(conn, "s", project="p")
        view = await inner.get_history()
        assert view[0] == system
        assert [m.role for m in view].count("system") == 1
        assert view[1].text.startswith("Summary of the earlier conversation")
        assert texts(view[3:]) == ["later2", "later3"]
        assert len(await inner.list_checkpoints()) == 2
        assert (await inner.get_full_history())[0] == system
    assert check_storage(db_path) == {"s": 15}


async def _race_with(
    conn: Connection, mutate: Callable[[SQLiteContextStore], Awaitable[None]], keep: int
) -> None:
    inner = SQLiteContextStore(conn, "s", project="p")
    await inner.append_many(_conversation(6))
    summarizer = SlowSummarizer(sleep=0)
    store = AutoCompactStore(inner, summarizer, keep_recent=keep, max_tokens=1)
    task = asyncio.create_task(store.add_context_tokens(100, 1))
    await summarizer.started.wait()
    await mutate(inner)
    summarizer.release.set()
    await task


async def test_clear_and_refill_during_the_summary_writes_no_checkpoint(
    conn: Connection, db_path: Path
) -> None:
    async def clear_and_continue(inner: SQLiteContextStore) -> None:
        await inner.clear()
        await inner.append_many([text_message(f"NEW{i}") for i in range(6)])

    await _race_with(conn, clear_and_continue, keep=2)
    inner = SQLiteContextStore(conn, "s", project="p")
    assert await inner.list_checkpoints() == []
    assert texts(await inner.get_history()) == [f"NEW{i}" for i in range(6)]
    assert check_storage(db_path) == {"s": 6}


async def test_retry_during_the_summary_writes_no_checkpoint(conn: Connection, db_path: Path) -> None:
    async def retry(inner: SQLiteContextStore) -> None:
        await inner.pop()
        await inner.append(text_message("old5-RETRIED", "assistant"))

    await _race_with(conn, retry, keep=0)
    inner = SQLiteContextStore(conn, "s", project="p")
    assert await inner.list_checkpoints() == []
    assert texts(await inner.get_history())[-1] == "old5-RETRIED"


class RewrittenJustBeforeTheWrite(SQLiteContextStore):
    """Another connection rewrites the session between the compaction's last read and its write."""

    other: SQLiteContextStore

    async def add_checkpoint(
        self, checkpoint: Checkpoint, *, if_view_starts_with: Sequence[Message] | None = None
    ) -> Checkpoint:
        await self.other.clear()
        await self.other.append_many([text_message(f"NEW{i}") for i in range(6)])
        return await super().add_checkpoint(checkpoint, if_view_starts_with=if_view_starts_with)


async def test_the_prefix_is_checked_in_the_checkpoint_transaction(db_path: Path) -> None:
    async with connect(db_path) as a, connect(db_path) as b:
        inner = RewrittenJustBeforeTheWrite(a, "s", project="p")
        inner.other = SQLiteContextStore(b, "s", project="p")
        await inner.append_many(_conversation(6))
        summarizer = SlowSummarizer(sleep=0)
        summarizer.release.set()
        assert not await AutoCompactStore(inner, summarizer, keep_recent=2, max_tokens=1).compact()
        assert await inner.list_checkpoints() == []
        assert texts(await inner.get_history()) == [f"NEW{i}" for i in range(6)]
        # the same prefix check passes when nothing changed
        view = await inner.other.get_history()
        stored = await inner.other.add_checkpoint(
            Checkpoint(position=2, summary=[text_message("sum")]), if_view_starts_with=view[:2]
        )
        assert await inner.other.list_checkpoints() == [stored]


async def test_a_nan_in_a_tool_input_never_blocks_compaction(conn: Connection) -> None:
    """The check that the view still starts with what was summarized compares messages as
    stored: a NaN (never equal to itself as a float) must not make every compaction abandon."""
    from axio_context import MemoryContextStore, ToolResultBlock, ToolUseBlock

    async def summarizer(messages: Sequence[Message], *args: object, **kwargs: object) -> str:
        return "summary of earlier turns"

    history = [
        Message(role="assistant", content=[ToolUseBlock(id="t1", name="calc", input={"x": float("nan")})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="t1", content="nan")]),
        *(text_message(f"turn {i} " + "w " * 50) for i in range(30)),
    ]
    sqlite = SQLiteContextStore(conn, "s", project="p")
    await sqlite.append_many(history)
    for inner in (sqlite, MemoryContextStore(list(history))):
        auto = AutoCompactStore(inner, summarizer, keep_recent=4, max_tokens=200)
        assert await auto.compact()
        assert len(await inner.list_checkpoints()) == 1
