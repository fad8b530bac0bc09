"""Sessions with a TTL on every backend, from the library's fixture: an expired session is never
listed, shown, resolved, searched or browsed, even before a sweep; a store reads it as absent and
a write starts it afresh; a fork keeps its rows; refresh on read; the sweep; bad TTLs."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from axio_context import TextBlock
from axio_context.backends.registry import open_database
from axio_context.errors import SessionNotFoundError
from axio_context.expiry import InvalidTTLError, TTLConfig
from axio_context.messages import Message
from axio_context.testing.backends import BackendUnderTest
from axio_context_postgres import PostgresContextStore
from axio_context_sqlite import SQLiteContextStore

#: Long enough to write and check a session before it expires, on a loaded machine.
LONG = 3600.0
#: What a test waits past a short TTL.
PAST = 0.3


def store_on(
    b: BackendUnderTest, session_id: str, ttl: float | TTLConfig | None = None
) -> SQLiteContextStore | PostgresContextStore:
    """A session store on the test's database, with ``ttl``."""
    if b.name == "sqlite":
        return SQLiteContextStore(b.handle, session_id, project="p", ttl=ttl)
    return PostgresContextStore(b.handle, session_id, project="p", ttl=ttl)


def said(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


async def _expire(b: BackendUnderTest, session_id: str) -> None:
    """Give the session a TTL so short it is gone when this returns (a write restarts it)."""
    await store_on(b, session_id, ttl=0.01).set_title("going")
    await asyncio.sleep(PAST)


async def test_an_expired_session_is_invisible_before_any_sweep(axio_backend: BackendUnderTest) -> None:
    b = axio_backend
    old = store_on(b, "old-session")
    await old.append(said("the kiwi plan"))
    fork = await old.fork()  # a store without a TTL: the fork keeps none
    await fork.append(said("the fork's own kiwi"))
    keep = store_on(b, "kept", ttl=LONG)
    await keep.append(said("a kiwi to keep"))
    await _expire(b, "old-session")

    assert [i.session_id for i in await keep.list_sessions()] == ["kept", fork.session_id]
    async with open_database(b.where) as db:
        assert (await db.memory_stores().expiry().count_expired()).sessions == 1
        assert {i.session_id for i in (await db.list_sessions()).sessions} == {"kept", fork.session_id}
        with pytest.raises(SessionNotFoundError):
            await db.resolve("old-")
        with pytest.raises(SessionNotFoundError):
            await db.show("old-session")
        found = await db.search("kiwi", mode="keyword")
        assert "old-session" not in {h.session_id for h in found.hits}
        assert "kept" in {h.session_id for h in found.hits}
        roots = await db.lineage_tree()
        assert {n.info.session_id for n in roots} == {"kept", fork.session_id}  # the fork heads its own
        page = await db.browser().session_tree(limit=10)
        assert {r.info.session_id for r in page.rows} == {"kept", fork.session_id}
        exported: list[bytes] = []
        await db.export(exported.append)
        assert {s["id"] for s in json.loads(b"".join(exported))["sessions"]} == {"kept", fork.session_id}

    # a store reads it as absent (and deletes it: nothing is left for a sweep)
    assert await old.get_history() == []
    assert await old.get_full_history() == []
    assert await old.get_context_tokens() == (0, 0)
    assert await old.get_title() is None
    with pytest.raises(SessionNotFoundError):
        await old.info()
    # the fork keeps its view, the expired parent's prefix included
    texts = [m.content[0].text for m in await fork.get_history()]  # type: ignore[union-attr]
    assert texts == ["the kiwi plan", "the fork's own kiwi"]
    async with open_database(b.where) as db:
        assert (await db.memory_stores().expiry().count_expired()).sessions == 0


async def test_the_sweep_deletes_expired_sessions_and_forks_keep_their_rows(
    axio_backend: BackendUnderTest,
) -> None:
    b = axio_backend
    old = store_on(b, "old", ttl=LONG)
    await old.append(said("one"))
    fork = await store_on(b, "old").fork()  # no TTL of its own
    for n in range(3):
        await store_on(b, f"gone-{n}", ttl=LONG).append(said("x"))
        await _expire(b, f"gone-{n}")
    await _expire(b, "old")
    async with open_database(b.where) as db:
        expiry = db.memory_stores().expiry()
        assert (await expiry.count_expired()).sessions == 4
        assert (await expiry.sweep_expired()).sessions == 4
        assert (await expiry.count_expired()).total == 0
        assert [i.session_id for i in (await db.list_sessions()).sessions] == [fork.session_id]
    assert [m.content[0].text for m in await fork.get_history()] == ["one"]  # type: ignore[union-attr]


async def test_a_write_to_an_expired_session_starts_it_afresh(axio_backend: BackendUnderTest) -> None:
    b = axio_backend
    store = store_on(b, "s", ttl=LONG)
    await store.append(said("before"))
    await store.set_context_tokens(5, 7)
    await _expire(b, "s")
    await store.append(said("after"))  # as a Redis session's key, gone at expiry, is made anew
    assert [m.content[0].text for m in await store.get_history()] == ["after"]  # type: ignore[union-attr]
    assert await store.get_context_tokens() == (0, 0)
    async with open_database(b.where) as db:
        assert (await db.memory_stores().expiry().count_expired()).sessions == 0
        assert [i.session_id for i in (await db.list_sessions()).sessions] == ["s"]  # LONG again
    # a store without a TTL (one plain message: the single-statement append) starts it afresh too
    await _expire(b, "s")
    plain = store_on(b, "s")
    await plain.append(said("plain"))
    await plain.append_many([said("two"), said("three")])
    assert [m.content[0].text for m in await plain.get_history()] == ["plain", "two", "three"]  # type: ignore[union-attr]
    await _expire(b, "s")
    await plain.append_many([said("a"), said("batch")])  # the batch statements refuse it as well
    assert [m.content[0].text for m in await plain.get_history()] == ["a", "batch"]  # type: ignore[union-attr]


async def test_refresh_on_read_keeps_a_session(axio_backend: BackendUnderTest) -> None:
    # 2 s TTL, reads 0.8 s either side of it (as the memory stores' refresh test)
    b = axio_backend
    refreshing = store_on(b, "r", ttl=TTLConfig(default_ttl=2.0, refresh_on_read=True))
    plain = store_on(b, "p", ttl=2.0)
    await refreshing.append(said("r"))
    await plain.append(said("p"))
    await asyncio.sleep(1.2)
    assert len(await refreshing.get_history()) == 1  # restarts its TTL
    assert len(await plain.get_history()) == 1  # does not
    await asyncio.sleep(1.2)
    assert len(await refreshing.get_history()) == 1
    assert await plain.get_history() == []


@pytest.mark.parametrize("bad", [-5, 0, math.nan, math.inf, 200 * 365 * 86400, "60", True])
async def test_a_bad_ttl_is_refused(axio_backend: BackendUnderTest, bad: object) -> None:
    with pytest.raises(InvalidTTLError, match="ttl"):
        store_on(axio_backend, "x", ttl=bad)  # type: ignore[arg-type]


async def test_an_expired_fork_is_not_among_its_parents_forks(axio_backend: BackendUnderTest) -> None:
    b = axio_backend
    parent = store_on(b, "parent")
    await parent.append(said("x"))
    kept = await parent.fork()
    going = await parent.fork()
    await store_on(b, going.session_id, ttl=0.01).set_title("going")
    await asyncio.sleep(PAST)
    assert [f.session_id for f in await parent.list_forks()] == [kept.session_id]


async def test_stats_totals_count_live_sessions_only(axio_backend: BackendUnderTest) -> None:
    """``stats``' totals leave an expired session out before a sweep (its ``expired`` line says
    it is due); a fork of it counts its whole transcript, as once its parent is swept."""
    b = axio_backend
    old = store_on(b, "old")
    await old.append(said("one"))
    await old.append(said("two"))
    fork = await old.fork()
    await fork.append(said("three"))
    await store_on(b, "kept").append(said("kept"))
    async with open_database(b.where) as db:
        before = await db.stats()
    assert (before.sessions, before.messages) == (3, 2 + 3 + 1)
    await _expire(b, "old")
    async with open_database(b.where) as db:
        after = await db.stats()
        assert (await db.memory_stores().expiry().count_expired()).sessions == 1
    assert (after.sessions, after.messages) == (2, 3 + 1)
    assert sum(p.sessions for p in after.by_project) == 2
