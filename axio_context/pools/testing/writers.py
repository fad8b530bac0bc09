"""Many handles on one queue or pool (other connections, other processes): whatever order their
changes come in, each handle's copy, once it has written, equals the container read afresh. A
persisted handle whose copy is stale applies the others' changes it reads back with its own
write; seeded random interleavings of adds, replacements, removals (with and without a removal
entry: a branch writes one, a root pool does not), evictions and clears."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from ..items import ContextItem
from .factory import PoolFactory, clean_registry

__all__ = ["SharedWritersContract"]


def _shown(container: Any) -> list[tuple[Any, ...]]:
    return [(i.id, i.description, i.content) for i in container.items]


class SharedWritersContract:
    """Handles sharing one container; subclass it and provide ``pools``."""

    @pytest.fixture(autouse=True)
    def _registry(self) -> Iterator[None]:
        yield from clean_registry()

    @pytest.fixture
    def pools(self) -> PoolFactory:
        raise NotImplementedError("provide a `pools` fixture returning a PoolFactory")

    async def _same_as_stored(self, pools: PoolFactory, writer: Any) -> None:
        fresh = await pools.reopen(writer)
        assert _shown(writer) == _shown(fresh)
        # A persisted copy's header too: its version, size and base_seq are the stored ones.
        assert getattr(writer, "_header", None) == getattr(fresh, "_header", None)

    @pytest.mark.parametrize(("limit", "branched"), [(None, False), (5, False), (None, True), (4, True)])
    async def test_stale_pool_writers_apply_the_others_changes(
        self, pools: PoolFactory, limit: int | None, branched: bool
    ) -> None:
        rng = random.Random(f"{limit}-{branched}")
        root = await pools.pool(limit)
        for i in range(3):
            await root.add(ContextItem(f"seed {i}", f"seed {i}", f"k{i}"))
        first = await pools.branch(root) if branched else root
        writers = [first] + [await pools.reopen(first) for _ in range(2)]
        for step in range(40):
            w = rng.choice(writers)
            keys = [i.id for i in w.items]
            op = rng.random()
            if op < 0.25 and keys:
                key = rng.choice(keys)
                try:
                    await w.remove(key)
                except KeyError:  # another writer removed it first: the copy is read again
                    assert key not in w
            elif op < 0.5 and keys:
                key = rng.choice(keys)  # a replacement: the key keeps its place
                await w.add(ContextItem(f"new {step}", f"replaced at {step}", key))
            elif op < 0.53:
                await w.clear()
            else:
                key = f"k{rng.randrange(12)}"  # often new, sometimes one removed before: added anew
                await w.add(ContextItem(f"v {step}", f"added at {step}", key))
            await self._same_as_stored(pools, w)

    @pytest.mark.parametrize("branched", [False, True])
    async def test_stale_queue_writers_apply_the_others_appends(
        self, pools: PoolFactory, branched: bool
    ) -> None:
        rng = random.Random(f"queue-{branched}")
        root = await pools.queue(6)
        await root.append(*(ContextItem(f"seed {i}") for i in range(4)))
        first = await pools.branch(root) if branched else root
        writers = [first] + [await pools.reopen(first) for _ in range(2)]
        for step in range(30):
            w = rng.choice(writers)
            if rng.random() < 0.05:
                await w.clear()
            else:
                await w.append(*(ContextItem(f"{step}.{n}") for n in range(rng.randrange(1, 9))))
            await self._same_as_stored(pools, w)

    async def test_new_keys_whose_first_entry_was_replaced_keep_their_order(self, pools: PoolFactory) -> None:
        """Another writer adds x then y, then replaces x (its first entry is deleted): the stale
        writer reads y's entry before x's replacement, and must still place x before y."""
        a = await pools.pool()
        await a.add(ContextItem("a", "a", "a"))
        b = await pools.reopen(a)
        await b.add(ContextItem("x1", "x", "x"))
        await b.add(ContextItem("y", "y", "y"))
        await b.add(ContextItem("x2", "x again", "x"))
        await a.add(ContextItem("z", "z", "z"))
        assert [i.id for i in a.items] == ["a", "x", "y", "z"]
        assert a.get("x").content == "x2"
        await self._same_as_stored(pools, a)
