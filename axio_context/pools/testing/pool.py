"""The :class:`~axio_context.pools.ContextPool` contract (pygents' documented behaviours)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ...memory.testing.factory import TinyEmbedder
from ..errors import UnregisteredHookError
from ..hooks import ContextPoolHook, HookRegistry, hook
from ..items import ContextItem
from .factory import PoolFactory, Recorder, clean_registry

__all__ = ["ContextPoolContract"]


def _item(i: str, content: Any = None, description: str | None = None) -> ContextItem[Any]:
    return ContextItem(content if content is not None else i, description or f"about {i}", i)


def _ids(p: Any) -> list[str | None]:
    return [i.id for i in p.items]


class ContextPoolContract:
    """What every context pool does; subclass it and provide ``pools``."""

    @pytest.fixture(autouse=True)
    def _registry(self) -> Iterator[None]:
        yield from clean_registry()

    @pytest.fixture
    def pools(self) -> PoolFactory:
        raise NotImplementedError("provide a `pools` fixture returning a PoolFactory")

    async def test_limit_below_one_is_a_value_error(self, pools: PoolFactory) -> None:
        for bad in (0, -3):
            with pytest.raises(ValueError, match="limit must be >= 1"):
                await pools.pool(bad)

    async def test_add_needs_id_and_description(self, pools: PoolFactory) -> None:
        p = await pools.pool()
        for bad in (ContextItem(1, description="d"), ContextItem(1, id="x")):
            with pytest.raises(ValueError, match="'id' and 'description'"):
                await p.add(bad)
        assert len(p) == 0

    async def test_get_remove_and_reads(self, pools: PoolFactory) -> None:
        p = await pools.pool()
        assert p.limit is None and not p and p.catalogue() == ""
        await p.add(_item("a", 1, "First"))
        await p.add(_item("b", 2, "Second"))
        assert p.get("a") == ContextItem(1, "First", "a") and len(p) == 2 and bool(p)
        assert [i.id for i in p] == ["a", "b"]
        assert p.catalogue() == "- [a] First\n- [b] Second"
        p.items.clear()
        assert len(p) == 2
        with pytest.raises(KeyError):
            p.get("zz")
        with pytest.raises(KeyError):
            await p.remove("zz")
        await p.remove("a")
        assert _ids(p) == ["b"]
        with pytest.raises(KeyError):
            p.get("a")

    async def test_same_id_replaces_in_place_without_eviction(self, pools: PoolFactory) -> None:
        p = await pools.pool(limit=2)
        rec = Recorder()
        for event, attach in (("evict", p.on_evict), ("before", p.before_add), ("after", p.after_add)):
            attach(rec.named(event))
        await p.add(_item("a"))
        await p.add(_item("b"))
        rec.calls.clear()
        new_a = ContextItem("A2", "changed", "a")
        await p.add(new_a)
        assert _ids(p) == ["a", "b"] and p.get("a") == new_a
        assert rec.calls == [("before", (p, new_a)), ("after", (p, new_a))]

    async def test_eviction_by_insertion_order_and_hook_order(self, pools: PoolFactory) -> None:
        p = await pools.pool(limit=2)
        rec = Recorder()
        for event, attach in (("evict", p.on_evict), ("before", p.before_add), ("after", p.after_add)):
            attach(rec.named(event))
        for i in "abc":
            await p.add(_item(i))
        assert _ids(p) == ["b", "c"]
        assert rec.calls[-3:] == [
            ("evict", (p, _item("a"))),
            ("before", (p, _item("c"))),
            ("after", (p, _item("c"))),
        ]
        await p.add(_item("b", "B2"))  # replacing keeps b the oldest
        await p.add(_item("d"))
        assert _ids(p) == ["c", "d"]

    async def test_remove_and_clear_hooks(self, pools: PoolFactory) -> None:
        p = await pools.pool()
        rec = Recorder()
        p.before_remove(rec.named("before_remove"))
        p.after_remove(rec.named("after_remove"))
        p.before_clear(rec.named("before_clear"))
        p.after_clear(rec.named("after_clear"))
        for i in "abc":
            await p.add(_item(i))
        await p.remove("b")
        await p.clear()
        assert rec.calls == [
            ("before_remove", (p, _item("b"))),
            ("after_remove", (p, _item("b"))),
            ("before_clear", (p, {"a": _item("a"), "c": _item("c")})),
            ("after_clear", (p,)),
        ]
        assert len(p) == 0

    async def test_global_hooks_are_filtered_by_tag(self, pools: PoolFactory) -> None:
        seen: list[str] = []

        @hook(ContextPoolHook.AFTER_ADD, tags={"docs"})
        async def docs_only(pool: Any, item: Any) -> None:
            seen.append(f"docs:{item.id}")

        @hook([ContextPoolHook.AFTER_ADD, ContextPoolHook.AFTER_REMOVE])
        async def all_pools(pool: Any, item: Any) -> None:
            seen.append(f"all:{item.id}")

        tagged, plain = await pools.pool(tags=["docs"]), await pools.pool()
        await tagged.add(_item("t"))
        await plain.add(_item("p"))
        await plain.remove("p")
        assert seen == ["docs:t", "all:t", "all:p", "all:p"]

    async def test_branch_copies_without_firing_hooks(self, pools: PoolFactory) -> None:
        parent = await pools.pool(limit=5, tags=["x"])
        for i in "abc":
            await parent.add(_item(i))
        rec = Recorder()
        for attach in (parent.before_add, parent.after_add, parent.on_evict, parent.before_remove):
            attach(rec.named("any"))
        child = await pools.branch(parent)
        assert rec.calls == [] and _ids(child) == ["a", "b", "c"]
        assert (child.limit, child.tags, child.hooks) == (5, frozenset({"x"}), parent.hooks)
        await child.add(_item("d"))
        await child.remove("a")
        await parent.add(_item("e"))
        assert _ids(parent) == ["a", "b", "c", "e"] and _ids(child) == ["b", "c", "d"]
        await parent.clear()
        assert _ids(child) == ["b", "c", "d"]

    async def test_branch_with_a_smaller_limit_keeps_the_newest(self, pools: PoolFactory) -> None:
        parent = await pools.pool(limit=4)
        for i in "abcd":
            await parent.add(_item(i))
        child = await pools.branch(parent, limit=2)
        assert _ids(child) == ["c", "d"] and child.limit == 2
        await child.add(_item("e"))
        assert _ids(child) == ["d", "e"] and _ids(parent) == ["a", "b", "c", "d"]
        unbounded = await pools.branch(parent, limit=None)
        assert unbounded.limit is None and len(unbounded) == 4

    async def test_dict_round_trip_restores_without_hooks_or_eviction(self, pools: PoolFactory) -> None:
        p = await pools.pool(limit=3, tags=["k"])

        async def on_item_added(pool: Any, item: Any) -> None:
            raise AssertionError("no hook fires while restoring")

        p.after_add(on_item_added)

        data_items = [{"id": i, "description": f"d{i}", "content": {"v": i}} for i in "abcde"]
        data_items[1]["source"] = {
            "url": "https://example.org",
            "fetched": [2026, 11],
        }  # a newer version's key
        data = {"limit": 3, "items": data_items, "hooks": {"after_add": ["on_item_added"]}, "tags": ["k"]}
        restored = await pools.pool_from_dict(data)
        assert _ids(restored) == list("abcde")  # as stored: no eviction on restore
        assert restored.hooks == [HookRegistry.get("on_item_added")]
        assert restored.to_dict() == data
        assert (await pools.reopen(restored)).to_dict() == data
        with pytest.raises(UnregisteredHookError):
            await pools.pool_from_dict({**data, "hooks": {"before_add": ["missing_hook"]}})
        with pytest.raises(ValueError, match="'id'"):
            await pools.pool_from_dict({"limit": None, "items": [{"content": 1}]})

    async def test_select_ranks_by_description(self, pools: PoolFactory) -> None:
        p = await pools.pool(embedder=TinyEmbedder())
        await p.add(ContextItem("r", "Q3 earnings report: revenue, margins, guidance", "q3"))
        await p.add(ContextItem("w", "weather forecast for the weekend", "wx"))
        await p.add(ContextItem("m", "margins of the Q2 report", "q2"))
        found = await p.select("report margins", k=2)
        assert {i.id for i in found} == {"q3", "q2"}
        assert len(await p.select("report", k=1)) == 1
        with pytest.raises(ValueError, match="k must be"):
            await p.select("x", k=0)

    async def test_survives_reopening(self, pools: PoolFactory) -> None:
        p = await pools.pool(limit=2)
        for i in "abc":
            await p.add(_item(i, {"nested": [i, 1.5, None]}))
        await p.remove("b")
        again = await pools.reopen(p)
        assert again.items == p.items and again.limit == 2

    async def test_branch_is_synchronous_and_a_snapshot(self, pools: PoolFactory) -> None:
        parent = await pools.pool(limit=3)
        for i in "abc":
            await parent.add(_item(i))
        child = parent.branch()  # not awaited: pygents' Agent.branch() calls it so
        await parent.add(_item("d"))  # the parent changes first
        assert _ids(child) == ["a", "b", "c"] and _ids(parent) == ["b", "c", "d"]
        await child.add(_item("e"))
        assert _ids(child) == ["b", "c", "e"]
        assert _ids(await pools.reopen(child)) == ["b", "c", "e"]
        assert _ids(await pools.reopen(parent)) == ["b", "c", "d"]
        small = parent.branch(limit=1)
        grandchild = small.branch()  # a branch of a branch not written yet
        await grandchild.add(_item("f"))
        assert _ids(await pools.reopen(grandchild)) == ["f"] and _ids(small) == ["d"]
