"""The expiry contract of persisted context pools (:mod:`axio_context.pools.sql.expiry`): an
expired item removes its key (what it replaced stays hidden), for every branch and every copy;
a sweep changes nothing any pool shows; a refresh restarts a TTL; a bad TTL writes nothing."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping
from typing import Any, Protocol

import pytest

from ...expiry import InvalidTTLError, TTLConfig
from ...memory.testing.expiry import BAD_TTLS, PAST, REFRESHED, SHORT
from ..items import ContextItem
from .factory import PoolFactory

__all__ = ["ExpiringPoolFactory", "PoolExpiryContract"]


class ExpiringPoolFactory(PoolFactory, Protocol):
    """A :class:`PoolFactory` whose pools take a ``ttl``."""

    async def expiring_pool(self, ttl: TTLConfig, limit: int | None = None) -> Any:
        """A fresh persisted pool with ``ttl`` (and ``limit``)."""
        ...

    async def expiring_from_dict(self, data: Mapping[str, Any], ttl: TTLConfig) -> Any:
        """A fresh persisted pool stored from ``to_dict``'s ``data``, with ``ttl``."""
        ...


def _item(key: str, content: Any = None) -> ContextItem[Any]:
    return ContextItem(content if content is not None else key, f"about {key}", key)


def _seen(p: Any) -> list[tuple[Any, Any]]:
    return [(i.id, i.content) for i in p.items]


