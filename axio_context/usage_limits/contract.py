"""The UsageRecorder contract as a pytest suite, run against every recorder (memory, SQLite).

Subclass :class:`UsageRecorderContract` and provide ``factory``: a :class:`RecorderFactory`
whose ``new()`` gives a fresh recorder and ``store(recorder, session_id)`` the context store
where that recorder's messages and token totals for the session are visible.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Protocol, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..blocks import TextBlock
from ..context import ContextStore
from ..errors import DecodeError
from ..messages import Message
from .counts import RequestUsage, RunUsage
from .errors import UsageError, UsageLimitExceeded
from .guard import UsageGuard
from .limits import UsageLimits
from .records import GROUPS, GroupBy, UsageRecorder

__all__ = ["RecorderFactory", "UsageRecorderContract"]


class RecorderFactory(Protocol):
    """Makes recorders for the contract, and the store that shows a session of one."""

    async def new(self) -> UsageRecorder: ...

    async def store(self, recorder: UsageRecorder, session_id: str) -> ContextStore: ...


def _one(field: str, count: int) -> RunUsage:
    """A usage of ``count`` in the one count ``field``."""
    usage = RunUsage()
    setattr(usage, field, count)
    return usage


def _reply(text: str) -> Message:
    return Message(role="assistant", content=[TextBlock(text=text)])


DAY1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)

# A request's figures as a caller may give them: counts up to 2**63 - 1, exact costs, detail and
# provider counters (a record may be refused; what is accepted must read back the same).
_COUNT = st.integers(0, 2**63 - 1) | st.integers(0, 1000)
_ROWS = st.tuples(
    st.sampled_from(["s1", "s2"]),
    st.sampled_from(["", "r1"]),
    st.builds(
        RequestUsage,
        input_tokens=_COUNT,
        output_tokens=_COUNT,
        cache_read_tokens=_COUNT,
        cost=st.none() | st.decimals(0, 10**6, places=6),
        details=st.dictionaries(st.sampled_from(["a", "reasoning"]), st.integers(0, 1000), max_size=2),
    ),
)


async def _fill(recorder: UsageRecorder) -> None:
    """Five requests over two days, two sessions, two agents, runs and models."""
    rows = [
        ("s1", "planner", "r1", "m-big", DAY1, 100, 10, "0.01"),
        ("s1", "planner", "r1", "m-big", DAY1 + timedelta(hours=1), 200, 20, None),
        ("s1", "coder", "r2", "m-small", DAY1 + timedelta(days=1), 30, 3, "0.001"),
        ("s2", "coder", "r3", "m-small", DAY1 + timedelta(days=1, hours=5), 40, 4, "0.002"),
        ("s2", "coder", "", "m-small", DAY1 + timedelta(days=1, hours=6), 50, 5, None),
    ]
    for i, (sid, agent, run, model, at, inp, out, cost) in enumerate(rows):
        await recorder.record(
            RequestUsage(
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=inp // 2,
                details={"reasoning": i},
                cost=None if cost is None else Decimal(cost),
            ),
            session_id=sid,
            agent=agent,
            run=run,
            model=model,
            tool_calls=i % 2,
            at=at,
        )


class UsageRecorderContract:
    """What every UsageRecorder must do."""

    @pytest.fixture
    def factory(self) -> RecorderFactory:
        raise NotImplementedError("provide a `factory` fixture returning a RecorderFactory")

    async def test_record_returns_the_row(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        row = await recorder.record(
            RequestUsage(input_tokens=7, output_tokens=2, output_reasoning_tokens=1, audio_seconds=1.5),
            session_id="s",
            agent="a",
            run="r",
            model="m",
            tool_calls=3,
        )
        assert (row.session_id, row.agent, row.run, row.model, row.position) == ("s", "a", "r", "m", None)
        assert row.usage.requests == 1 and row.usage.tool_calls == 3
        assert row.usage.output_reasoning_tokens == 1 and row.usage.audio_seconds == 1.5
        assert [r.id for r in await recorder.records(session_id="s")] == [row.id]

    async def test_totals_by_each_filter(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        await _fill(recorder)
        everything = await recorder.totals()
        assert (everything.requests, everything.input_tokens, everything.output_tokens) == (5, 420, 42)
        assert everything.tool_calls == 2 and everything.cost == Decimal("0.013")
        assert everything.details == {"reasoning": 10} and everything.cache_read_tokens == 210
        assert (await recorder.totals(session_id="s1")).input_tokens == 330
        assert (await recorder.totals(agent="coder")).input_tokens == 120
        assert (await recorder.totals(run="r1")).requests == 2
        assert (await recorder.totals(model="m-small")).cost == Decimal("0.003")
        assert (await recorder.totals(session_id="s2", agent="coder")).input_tokens == 90
        assert (await recorder.totals(session_id="s1", agent="coder", model="m-small")).requests == 1
        assert await recorder.totals(session_id="nobody") == RunUsage()
        assert (await recorder.totals(run="r1", model="m-small")).requests == 0

    async def test_unknown_cost_stays_unknown(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        await recorder.record(RequestUsage(input_tokens=1), session_id="s")
        assert (await recorder.totals(session_id="s")).cost is None

    async def test_aggregate_by_every_group(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        await _fill(recorder)
        expect = {
            "session": {"s1": 330, "s2": 90},
            "agent": {"planner": 300, "coder": 120},
            "run": {"r1": 300, "r2": 30, "r3": 40, "": 50},
            "model": {"m-big": 300, "m-small": 120},
            "day": {"2026-03-01": 300, "2026-03-02": 120},
        }
        for by in GROUPS:
            got = await recorder.aggregate(by)  # type: ignore[arg-type]
            assert sum(t.usage.requests for t in got) == 5, by
            if by in expect:
                assert {t.key: t.usage.input_tokens for t in got} == expect[by], by
        days = await recorder.aggregate("day")
        assert [t.key for t in days] == ["2026-03-01", "2026-03-02"]
        assert days[0].first_at == DAY1 and days[0].last_at == DAY1 + timedelta(hours=1)
        assert [t.key for t in await recorder.aggregate("session")] == ["s1", "s2"]  # most tokens first

    async def test_since_inside_a_day_and_at_a_day_boundary(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        await _fill(recorder)
        mid = DAY1 + timedelta(minutes=30)
        assert {t.key: t.usage.input_tokens for t in await recorder.aggregate("day", since=mid)} == {
            "2026-03-01": 200,
            "2026-03-02": 120,
        }
        boundary = datetime(2026, 3, 2, tzinfo=UTC)
        assert {t.key: t.usage.input_tokens for t in await recorder.aggregate("session", since=boundary)} == {
            "s1": 30,
            "s2": 90,
        }
        late = DAY1 + timedelta(days=1, hours=5, minutes=30)
        assert (await recorder.totals(since=late)).input_tokens == 50
        assert (await recorder.totals(agent="coder", since=late)).cost is None
        assert (await recorder.totals(session_id="s1", since=mid)).input_tokens == 230

    async def test_record_with_message_appends_it_and_adds_tokens(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        store = await factory.store(recorder, "chat")
        await store.append(Message(role="user", content=[TextBlock(text="hi")]))
        row = await recorder.record(
            RequestUsage(input_tokens=12, output_tokens=5), session_id="chat", message=_reply("hello")
        )
        assert row.position == 1
        assert (await store.get_history())[-1] == _reply("hello")
        assert await store.get_context_tokens() == (12, 5)
        await recorder.record(RequestUsage(input_tokens=3, output_tokens=1), session_id="chat")
        totals = await recorder.totals(session_id="chat")
        assert await store.get_context_tokens() == (totals.input_tokens, totals.output_tokens) == (15, 6)
        info = next(s for s in await store.list_sessions() if s.session_id == "chat")
        assert (info.input_tokens, info.output_tokens) == (15, 6)

    async def test_run_reused_in_another_session_is_refused_and_nothing_written(
        self, factory: RecorderFactory
    ) -> None:
        recorder = await factory.new()
        store = await factory.store(recorder, "other")
        await recorder.record(RequestUsage(input_tokens=1), session_id="first", run="run-1")
        with pytest.raises(UsageError, match="run-1"):
            await recorder.record(
                RequestUsage(input_tokens=9), session_id="other", run="run-1", message=_reply("x")
            )
        assert await store.get_history() == []
        assert await store.get_context_tokens() == (0, 0)
        assert (await recorder.totals(run="run-1")).input_tokens == 1
        await recorder.record(
            RequestUsage(input_tokens=1), session_id="first", run="run-1"
        )  # same session: fine

    async def test_a_bad_message_leaves_the_usage_out_too(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        store = await factory.store(recorder, "s")
        bad = Message(role="wizard", content=[TextBlock(text="x")])  # type: ignore[arg-type]
        with pytest.raises(DecodeError, match="role"):
            await recorder.record(RequestUsage(input_tokens=5), session_id="s", message=bad)
        assert await store.get_history() == [] and await store.get_context_tokens() == (0, 0)
        assert await recorder.totals() == RunUsage() and await recorder.records() == []

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"input_tokens": -1}, "input_tokens"),
            ({"output_tokens": 1.5}, "output_tokens"),
            ({"cache_read_tokens": "3"}, "cache_read_tokens"),
            ({"details": {"x": -2}}, "details"),
            ({"audio_seconds": float("nan")}, "audio_seconds"),
            ({"cost": Decimal("-1")}, "cost"),
        ],
    )
    async def test_bad_figures_are_refused_naming_the_field(
        self, factory: RecorderFactory, fields: dict[str, object], named: str
    ) -> None:
        recorder = await factory.new()
        store = await factory.store(recorder, "s")
        usage = RequestUsage()
        for name, value in fields.items():
            setattr(usage, name, value)  # assigned after building: the recorder checks again
        with pytest.raises(UsageError, match=named):
            await recorder.record(usage, session_id="s", message=_reply("x"))
        assert await store.get_history() == [] and await recorder.totals() == RunUsage()

    async def test_bad_ids_are_refused(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        with pytest.raises(UsageError, match="session_id"):
            await recorder.record(RequestUsage(), session_id="")
        with pytest.raises(UsageError, match="agent"):
            await recorder.record(RequestUsage(), session_id="s", agent=None)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="by must be one of"):
            await recorder.aggregate("week")  # type: ignore[arg-type]

    async def test_a_run_usage_is_recorded_as_it_is(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        await recorder.record(RunUsage(requests=3, tool_calls=4, input_tokens=9), session_id="s")
        total = await recorder.totals(session_id="s")
        assert (total.requests, total.tool_calls, total.input_tokens) == (3, 4, 9)
        with pytest.raises(UsageError, match="tool_calls"):
            await recorder.record(RunUsage(), session_id="s", tool_calls=1)

    async def test_guard_applies_limits_to_the_recorded_usage(self, factory: RecorderFactory) -> None:
        recorder = await factory.new()
        guard = UsageGuard(recorder, UsageLimits(request_limit=2, total_tokens_limit=100), session_id="s")
        await guard.check_before_request()
        await recorder.record(RequestUsage(input_tokens=40, output_tokens=10), session_id="s")
        await guard.check_after_response()
        await recorder.record(RequestUsage(input_tokens=40, output_tokens=20), session_id="s")
        with pytest.raises(UsageLimitExceeded, match=r"request_limit of 2.*session 's'") as info:
            await guard.check_before_request()
        assert (info.value.limit_name, info.value.limit, info.value.value) == ("request_limit", 2, 2)
        with pytest.raises(UsageLimitExceeded, match="total_tokens_limit"):
            await guard.check_after_response()
        other = UsageGuard(recorder, UsageLimits(request_limit=2), session_id="t")
        await other.check_before_request()  # another session's budget is its own

    @pytest.mark.parametrize("field", ["input_tokens", "output_tokens", "cache_read_tokens", "requests"])
    async def test_a_record_that_would_overflow_a_rollup_is_refused_and_nothing_written(
        self, factory: RecorderFactory, field: str
    ) -> None:
        """Each session within bounds, their project's (and the agent's, the model's, all time's)
        total past 2**63 - 1: the second record is refused, the totals stay readable."""
        recorder = await factory.new()
        top = 2**63 - 1
        await recorder.record(_one(field, top), session_id="s1", agent="a", model="m")
        with pytest.raises(UsageError, match=field):
            await recorder.record(_one(field, 1), session_id="s2", agent="a", model="m")
        assert await recorder.records(session_id="s2") == []
        for by in GROUPS:
            (group,) = await recorder.aggregate(cast(GroupBy, by))
            if by != "session":
                assert getattr(group.usage, field) == top
        assert getattr(await recorder.totals(project="p"), field) == top
        assert getattr(await recorder.totals(agent="a"), field) == top
        await recorder.record(_one(field, 0), session_id="s2")  # a record adding nothing: fine

    @settings(
        max_examples=30,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(rows=st.lists(_ROWS, min_size=1, max_size=4))
    async def test_what_a_record_accepts_reads_back_equal(
        self, factory: RecorderFactory, rows: list[tuple[str, str, RequestUsage]]
    ) -> None:
        recorder = await factory.new()
        for session_id, run, usage in rows:
            try:
                await recorder.record(usage, session_id=session_id, run=run, model="m")
            except ValueError:  # a UsageError, or a session's token total refusing it: nothing written
                continue
        newest_first = await recorder.records()
        total = RunUsage()
        for row in newest_first:
            total.incr(row.usage)
        assert await recorder.totals() == total
        assert await recorder.totals(model="m") == total
