"""The :class:`~axio_context.pools.ContextQueue` contract (pygents' documented behaviours)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..errors import UnregisteredHookError, UnserializableHookError
from ..hooks import ContextQueueHook, Hook, HookRegistry, hook
from ..items import ContextItem
from .factory import PoolFactory, Recorder, clean_registry

__all__ = ["ContextQueueContract"]


def _c(q: Any) -> list[Any]:
    return [i.content for i in q.items]


def _items(*contents: Any) -> list[ContextItem[Any]]:
    return [ContextItem(c) for c in contents]


class ContextQueueContract:
    """What every context queue does; subclass it and provide ``pools``."""

    @pytest.fixture(autouse=True)
    def _registry(self) -> Iterator[None]:
        yield from clean_registry()

    @pytest.fixture
    def pools(self) -> PoolFactory:
        raise NotImplementedError("provide a `pools` fixture returning a PoolFactory")

    async def test_limit_below_one_is_a_value_error(self, pools: PoolFactory) -> None:
        for bad in (0, -1):
            with pytest.raises(ValueError, match="limit must be >= 1"):
                await pools.queue(bad)

    async def test_append_keeps_the_newest_and_reads(self, pools: PoolFactory) -> None:
        q = await pools.queue(3)
        assert not q and len(q) == 0 and q.items == []
        await q.append(*_items(1, 2))
        await q.append(*_items(3, 4, 5))
        assert _c(q) == [3, 4, 5] and len(q) == 3 and bool(q)
        assert [i.content for i in q] == [3, 4, 5]
        copy = q.items
        copy.clear()
        assert len(q) == 3  # items is a copy
        assert q.limit == 3
        assert q.history() == "3\n4\n5" and q.history(last=1) == "5"

    async def test_append_refuses_a_non_item_and_appends_nothing(self, pools: PoolFactory) -> None:
        q = await pools.queue(3)
        with pytest.raises(TypeError, match="ContextItem"):
            await q.append(ContextItem(1), "raw")
        assert q.items == []

    async def test_append_hooks_get_queue_incoming_and_current(self, pools: PoolFactory) -> None:
        q = await pools.queue(2)
        rec = Recorder()
        q.before_append(rec.named("before"))
        q.after_append(rec.named("after"))
        await q.append(*_items("a"))
        await q.append(*_items("b", "c"))
        a, b, c = (ContextItem(x) for x in "abc")
        assert rec.calls == [
            ("before", (q, [a], [])),
            ("after", (q, [a], [a])),
            ("before", (q, [b, c], [a])),
            ("after", (q, [b, c], [b, c])),
        ]

    async def test_on_evict_fires_for_each_pushed_out_item_in_order(self, pools: PoolFactory) -> None:
        q = await pools.queue(2)
        rec = Recorder()
        q.on_evict(rec.named("evict"))
        q.before_append(rec.named("before"))
        q.after_append(rec.named("after"))
        await q.append(*_items(1, 2))
        await q.append(*_items(3, 4, 5))
        assert rec.events() == ["before", "after", "before", "evict", "evict", "evict", "after"]
        assert [args[1].content for e, args in rec.calls if e == "evict"] == [1, 2, 3]
        assert _c(q) == [4, 5]

    async def test_clear_hooks_get_queue_and_items(self, pools: PoolFactory) -> None:
        q = await pools.queue(5)
        rec = Recorder()
        q.before_clear(rec.named("before"))
        q.after_clear(rec.named("after"))
        await q.append(*_items(1, 2))
        await q.clear()
        assert rec.calls == [("before", (q, _items(1, 2))), ("after", (q,))]
        assert q.items == [] and not q

    async def test_hooks_list_decorator_options_and_global_tags(self, pools: PoolFactory) -> None:
        seen: list[Any] = []

        async def listed(queue: Any, appended: Any, current: Any) -> None:
            seen.append(("listed", len(current)))

        async def fixed(queue: Any, incoming: Any, current: Any, *, label: str) -> None:
            seen.append(("fixed", label))

        @hook(ContextQueueHook.AFTER_APPEND, tags={"work"})
        async def tagged(queue: Any, appended: Any, current: Any) -> None:
            seen.append(("tagged", sorted(queue.tags)))

        @hook(ContextQueueHook.AFTER_APPEND)
        async def everywhere(queue: Any, appended: Any, current: Any) -> None:
            seen.append(("everywhere", None))

        work = await pools.queue(5, tags=["work", "x"])
        other = await pools.queue(5, tags=["other"])
        work.hooks.append(Hook(listed, ContextQueueHook.AFTER_APPEND))
        work.before_append(lock=True, label="L")(fixed)
        work.hooks.append(everywhere)  # on the owner and global: fires once
        await work.append(ContextItem(1))
        await other.append(ContextItem(1))
        assert seen == [
            ("fixed", "L"),
            ("listed", 1),
            ("everywhere", None),
            ("tagged", ["work", "x"]),
            ("everywhere", None),
        ]
        assert work.tags == frozenset({"work", "x"})

    async def test_branch_starts_from_a_snapshot_and_diverges(self, pools: PoolFactory) -> None:
        parent = await pools.queue(4, tags=["t"])
        await parent.append(*_items("system", "user"))
        child = await pools.branch(parent)
        await child.append(ContextItem("tool"))
        grandchild = await pools.branch(child, limit=2)
        await grandchild.append(ContextItem("sub"))
        await parent.append(ContextItem("later"))
        assert _c(parent) == ["system", "user", "later"]
        assert _c(child) == ["system", "user", "tool"]
        assert _c(grandchild) == ["tool", "sub"]
        assert (child.limit, grandchild.limit, grandchild.tags) == (4, 2, frozenset({"t"}))
        await parent.clear()
        assert _c(child) == ["system", "user", "tool"]
        await child.clear()
        assert _c(grandchild) == ["tool", "sub"] and _c(parent) == []

    async def test_branch_with_a_smaller_limit_keeps_the_newest(self, pools: PoolFactory) -> None:
        parent = await pools.queue(5)
        await parent.append(*_items(1, 2, 3, 4, 5))
        child = await pools.branch(parent, limit=2)
        assert _c(child) == [4, 5] and len(child) == 2
        await child.append(ContextItem(6))
        assert _c(child) == [5, 6] and _c(parent) == [1, 2, 3, 4, 5]

    async def test_branch_inherits_hooks_unless_given(self, pools: PoolFactory) -> None:
        parent = await pools.queue(3)
        rec = Recorder()
        first = parent.after_append(rec.named("a"))
        other = Hook(rec.named("b"), ContextQueueHook.AFTER_APPEND)
        inherited, bare, replaced = (
            await pools.branch(parent),
            await pools.branch(parent, hooks=[]),
            await pools.branch(parent, hooks=[other]),
        )
        assert inherited.hooks == [first] and bare.hooks == [] and replaced.hooks == [other]
        for q in (inherited, bare, replaced):
            await q.append(ContextItem(0))
        assert rec.events() == ["a", "b"]

    async def test_dict_round_trip_with_hooks_by_name(self, pools: PoolFactory) -> None:
        q = await pools.queue(3, tags=["b", "a"])

        async def keep_recent(queue: Any, incoming: Any, current: Any) -> None:
            return None

        q.before_append(keep_recent)

        await q.append(ContextItem({"text": "hi", "n": [1, 2]}, "greeting", "g1"), ContextItem("x"))
        data = q.to_dict()
        assert data == {
            "limit": 3,
            "items": [
                {"id": "g1", "description": "greeting", "content": {"text": "hi", "n": [1, 2]}},
                {"id": None, "description": None, "content": "x"},
            ],
            "hooks": {"before_append": ["keep_recent"]},
            "tags": ["a", "b"],
        }
        restored = await pools.queue_from_dict(data)
        assert restored.items == q.items and restored.limit == 3 and restored.tags == q.tags
        assert restored.hooks == [HookRegistry.get("keep_recent")]
        assert restored.to_dict() == data

    async def test_from_dict_with_an_unregistered_hook(self, pools: PoolFactory) -> None:
        data = {"limit": 2, "items": [], "hooks": {"on_evict": ["nowhere"]}, "tags": []}
        with pytest.raises(UnregisteredHookError, match="nowhere"):
            await pools.queue_from_dict(data)

    async def test_a_closure_hook_cannot_be_saved(self, pools: PoolFactory) -> None:
        q = await pools.queue(2)

        def make() -> Any:
            async def dup(queue: Any, item: Any) -> None:
                return None

            return dup

        q.on_evict(make())
        q.on_evict(make())  # a second closure under the same name
        with pytest.raises(UnserializableHookError, match="dup"):
            q.to_dict()

    async def test_unknown_keys_of_a_newer_version_are_kept(self, pools: PoolFactory) -> None:
        data = {
            "limit": 2,
            "items": [{"content": 1, "id": None, "description": None, "priority": {"level": 3}}],
            "hooks": {},
            "tags": [],
            "format": 7,
            "window": {"policy": "lru", "extra": [1, 2, 3]},
        }
        restored = await pools.queue_from_dict(data)
        assert restored.to_dict() == data
        assert (await pools.reopen(restored)).to_dict() == data

    async def test_survives_reopening(self, pools: PoolFactory) -> None:
        q = await pools.queue(3)
        await q.append(*_items(1, 2, 3, 4))
        b = await pools.branch(q, limit=2)
        await b.append(ContextItem(5))
        assert _c(await pools.reopen(q)) == [2, 3, 4]
        assert _c(await pools.reopen(b)) == [4, 5]

    async def test_branch_is_synchronous_and_a_snapshot(self, pools: PoolFactory) -> None:
        q = await pools.queue(3)
        await q.append(*_items(0, 1, 2))
        child = q.branch(limit=2)  # not awaited: pygents' Agent.branch() calls it so
        await q.append(ContextItem(3))  # the parent evicts first; the child keeps its items
        assert _c(child) == [1, 2] and _c(q) == [1, 2, 3]
        await child.append(ContextItem("c"))
        assert _c(await pools.reopen(child)) == [2, "c"]
        assert _c(await pools.reopen(q)) == [1, 2, 3]
