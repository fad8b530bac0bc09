"""The HistoryProvider contract as a pytest suite, with real runs for retention.

Subclass :class:`HistoryProviderContract` and provide a ``provider`` fixture returning a fresh,
empty :class:`~axio_context.agents.HistoryProvider`; every test then runs against it.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..agents import (
    AgentContext,
    ContextConfig,
    HistoryProvider,
    HistoryRetention,
    RunSessionError,
    current_agent_id,
    current_agent_label,
    current_parent_agent_id,
    current_run_id,
    current_thread_id,
)
from ..blocks import ImageBlock, TextBlock, ToolResultBlock, ToolUseBlock
from ..messages import Message
from .samples import every_block_message, text

__all__ = ["HistoryProviderContract"]


def _texts(messages: list[Message]) -> list[str]:
    return [getattr(m.content[0], "text", "?") if m.content else "" for m in messages]


def _turns(prefix: str, n: int) -> list[Message]:
    return [text("user" if i % 2 == 0 else "assistant", f"{prefix}{i}") for i in range(n)]


_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_BLOCKS = st.one_of(
    st.builds(TextBlock, text=st.text()),
    st.builds(ImageBlock, media_type=st.just("image/png"), data=st.binary(max_size=64)),
    st.builds(
        ToolUseBlock,
        id=st.text(max_size=8),
        name=st.text(max_size=8),
        input=st.dictionaries(st.text(max_size=6), _JSON, max_size=3),
    ),
    st.builds(ToolResultBlock, tool_use_id=st.text(max_size=8), content=st.text(), is_error=st.booleans()),
)
_MESSAGES = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "system"]),
    content=st.lists(_BLOCKS, max_size=3),
    id=st.none() | st.text(min_size=1, max_size=8),  # an empty id is no id: it reads back None
    timestamp=st.none() | st.datetimes(timezones=st.just(UTC)) | st.datetimes(min_value=datetime(1970, 1, 2)),
    metadata=st.none() | st.dictionaries(st.text(max_size=6), _JSON, max_size=3),
)
#: Batches of an agent's appends: (messages, run id; "" for none).
_BATCHES = st.lists(
    st.tuples(st.lists(_MESSAGES, min_size=1, max_size=3), st.sampled_from(["", "r1", "r2"])),
    min_size=1,
    max_size=4,
)


class _Boom(Exception):
    pass


class HistoryProviderContract:
    """The contract every HistoryProvider meets; subclass it and provide ``provider``."""

    @pytest.fixture
    def provider(self) -> HistoryProvider:
        raise NotImplementedError("provide a `provider` fixture returning an empty HistoryProvider")

    # -- appends, order, keys -------------------------------------------------------------------

    async def test_it_is_a_history_provider(self, provider: HistoryProvider) -> None:
        assert isinstance(provider, HistoryProvider)

    async def test_unknown_history_is_empty(self, provider: HistoryProvider) -> None:
        assert await provider.get_messages("a", session_id="s") == []
        assert await provider.count_messages("a", session_id="s") == 0

    async def test_appends_keep_order(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "m0"), session_id="s")
        await provider.append_many("a", _turns("n", 3), session_id="s")
        await provider.append("a", text("assistant", "last"), session_id="s")
        assert _texts(await provider.get_messages("a", session_id="s")) == ["m0", "n0", "n1", "n2", "last"]
        assert await provider.count_messages("a", session_id="s") == 5

    async def test_every_block_type_round_trips(self, provider: HistoryProvider) -> None:
        sample = every_block_message()
        await provider.append_many("a", sample, session_id="s", run_id="r")
        assert await provider.get_messages("a", session_id="s") == sample

    async def test_histories_are_keyed_by_agent_and_session(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "a-s"), session_id="s")
        await provider.append("b", text("user", "b-s"), session_id="s")
        await provider.append("a", text("user", "a-t"), session_id="t")
        assert _texts(await provider.get_messages("a", session_id="s")) == ["a-s"]
        assert _texts(await provider.get_messages("b", session_id="s")) == ["b-s"]
        assert _texts(await provider.get_messages("a", session_id="t")) == ["a-t"]

    async def test_empty_agent_id_is_an_agent_like_any_other(self, provider: HistoryProvider) -> None:
        await provider.append("", text("user", "anon"), session_id="s")
        await provider.append("x", text("user", "x"), session_id="s")
        assert _texts(await provider.get_messages("", session_id="s")) == ["anon"]

    async def test_returned_messages_are_copies(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "keep"), session_id="s")
        got = await provider.get_messages("a", session_id="s")
        got[0].content.clear()
        got.clear()
        assert _texts(await provider.get_messages("a", session_id="s")) == ["keep"]

    # -- pages ----------------------------------------------------------------------------------

    async def test_limit_and_offset_page_the_history(self, provider: HistoryProvider) -> None:
        await provider.append_many("a", _turns("m", 10), session_id="s")
        get = provider.get_messages
        assert _texts(await get("a", session_id="s", limit=3)) == ["m0", "m1", "m2"]
        assert _texts(await get("a", session_id="s", limit=3, offset=8)) == ["m8", "m9"]
        assert _texts(await get("a", session_id="s", offset=7)) == ["m7", "m8", "m9"]
        assert await get("a", session_id="s", limit=0) == []
        assert await get("a", session_id="s", offset=10) == []
        assert await get("a", session_id="s", offset=99, limit=5) == []

    @pytest.mark.parametrize(("limit", "offset"), [(-1, 0), (None, -1), (2.5, 0), (None, "1")])
    async def test_bad_page_arguments_are_refused(
        self, provider: HistoryProvider, limit: object, offset: object
    ) -> None:
        await provider.append("a", text("user", "x"), session_id="s")
        with pytest.raises(ValueError, match=r"limit|offset"):
            await provider.get_messages("a", session_id="s", limit=limit, offset=offset)  # type: ignore[arg-type]

    # -- bad input ------------------------------------------------------------------------------

    async def test_a_bad_message_in_a_batch_writes_nothing(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "before"), session_id="s")
        bad = [text("user", "ok"), {"role": "robot", "content": "x"}]  # a chat dict, but no role of ours
        with pytest.raises(TypeError, match=r"messages\[1\]"):
            await provider.append_many("a", bad, session_id="s")  # type: ignore[arg-type]
        assert _texts(await provider.get_messages("a", session_id="s")) == ["before"]

    async def test_bad_ids_are_refused_naming_the_field(self, provider: HistoryProvider) -> None:
        with pytest.raises(ValueError, match="session_id"):
            await provider.append("a", text("user", "x"), session_id="")
        with pytest.raises(TypeError, match="agent_id"):
            await provider.append(1, text("user", "x"), session_id="s")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="run_id"):
            await provider.append("a", text("user", "x"), session_id="s", run_id=None)  # type: ignore[arg-type]
        assert await provider.count_messages("a", session_id="s") == 0

    async def test_a_run_id_is_one_sessions(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "x"), session_id="s", run_id="r1")
        await provider.append("b", text("user", "y"), session_id="s", run_id="r1")  # another agent: fine
        with pytest.raises(RunSessionError, match="run_id 'r1'"):
            await provider.append("a", text("user", "z"), session_id="t", run_id="r1")
        assert await provider.count_messages("a", session_id="t") == 0

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(batches=_BATCHES)
    async def test_what_an_append_accepts_reads_back_equal(
        self, provider: HistoryProvider, batches: list[tuple[list[Message], str]]
    ) -> None:
        """Whatever ``append``/``append_many`` accept (one message or a batch, with or without a
        run) comes back equal, in order, with its run; what they refuse leaves nothing."""
        thread = uuid4().hex  # each example in a thread of its own
        runs = {run: f"{thread}-{run}" for run in ("r1", "r2")}
        kept: list[Message] = []
        tags: list[str] = []
        for batch, run in batches:
            run_id = runs.get(run, "")
            try:
                if len(batch) == 1:
                    await provider.append("a", batch[0], session_id=thread, run_id=run_id)
                else:
                    await provider.append_many("a", batch, session_id=thread, run_id=run_id)
            except ValueError:  # refused (text a backend cannot hold): nothing of it written
                continue
            kept += batch
            tags += [run_id] * len(batch)
        assert await provider.get_messages("a", session_id=thread) == kept
        run_ids = getattr(provider, "get_run_ids", None)  # not part of the protocol
        if run_ids is not None:
            assert await run_ids("a", session_id=thread) == tags
        assert await provider.count_messages("a", session_id=thread) == len(kept)
        if len(kept) > 1:
            assert await provider.get_messages("a", session_id=thread, limit=1, offset=1) == kept[1:2]

    # -- clear and clear_run --------------------------------------------------------------------

    async def test_clear_forgets_only_that_history(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "a"), session_id="s")
        await provider.append("b", text("user", "b"), session_id="s")
        await provider.clear("a", session_id="s")
        assert await provider.get_messages("a", session_id="s") == []
        assert _texts(await provider.get_messages("b", session_id="s")) == ["b"]
        await provider.append("a", text("user", "again"), session_id="s")
        assert _texts(await provider.get_messages("a", session_id="s")) == ["again"]
        await provider.clear("nobody", session_id="nowhere")  # unknown: no-op

    async def test_clear_run_removes_exactly_that_run(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "u0"), session_id="s")
        await provider.append_many("a", _turns("r1-", 3), session_id="s", run_id="r1")
        await provider.append("a", text("user", "u1"), session_id="s")
        await provider.append_many("a", _turns("r2-", 2), session_id="s", run_id="r2")
        await provider.append("b", text("user", "b-r1"), session_id="s", run_id="r1")
        await provider.clear_run("a", session_id="s", run_id="r1")
        assert _texts(await provider.get_messages("a", session_id="s")) == ["u0", "u1", "r2-0", "r2-1"]
        assert await provider.count_messages("a", session_id="s") == 4
        # Pages count visible messages only.
        assert _texts(await provider.get_messages("a", session_id="s", limit=2, offset=1)) == ["u1", "r2-0"]
        assert _texts(await provider.get_messages("a", session_id="s", offset=3)) == ["r2-1"]
        # Another agent's messages in the same run are its own.
        assert _texts(await provider.get_messages("b", session_id="s")) == ["b-r1"]
        # New appends come after what is there.
        await provider.append("a", text("user", "u2"), session_id="s")
        assert _texts(await provider.get_messages("a", session_id="s"))[-1] == "u2"

    async def test_clear_run_is_idempotent(self, provider: HistoryProvider) -> None:
        await provider.append_many("a", _turns("m", 2), session_id="s", run_id="r")
        await provider.clear_run("a", session_id="s", run_id="r")
        await provider.clear_run("a", session_id="s", run_id="r")
        assert await provider.count_messages("a", session_id="s") == 0

    async def test_clear_run_of_unknown_things_is_a_no_op(self, provider: HistoryProvider) -> None:
        await provider.append("a", text("user", "keep"), session_id="s", run_id="r")
        await provider.clear_run("nobody", session_id="s", run_id="r")
        await provider.clear_run("a", session_id="nowhere", run_id="r")
        await provider.clear_run("a", session_id="s", run_id="never")
        assert _texts(await provider.get_messages("a", session_id="s")) == ["keep"]

    # -- runs and retention ---------------------------------------------------------------------

    async def _context(self, provider: HistoryProvider, retention: HistoryRetention) -> AgentContext:
        return AgentContext(ContextConfig(provider, retention=retention), "agent", agent_label="Agent")

    @pytest.mark.parametrize("retention", list(HistoryRetention))
    async def test_a_run_that_ends_normally(
        self, provider: HistoryProvider, retention: HistoryRetention
    ) -> None:
        ctx = await self._context(provider, retention)
        await provider.append("agent", text("user", "before"), session_id="s")
        async with ctx.run("s", run_id="r") as run:
            await run.append(text("user", "q"))
            await ctx.append("s", text("assistant", "a"))  # tagged with the current run too
        expected = {
            HistoryRetention.PERMANENT: ["before", "q", "a"],
            HistoryRetention.RUN: ["before"],
            HistoryRetention.NONE: ["before"],
        }[retention]
        assert _texts(await provider.get_messages("agent", session_id="s")) == expected

    async def test_run_retention_clears_after_an_exception(self, provider: HistoryProvider) -> None:
        ctx = await self._context(provider, HistoryRetention.RUN)
        await provider.append("agent", text("user", "kept"), session_id="s")

        async def failing_run() -> None:
            async with ctx.run("s") as run:
                await run.append_many(_turns("m", 3))
                assert await run.get_messages() != []
                raise _Boom

        with pytest.raises(_Boom):
            await failing_run()
        assert _texts(await provider.get_messages("agent", session_id="s")) == ["kept"]

    async def test_run_retention_clears_after_cancellation(self, provider: HistoryProvider) -> None:
        ctx = await self._context(provider, HistoryRetention.RUN)
        started = asyncio.Event()

        async def agent_loop() -> None:
            async with ctx.run("s") as run:
                await run.append(text("user", "q"))
                started.set()
                await asyncio.Event().wait()  # a model call that never returns

        task = asyncio.create_task(agent_loop())
        await started.wait()
        assert await provider.count_messages("agent", session_id="s") == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await provider.count_messages("agent", session_id="s") == 0

    async def test_permanent_run_keeps_messages_after_an_exception(self, provider: HistoryProvider) -> None:
        ctx = await self._context(provider, HistoryRetention.PERMANENT)

        async def failing_run() -> None:
            async with ctx.run("s") as run:
                await run.append(text("user", "q"))
                raise _Boom

        with pytest.raises(_Boom):
            await failing_run()
        assert _texts(await provider.get_messages("agent", session_id="s")) == ["q"]

    async def test_run_sets_and_restores_the_context_variables(self, provider: HistoryProvider) -> None:
        ctx = await self._context(provider, HistoryRetention.PERMANENT)
        sub = AgentContext(ctx.config, "helper")
        seen: list[tuple[str | None, ...]] = []

        async def deep_in_a_tool() -> None:
            seen.append(
                (
                    current_thread_id.get(),
                    current_agent_id.get(),
                    current_agent_label.get(),
                    current_parent_agent_id.get(),
                    current_run_id.get(),
                )
            )

        async with ctx.run("s", run_id="outer"):
            await deep_in_a_tool()
            async with sub.run("s", run_id="inner"):
                await asyncio.create_task(deep_in_a_tool())  # tasks inherit the values
            await deep_in_a_tool()
        await deep_in_a_tool()
        assert seen == [
            ("s", "agent", "Agent", None, "outer"),
            ("s", "helper", "", "agent", "inner"),
            ("s", "agent", "Agent", None, "outer"),
            ("default", None, "", None, None),  # outside a run: ravi's "default" thread
        ]

    async def test_prompt_window_does_not_change_the_history(self, provider: HistoryProvider) -> None:
        from .. import agents

        config = ContextConfig(provider, agents.SlidingWindowCompaction(max_messages=4))
        ctx = AgentContext(config, "agent")
        await ctx.append_many("s", [text("system", "sys"), *_turns("m", 9)])
        window = await ctx.get_prompt_window("s")
        assert _texts(window) == ["sys", "m6", "m7", "m8"]
        assert await provider.count_messages("agent", session_id="s") == 10
        default = AgentContext(ContextConfig(provider), "agent")
        assert len(await default.get_prompt_window("s")) == 10  # one window of 100 by default
