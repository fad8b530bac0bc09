"""Our usage types against pydantic-ai's real ones: same figures, same checks, lossless round trips."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from pydantic_ai import usage as pai
from pydantic_ai.exceptions import UsageLimitExceeded as PaiExceeded

from axio_context.usage_limits import RequestUsage, RunUsage, UsageError, UsageLimitExceeded, UsageLimits
from axio_context.usage_limits.pydantic_bridge import from_pydantic_ai, to_pydantic_ai

FULL: dict[str, Any] = {
    "input_tokens": 1000,
    "cache_write_tokens": 100,
    "cache_write_1h_tokens": 40,
    "cache_read_tokens": 300,
    "output_tokens": 200,
    "unmeasured_requests": 1,
    "output_reasoning_tokens": 50,
    "input_audio_tokens": 20,
    "cache_audio_read_tokens": 5,
    "output_audio_tokens": 7,
    "audio_seconds": 2.5,
    "details": {"accepted_prediction_tokens": 3},
    "cost": Decimal("0.0123"),
}


def test_our_fields_are_pydantic_ais() -> None:
    import dataclasses

    theirs = {f.name for f in dataclasses.fields(pai.RunUsage)}
    ours = set(RunUsage.__struct_fields__) - {"extra"}
    assert ours == theirs
    assert set(RequestUsage.__struct_fields__) - {"extra"} == {
        f.name for f in dataclasses.fields(pai.RequestUsage)
    }
    assert set(UsageLimits.__struct_fields__) == {f.name for f in dataclasses.fields(pai.UsageLimits)}


@pytest.mark.parametrize(("ours", "theirs"), [(RequestUsage, pai.RequestUsage), (RunUsage, pai.RunUsage)])
def test_round_trip_loses_nothing(ours: type[Any], theirs: type[Any]) -> None:
    extra = {"requests": 3, "tool_calls": 2} if ours is RunUsage else {}
    original = theirs(**FULL, **extra)
    original.web_search_requests = 4  # a provider counter pydantic-ai keeps as an attribute
    converted = from_pydantic_ai(original)
    assert isinstance(converted, ours)
    assert converted.extra == {"web_search_requests": 4}
    back = to_pydantic_ai(converted)
    assert type(back) is theirs and back == original
    assert back.web_search_requests == 4


def test_limits_round_trip() -> None:
    original = pai.UsageLimits(
        cost_limit=Decimal("2.5"),
        request_limit=7,
        tool_calls_limit=3,
        input_tokens_limit=100,
        output_tokens_limit=50,
        total_tokens_limit=140,
        per_request_input_tokens_limit=60,
        count_tokens_before_request=True,
    )
    ours = from_pydantic_ai(original)
    assert ours.request_limit == 7 and ours.cost_limit == Decimal("2.5")
    assert to_pydantic_ai(ours) == original
    assert to_pydantic_ai(UsageLimits()) == pai.UsageLimits()


def test_sums_match_pydantic_ai() -> None:
    a, b = dict(FULL), {**FULL, "details": {"accepted_prediction_tokens": 1, "other": 2}, "cost": None}
    ours = RunUsage(requests=1) + RequestUsage(**a) + RunUsage(**b, requests=2, tool_calls=5)
    theirs = pai.RunUsage(requests=1) + pai.RequestUsage(**a) + pai.RunUsage(**b, requests=2, tool_calls=5)
    assert to_pydantic_ai(ours) == theirs
    assert ours.total_tokens == theirs.total_tokens and ours.cache_hit_ratio == theirs.cache_hit_ratio
    assert ours.opentelemetry_attributes() == theirs.opentelemetry_attributes()
    request = RequestUsage(**a)
    request.incr(RequestUsage(input_tokens=5))
    their_request = pai.RequestUsage(**a)
    their_request.incr(pai.RequestUsage(input_tokens=5))
    assert to_pydantic_ai(request) == their_request and request.requests == their_request.requests == 1
    assert to_pydantic_ai(ours - RunUsage(requests=1, input_tokens=10)) == theirs - pai.RunUsage(
        requests=1, input_tokens=10
    )
    assert RunUsage().has_values() is pai.RunUsage().has_values() is False
    assert RunUsage(unmeasured_requests=1).has_values() is pai.RunUsage(unmeasured_requests=1).has_values()


def _outcome(check: Any) -> str:
    try:
        check()
    except (UsageLimitExceeded, PaiExceeded) as exc:
        return str(exc).split(" Consider raising the limit")[0].rstrip(".")  # pydantic-ai adds a docs hint
    return "ok"


@pytest.mark.parametrize(
    "limits",
    [
        {"request_limit": 3},
        {"request_limit": None, "input_tokens_limit": 100},
        {"output_tokens_limit": 20},
        {"total_tokens_limit": 110},
        {"tool_calls_limit": 2},
        {"per_request_input_tokens_limit": 40},
        {"cost_limit": Decimal("0.5")},
    ],
)
@pytest.mark.parametrize(
    "figures",
    [
        {"requests": 2, "input_tokens": 50, "output_tokens": 10, "tool_calls": 1, "cost": Decimal("0.1")},
        {"requests": 3, "input_tokens": 101, "output_tokens": 21, "tool_calls": 3, "cost": Decimal("0.6")},
    ],
)
def test_checks_decide_and_word_as_pydantic_ai(limits: dict[str, Any], figures: dict[str, Any]) -> None:
    ours, theirs = UsageLimits(**limits), pai.UsageLimits(**limits)
    usage, their_usage = RunUsage(**figures), pai.RunUsage(**figures)
    assert ours.has_token_limits() == theirs.has_token_limits()
    for name in ("check_before_request", "check_tokens", "check_before_tool_call"):
        mine, other = getattr(ours, name), getattr(theirs, name)
        assert _outcome(lambda: mine(usage)) == _outcome(lambda: other(their_usage))  # noqa: B023
    assert _outcome(lambda: ours.check_cost(usage)) == _outcome(lambda: theirs.check_cost(their_usage))
    n = figures["input_tokens"]
    assert _outcome(lambda: ours.check_per_request_input_tokens(n)) == _outcome(
        lambda: theirs.check_per_request_input_tokens(n)
    )


@pytest.mark.parametrize(
    "name",
    [
        "request_limit",
        "tool_calls_limit",
        "input_tokens_limit",
        "output_tokens_limit",
        "total_tokens_limit",
        "per_request_input_tokens_limit",
        "cost_limit",
    ],
)
def test_a_limit_below_zero_names_the_field_and_zero_is_a_limit(name: str) -> None:
    with pytest.raises(UsageError, match=name):
        UsageLimits(**{name: -5})
    assert getattr(UsageLimits(**{name: 0}), name) == 0  # pydantic-ai accepts 0 (issue 35, item 12)


def test_bad_counts_name_the_field() -> None:
    with pytest.raises(UsageError, match="output_tokens must be a whole number"):
        RequestUsage(output_tokens=2.5)
    with pytest.raises(UsageError, match="requests must be between"):
        RunUsage(requests=-1)
    with pytest.raises(UsageError, match=r"details\['x'\]"):
        RunUsage(details={"x": 1.5})
    assert RequestUsage(input_tokens=10.0).input_tokens == 10  # a whole float from JSON is fine
    with pytest.raises(UsageError, match="not a pydantic-ai"):
        from_pydantic_ai(object())


def test_prompt_check_counts_the_prompt_before_the_request() -> None:
    limits = UsageLimits(input_tokens_limit=100, per_request_input_tokens_limit=60)
    limits.check_prompt(RunUsage(input_tokens=40), 60)
    with pytest.raises(
        UsageLimitExceeded, match=r"input_tokens_limit of 100 \(input_tokens=50 \+ prompt_tokens=51"
    ):
        limits.check_prompt(RunUsage(input_tokens=50), 51)
    with pytest.raises(UsageLimitExceeded, match="per_request_input_tokens_limit of 60") as info:
        limits.check_prompt(RunUsage(), 61)
    assert info.value.value == 61
