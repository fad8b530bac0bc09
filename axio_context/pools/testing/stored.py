"""What every queue and pool reads back: whatever ``add`` or ``append`` accepts, a fresh open
returns equal and the command line can show; what a backend cannot store is refused whole
(:class:`ContentEncodeError` or ``ValueError``) with nothing written. Property tests: this
module needs Hypothesis (subclass :class:`StoredItemsContract` beside the other suites)."""

from __future__ import annotations

from collections.abc import Awaitable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..errors import ContentEncodeError
from ..items import ContextItem
from .factory import PoolFactory, clean_registry

__all__ = ["StoredItemsContract"]

# Any character, lone surrogates and NUL included: a backend that cannot store one must refuse it.
_text = st.text(st.characters(codec=None, exclude_categories=()), max_size=12)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=False)
    | _text
    | st.binary(max_size=16)
)
# Keys JSON can show (text, numbers) and keys it cannot (None, booleans, tuples).
_keys = _text | st.integers(-(2**31), 2**31) | st.none() | st.booleans() | st.tuples(st.integers(0, 3))
_content: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
# Keys of a newer version's item dict (``extra``) go the same way as the content.
_extra = st.none() | st.dictionaries(_text, _content, max_size=2)
_pool_items = st.builds(ContextItem, _content, _text, _text, _extra)
_SETTINGS = settings(
    max_examples=25,
    deadline=None,
    # One method per backend subclass (differing executors); a fresh container per example.
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.differing_executors,
    ],
)


def _nested(depth: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return top


async def _refused_or_kept(write: Awaitable[None], reason: str) -> None:
    """``write`` either succeeds or is refused whole with a ContentEncodeError saying ``reason``."""
    try:
        await write
    except ContentEncodeError as exc:
        message = str(exc)
    else:
        return
    assert reason in message


class StoredItemsContract:
    """What every queue and pool reads back; subclass it and provide ``pools``."""

    @pytest.fixture(autouse=True)
    def _registry(self) -> Iterator[None]:
        yield from clean_registry()

    @pytest.fixture
    def pools(self) -> PoolFactory:
        raise NotImplementedError("provide a `pools` fixture returning a PoolFactory")

    async def _reads_back(self, pools: PoolFactory, owner: Any) -> None:
        again = await pools.reopen(owner)
        assert again.items == owner.items
        await pools.shown(again)  # the command line can print it

    async def test_a_tuple_key_is_refused_or_shown(self, pools: PoolFactory) -> None:
        p = await pools.pool()
        await _refused_or_kept(p.add(ContextItem({(1, 2): "x"}, "d", "t")), "id 't'")
        await self._reads_back(pools, p)
        q = await pools.queue(3)
        await _refused_or_kept(q.append(ContextItem("fine"), ContextItem({None: 1})), "item 1")
        await self._reads_back(pools, q)

    async def test_content_nested_too_deep_is_refused_whole(self, pools: PoolFactory) -> None:
        p = await pools.pool()
        await p.add(ContextItem(_nested(100), "shallow enough", "ok"))
        await _refused_or_kept(p.add(ContextItem(_nested(5_000), "deep", "deep")), "nested too deeply")
        await self._reads_back(pools, p)
        q = await pools.queue(2)
        await _refused_or_kept(q.append(ContextItem(1), ContextItem(_nested(5_000))), "item 1")
        await self._reads_back(pools, q)

    @_SETTINGS
    @given(items=st.lists(_pool_items, min_size=1, max_size=3))
    async def test_whatever_add_accepts_reads_back_equal(
        self, pools: PoolFactory, items: list[ContextItem[Any]]
    ) -> None:
        p = await pools.pool()
        for item in items:
            try:
                await p.add(item)
            except (ContentEncodeError, ValueError):  # refused whole: nothing of it written
                assert p.items == [i for i in p.items if i is not item]
        await self._reads_back(pools, p)

    @_SETTINGS
    @given(
        batches=st.lists(
            st.lists(st.builds(ContextItem, _content, _text, st.none(), _extra), max_size=3), max_size=3
        )
    )
    async def test_whatever_append_accepts_reads_back_equal(
        self, pools: PoolFactory, batches: list[list[ContextItem[Any]]]
    ) -> None:
        q = await pools.queue(4)
        for batch in batches:
            before = q.items
            try:
                await q.append(*batch)
            except (ContentEncodeError, ValueError):  # refused whole: nothing of it written
                assert q.items == before
        await self._reads_back(pools, q)