class PoolExpiryContract:
    """What every persisted pool with a TTL does; subclass it and provide ``pools``."""

    @pytest.fixture
    def pools(self) -> ExpiringPoolFactory:
        raise NotImplementedError("provide a `pools` fixture returning an ExpiringPoolFactory")

    async def test_an_expired_item_removes_its_key_not_revealing_what_it_replaced(
        self, pools: ExpiringPoolFactory
    ) -> None:
        parent = await pools.expiring_pool(TTLConfig())
        await parent.add(_item("a", "old"))
        await parent.add(_item("b"))
        child = await pools.branch(parent)
        await child.add(_item("a", "new"), ttl=SHORT)  # hides the parent's "old" in the child
        await parent.add(_item("b", "b2"), ttl=SHORT)  # the child keeps the "b" it branched with
        await asyncio.sleep(PAST)
        assert _seen(child) == [("b", "b")] and "a" not in child and len(child) == 1
        with pytest.raises(KeyError):
            child.get("a")
        with pytest.raises(KeyError):
            await child.remove("a")
        assert child.catalogue() == "- [b] about b"
        assert _seen(parent) == [("a", "old")]
        assert [i.id for i in await child.select("about a b", 5)] == ["b"]
        for handle in (await pools.reopen(child), await pools.reopen(parent)):
            assert _seen(handle) == _seen(child if handle.name == child.name else parent)
        shown = await pools.shown(child)
        assert b'"new"' not in shown and b'"old"' not in shown

    async def test_a_key_added_again_after_it_expired_goes_last(self, pools: ExpiringPoolFactory) -> None:
        p = await pools.expiring_pool(TTLConfig(default_ttl=SHORT))
        await p.add(_item("a"))
        await p.add(_item("b"), ttl=None)
        await asyncio.sleep(PAST)
        await p.add(_item("a", "again"), ttl=3600)
        assert _seen(p) == [("b", "b"), ("a", "again")]
        assert _seen(await pools.reopen(p)) == _seen(p)

    async def test_a_full_pool_counts_only_live_items(self, pools: ExpiringPoolFactory) -> None:
        p = await pools.expiring_pool(TTLConfig(), limit=2)
        await p.add(_item("a"), ttl=SHORT)
        await p.add(_item("b"))
        await asyncio.sleep(PAST)
        await p.add(_item("c"))  # "a" expired: a free place, nothing evicted
        assert _seen(p) == [("b", "b"), ("c", "c")]
        await p.add(_item("d"))  # now full: the oldest live item goes
        assert _seen(p) == [("c", "c"), ("d", "d")]
        assert _seen(await pools.reopen(p)) == _seen(p)

    async def test_a_sweep_changes_nothing_any_branch_shows(self, pools: ExpiringPoolFactory) -> None:
        root = await pools.expiring_pool(TTLConfig())
        await root.add(_item("k", "v1"))
        early = await pools.branch(root)  # sees v1
        await root.add(_item("k", "v2"), ttl=SHORT)  # v1 kept for `early`
        await root.add(_item("t"), ttl=SHORT)
        await root.add(_item("keep"))
        late = await pools.branch(root)  # sees v2 and t
        await late.add(_item("own"), ttl=SHORT)
        grand = await pools.branch(late, limit=None)
        await asyncio.sleep(PAST)
        family = [root, early, late, grand]
        before = [_seen(await pools.reopen(p)) for p in family]
        assert before == [[("keep", "keep")], [("k", "v1")], [("keep", "keep")], [("keep", "keep")]]
        assert await root.count_expired() == 3
        assert await root.sweep_expired(batch=2) == 3
        assert await root.count_expired() == 0
        assert [_seen(await pools.reopen(p)) for p in family] == before
        assert [_seen(p) for p in family] == before
        for p in family:
            await p.refresh()
            assert len(p) == len(_seen(p))
        await grand.add(_item("k", "g"))
        await early.add(_item("x"))
        assert _seen(await pools.reopen(grand)) == [("keep", "keep"), ("k", "g")]
        assert _seen(await pools.reopen(early)) == [("k", "v1"), ("x", "x")]
        assert await root.sweep_expired() == 0

    async def test_a_sweep_after_mixed_changes_keeps_every_view_and_size(
        self, pools: ExpiringPoolFactory
    ) -> None:
        rnd = random.Random(33)
        family = [await pools.expiring_pool(TTLConfig())]
        for step in range(60):
            p = rnd.choice(family)
            key, op = f"k{rnd.randrange(6)}", rnd.random()
            if op < 0.1 and len(family) < 5:
                family.append(await pools.branch(p))
            elif op < 0.25 and key in p:
                await p.remove(key)
            else:
                await p.add(_item(key, step), ttl=rnd.choice([SHORT, None, 3600]))
        await asyncio.sleep(PAST)
        before = [_seen(p) for p in family]
        assert [_seen(await pools.reopen(p)) for p in family] == before
        due = await family[0].count_expired()
        assert due > 0 and await family[0].sweep_expired(batch=3) == due
        assert await family[0].count_expired() == 0
        assert [_seen(await pools.reopen(p)) for p in family] == before
        for p, seen in zip(family, before, strict=True):
            await p.refresh()
            shown = json.loads(await pools.shown(p))  # after a sweep: the stored size, exact
            assert (_seen(p), shown["info"]["size"]) == (seen, len(seen))

    async def test_another_handles_copy_follows_expiry_and_the_sweep(
        self, pools: ExpiringPoolFactory
    ) -> None:
        p = await pools.expiring_pool(TTLConfig())
        await p.add(_item("gone"), ttl=SHORT)
        await p.add(_item("kept"))
        other = await pools.reopen(p)  # as another process holds it
        await asyncio.sleep(PAST)
        assert _seen(other) == [("kept", "kept")]  # by its copy's clock, no database read
        assert await p.sweep_expired() == 1
        assert await other.refresh()  # the sweep moved the pool's version
        assert _seen(other) == [("kept", "kept")]
        await other.add(_item("new"))
        await p.add(_item("mine"))  # a stale writer catching up after the sweep
        assert _seen(p) == [("kept", "kept"), ("new", "new"), ("mine", "mine")]
        await other.refresh()
        assert _seen(other) == _seen(p)

    async def test_a_stale_writer_learns_the_others_ttls(self, pools: ExpiringPoolFactory) -> None:
        p = await pools.expiring_pool(TTLConfig())
        await p.add(_item("first"))  # its copy now knows the log up to this entry
        other = await pools.reopen(p)
        await other.add(_item("brief"), ttl=SHORT)
        await other.add(_item("long"), ttl=3600)
        await p.add(_item("mine"))  # stale: reads what `other` wrote since, TTLs included
        await asyncio.sleep(PAST)
        assert _seen(p) == [("first", "first"), ("long", "long"), ("mine", "mine")]
        await p.touch("long", "brief", "first", "absent")  # only "long" has a TTL and is live
        assert await other.refresh()
        assert _seen(other) == _seen(p)
        await p.touch("first", "absent")  # nothing to restart: nothing written
        assert not await other.refresh()

    async def test_refresh_on_read_restarts_what_select_returns(self, pools: ExpiringPoolFactory) -> None:
        # Margins of 0.8 s on either side: written at 0, read at ~1.2, checked at ~2.4.
        p = await pools.expiring_pool(TTLConfig(default_ttl=REFRESHED, refresh_on_read=True))
        await p.add(_item("read"))
        await p.add(_item("unread"))
        await p.add(_item("peeked"))
        await p.add(_item("never"), ttl=None)
        child = await pools.branch(p)
        await asyncio.sleep(REFRESHED * 0.6)
        assert [i.id for i in await p.select("read", 1)] == ["read"]  # restarts its TTL
        assert [i.id for i in await p.select("peeked", 1, refresh_ttl=False)] == ["peeked"]
        await asyncio.sleep(REFRESHED * 0.6)
        assert _seen(p) == [("read", "read"), ("never", "never")]
        assert _seen(await pools.reopen(p)) == _seen(p)
        assert _seen(child) == [("never", "never")]  # its own entries' expiry: not refreshed here

    async def test_from_dict_gives_its_items_the_pools_default(self, pools: ExpiringPoolFactory) -> None:
        data: dict[str, Any] = {"limit": None, "items": [_item("a").to_dict()], "hooks": {}, "tags": []}
        p = await pools.expiring_from_dict(data, TTLConfig(default_ttl=SHORT))
        kept = await pools.expiring_from_dict(data, TTLConfig())
        await asyncio.sleep(PAST)
        assert (len(p), len(await pools.reopen(p)), await p.count_expired()) == (0, 0, 1)
        assert _seen(kept) == [("a", "a")]
        with pytest.raises(TypeError, match="TTLConfig"):
            await pools.expiring_pool(60)  # type: ignore[arg-type]  # seconds are not a config

    @pytest.mark.parametrize("bad", BAD_TTLS, ids=repr)
    async def test_a_bad_ttl_is_one_line_and_writes_nothing(
        self, pools: ExpiringPoolFactory, bad: object
    ) -> None:
        p = await pools.expiring_pool(TTLConfig())
        with pytest.raises(InvalidTTLError) as caught:
            await p.add(_item("a"), ttl=bad)
        assert "\n" not in str(caught.value) and "ttl" in str(caught.value)
        assert len(p) == 0 and len(await pools.reopen(p)) == 0
