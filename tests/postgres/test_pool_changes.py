"""Writers sharing one queue or pool: a writer whose copy is stale reads back only the other
writers' changes (``axio_context.pools.sql.changes``), and its copy must then equal the
container read whole. Seeded random interleavings of adds, replacements, removals (with and
without a removal entry: a branch writes one, a root pool does not), evictions and clears."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from axio_context.pools import ContextItem
from axio_context_postgres import Pool
from axio_context_postgres.pools import PostgresContextPool, PostgresContextQueue

_names = (f"changes{n}" for n in itertools.count())


def _shown(container: Any) -> list[tuple[Any, ...]]:
    return [(i.id, i.description, i.content) for i in container.items]


async def _same_as_stored(writer: Any, kind: type[Any], pool: Pool) -> None:
    fresh = await kind.open(pool, writer.name)
    assert _shown(writer) == _shown(fresh)
    assert writer._header == fresh._header  # version, size and base_seq too


@pytest.mark.parametrize(("limit", "branched"), [(None, False), (5, False), (None, True), (4, True)])
async def test_stale_pool_writers_apply_the_others_changes(
    pool: Pool, limit: int | None, branched: bool
) -> None:
    rng = random.Random(f"{limit}-{branched}")
    root = await PostgresContextPool.open(pool, next(_names), limit)
    for i in range(3):
        await root.add(ContextItem(f"seed {i}", f"seed {i}", f"k{i}"))
    first = await root.branch(name=next(_names)) if branched else root
    writers = [first] + [await PostgresContextPool.open(pool, first.name) for _ in range(2)]
    for step in range(60):
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
        await _same_as_stored(w, PostgresContextPool, pool)


@pytest.mark.parametrize("branched", [False, True])
async def test_stale_queue_writers_apply_the_others_appends(pool: Pool, branched: bool) -> None:
    rng = random.Random(f"queue-{branched}")
    root = await PostgresContextQueue.open(pool, next(_names), 6)
    await root.append(*(ContextItem(f"seed {i}") for i in range(4)))
    first = await root.branch(name=next(_names)) if branched else root
    writers = [first] + [await PostgresContextQueue.open(pool, first.name) for _ in range(2)]
    for step in range(50):
        w = rng.choice(writers)
        if rng.random() < 0.05:
            await w.clear()
        else:
            await w.append(*(ContextItem(f"{step}.{n}") for n in range(rng.randrange(1, 9))))
        await _same_as_stored(w, PostgresContextQueue, pool)


async def test_new_keys_whose_first_entry_was_replaced_keep_their_order(pool: Pool) -> None:
    """Another writer adds x then y, then replaces x (its first entry is deleted): the stale
    writer reads y's entry before x's replacement, and must still place x before y."""
    a = await PostgresContextPool.open(pool, next(_names))
    await a.add(ContextItem("a", "a", "a"))
    b = await PostgresContextPool.open(pool, a.name)
    await b.add(ContextItem("x1", "x", "x"))
    await b.add(ContextItem("y", "y", "y"))
    await b.add(ContextItem("x2", "x again", "x"))
    await a.add(ContextItem("z", "z", "z"))
    assert [i.id for i in a.items] == ["a", "x", "y", "z"]
    assert a.get("x").content == "x2"
    await _same_as_stored(a, PostgresContextPool, pool)
