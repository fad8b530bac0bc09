"""The stored-state contract as a pytest suite, run against every backend's ``save_state`` /
``load_state`` (SQLite, PostgreSQL).

Subclass :class:`StoredStateContract` and provide ``states``: a :class:`StateFactory` whose
``store(session_id)`` gives a context store of a fresh database's session and whose ``save`` /
``load`` are the backend's ``save_state`` / ``load_state``.
"""

from __future__ import annotations

from typing import Any, Protocol
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..context import ContextStore
from .errors import StateEncodeError
from .resumable import ResumableState

__all__ = ["StateFactory", "StoredStateContract"]


class StateFactory(Protocol):
    """A backend's stores and its save_state / load_state."""

    async def store(self, session_id: str) -> ContextStore: ...

    async def save(self, store: ContextStore, state: ResumableState) -> None: ...

    async def load(self, store: ContextStore) -> ResumableState | None: ...


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": value}
    return value


def _history(text: str) -> list[dict[str, Any]]:
    return [{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}]


GOOD = ResumableState(
    user_prompts=["hello"],
    deferred_tool_metadata={"call-0": {"tool": "shell"}},
    subagent_history={"explorer": _history("look around")},
)

#: States a save must refuse with StateEncodeError, writing nothing (issue 30, items 6 and 8).
BAD: dict[str, ResumableState] = {
    "wrong type for the field (load would fail)": ResumableState(
        deferred_tool_metadata={"call-1": 1}  # type: ignore[dict-item]
    ),
    "wrong type in a list field": ResumableState(user_prompts=[1, 2]),  # type: ignore[list-item]
    "lone surrogate in a field": ResumableState(user_prompts=["\ud800"]),
    "lone surrogate in a subagent message": ResumableState(subagent_history={"a": _history("\udfff")}),
    "3,000-deep nesting in a field": ResumableState(tasks={"t": _nested(3_000)}),
    "3,000-deep nesting in a subagent message": ResumableState(
        subagent_history={"a": [{"kind": "request", "parts": [], "x": _nested(3_000)}]}
    ),
    "tuple key in a field": ResumableState(tasks={"t": {(1, 2): "x"}}),  # type: ignore[dict-item]
    "tuple key in a subagent message": ResumableState(
        subagent_history={"a": [{"kind": "request", (1, 2): "x"}]}  # type: ignore[dict-item]
    ),
}

# JSON values a state field holds (no NUL: PostgreSQL text cannot hold one; floats finite).
_TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=20)
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
_STATES = st.builds(
    ResumableState,
    user_prompts=st.lists(_TEXT, max_size=3),
    handoff_message=st.none() | _TEXT,
    deferred_tool_metadata=st.dictionaries(_TEXT, st.dictionaries(_TEXT, _JSON, max_size=3), max_size=3),
    tasks=st.dictionaries(_TEXT, st.dictionaries(_TEXT, _JSON, max_size=3), max_size=3),
    subagent_history=st.dictionaries(
        _TEXT.filter(bool),
        st.lists(
            st.fixed_dictionaries({"kind": st.sampled_from(["request", "response"]), "x": _JSON}), max_size=3
        ),
        max_size=2,
    ),
)


class StoredStateContract:
    """What every backend's save_state / load_state must do."""

    @pytest.fixture
    def states(self) -> StateFactory:
        raise NotImplementedError("provide a `states` fixture returning a StateFactory")

    async def test_round_trip(self, states: StateFactory) -> None:
        store = await states.store(uuid4().hex)
        await states.save(store, GOOD)
        assert await states.load(store) == GOOD

    @pytest.mark.parametrize("case", sorted(BAD))
    async def test_a_state_load_could_not_give_back_is_refused_and_the_good_one_stays(
        self, states: StateFactory, case: str
    ) -> None:
        store = await states.store(uuid4().hex)
        await states.save(store, GOOD)
        with pytest.raises(StateEncodeError):
            await states.save(store, BAD[case])
        assert await states.load(store) == GOOD

    @pytest.mark.parametrize("case", sorted(BAD))
    async def test_a_refused_first_save_writes_nothing(self, states: StateFactory, case: str) -> None:
        store = await states.store(uuid4().hex)
        with pytest.raises(StateEncodeError):
            await states.save(store, BAD[case])
        assert await states.load(store) is None
        assert await store.get_history() == []

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(state=_STATES)
    async def test_what_a_save_accepts_loads_back_equal(
        self, states: StateFactory, state: ResumableState
    ) -> None:
        store = await states.store(uuid4().hex)
        try:
            await states.save(store, state)
        except StateEncodeError:
            return
        assert await states.load(store) == state
