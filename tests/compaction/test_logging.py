"""Compaction failures: one WARNING line, the traceback only at DEBUG, the error kept for the caller.

The subprocess test is the terminal app of the issue: a program that never configured logging,
whose stderr must stay clean however often the summarizer fails.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

from axio_context import AutoCompactStore, MemoryContextStore, Message
from axio_context.errors import SummarizerResponseError
from tests.compaction.test_strategies import session


async def broken(messages: list[Message], system_prompt: str, /) -> str:
    raise ConnectionError("summarizer unreachable\nsecond line of detail")


async def empty(messages: list[Message], system_prompt: str, /) -> str:
    return "  "


def test_unconfigured_logging_prints_nothing_to_stderr() -> None:
    script = textwrap.dedent(
        """
        import asyncio
        from axio_context import AutoCompactStore, MemoryContextStore, Message, TextBlock

        async def broken(messages, system_prompt):
            raise ConnectionError("summarizer unreachable")

        async def main():
            store = AutoCompactStore(MemoryContextStore(), broken, keep_recent=1, max_tokens=10)
            for i in range(6):
                await store.append(Message(role="user", content=[TextBlock(text=f"m{i}")]))
            for _ in range(3):
                await store.add_context_tokens(11, 0)
            print(type(store.last_compaction_error).__name__)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ConnectionError"
    assert done.stderr == ""


async def test_failure_logs_one_warning_line_and_traceback_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    store = AutoCompactStore(MemoryContextStore(), broken, keep_recent=2, max_tokens=10)
    await store.append_many(session(3))
    with caplog.at_level(logging.DEBUG, logger="axio_context"):
        await store.add_context_tokens(11, 0)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    [warning] = warnings
    assert warning.exc_info is None
    assert warning.getMessage() == (
        "Context compaction failed, keeping original history: ConnectionError: summarizer unreachable"
    )
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(debug) == 1 and isinstance(debug[0].exc_info[1], ConnectionError)  # type: ignore[index]


async def test_last_error_and_on_error_callback() -> None:
    seen: list[BaseException] = []
    store = AutoCompactStore(MemoryContextStore(), broken, keep_recent=2, max_tokens=10, on_error=seen.append)
    assert store.last_compaction_error is None
    await store.append_many(session(3))
    await store.add_context_tokens(11, 0)
    assert isinstance(store.last_compaction_error, ConnectionError)
    assert seen == [store.last_compaction_error]
    fork = await store.fork()  # keeps the callback
    await fork.add_context_tokens(11, 0)
    assert len(seen) == 2
    # a working summarizer clears it again
    fixed = AutoCompactStore(store.store, None, keep_recent=2, max_tokens=10)
    fixed.last_compaction_error = store.last_compaction_error
    await fixed.add_context_tokens(11, 0)
    assert fixed.last_compaction_error is None
    assert len(await fixed.list_checkpoints()) == 1


async def test_empty_summary_is_a_response_error() -> None:
    store = AutoCompactStore(MemoryContextStore(), empty, keep_recent=2, max_tokens=10)
    await store.append_many(session(3))
    assert not await store.compact()
    assert isinstance(store.last_compaction_error, SummarizerResponseError)
