"""The expiry contract (:mod:`axio_context.expiry`) of the vector, blob and task stores: an expired item
is never returned, even before a sweep; a sweep deletes it; a bad TTL writes nothing."""

from __future__ import annotations

import asyncio
import math
from typing import Any, Protocol

import pytest

from ...expiry import InvalidTTLError, TTLConfig
from ..errors import BlobNotFoundError
from ..vectors import Document

__all__ = ["ExpiringFactory", "ExpiryContract"]

#: A TTL that is over by the time the test reads (seconds), and the wait that outlasts it.
SHORT = 0.001
PAST = 0.02
#: The TTL of the refresh test (seconds): long enough that a loaded machine keeps its margins.
REFRESHED = 2.0
#: Bad TTLs: each is refused with a one-line error naming it.
BAD_TTLS: tuple[object, ...] = (-1, 0, 0.0, math.nan, math.inf, 101 * 366 * 86400, True, "60")


class ExpiringFactory(Protocol):
    """Fresh stores of one backend with an expiry (each call may share one database)."""

    async def vectors(self, ttl: TTLConfig) -> Any:
        """A vector store with ``ttl`` and no embedder."""
        ...

    async def blobs(self, ttl: TTLConfig) -> Any:
        """A blob store with ``ttl`` (it has ``count_expired`` and ``sweep_expired``)."""
        ...

    async def tasks(self, ttl: TTLConfig) -> Any:
        """A task store with ``ttl``."""
        ...


class ExpiryContract:
    """What every store with a TTL does; subclass it and provide ``expiring``."""

    @pytest.fixture
    def expiring(self) -> ExpiringFactory:
        raise NotImplementedError("provide an `expiring` fixture returning an ExpiringFactory")

    async def test_expired_document_is_never_returned_before_a_sweep(self, expiring: ExpiringFactory) -> None:
        store = await expiring.vectors(TTLConfig())
        await store.add([Document("gone", "old", [1.0, 0.0], {"k": 1})], collection="kb", ttl=SHORT)
        await store.add([Document("kept", "new", [0.9, 0.1], {"k": 1})], collection="kb", ttl=3600)
        await store.upsert([Document("far", "far", [0.0, 1.0])], collection="kb")
        await asyncio.sleep(PAST)
        assert [d.id for d in await store.get(["gone", "kept", "far"], collection="kb")] == ["kept", "far"]
        hits = await store.search([1.0, 0.0], collection="kb", limit=2)
        assert [h.id for h in hits] == ["kept", "far"]  # still two hits: the expired one is skipped
        assert [h.id for h in await store.search([1.0, 0.0], collection="kb", filter={"k": 1})] == ["kept"]
        assert [d.id for d in await store.documents("kb")] == ["far", "kept"]
        assert [(c.name, c.documents) for c in await store.list_collections()] == [("kb", 2)]
        assert await store.count_expired() == 1
        assert await store.delete(["gone"], collection="kb") == 1  # the row was still there
        await store.upsert([Document("again", "a", [1.0, 0.0])], collection="kb", ttl=SHORT)
        await asyncio.sleep(PAST)
        await store.add([Document("again", "fresh", [1.0, 0.0])], collection="kb")  # absent to add
        assert [d.content for d in await store.get(["again"], collection="kb")] == ["fresh"]
        await store.add([Document("old", "o", [0.5, 0.5])], collection="kb", ttl=SHORT)
        await asyncio.sleep(PAST)
        assert await store.count_expired() == 1
        assert await store.sweep_expired() == 1
        assert await store.count_expired() == 0
        hits = await store.search([0.5, 0.5], collection="kb", limit=9)
        assert sorted(h.id for h in hits) == ["again", "far", "kept"]

    async def test_expired_blob_is_never_returned_before_a_sweep(self, expiring: ExpiringFactory) -> None:
        store = await expiring.blobs(TTLConfig())
        await store.upload("gone", b"old bytes", ttl=SHORT)
        await store.upload("kept", b"kept bytes", ttl=3600)
        await store.upload("forever", b"x")
        await asyncio.sleep(PAST)
        assert await store.stat("gone") is None
        with pytest.raises(BlobNotFoundError, match="'gone'"):
            await store.download("gone")
        with pytest.raises(BlobNotFoundError, match="'gone'"):
            [chunk async for chunk in store.download_stream("gone")]
        with pytest.raises(BlobNotFoundError, match="'gone'"):
            await store.presign_url("gone")
        assert [i.key for i in await store.list_keys()] == ["forever", "kept"]
        assert [i.key for i in await store.list_keys("g")] == []
        assert await store.count_expired() == 1
        assert await store.delete("gone") is False  # it was not there to a reader
        assert await store.count_expired() == 0

    async def test_blob_default_ttl_none_and_replacement(self, expiring: ExpiringFactory) -> None:
        store = await expiring.blobs(TTLConfig(default_ttl=SHORT))
        await store.upload("default", b"a")
        await store.upload("never", b"b", ttl=None)
        await store.upload("renewed", b"c")
        await store.upload("renewed", b"c2", ttl=3600)  # a write sets the key's TTL afresh
        await asyncio.sleep(PAST)
        assert [i.key for i in await store.list_keys()] == ["never", "renewed"]
        assert await store.download("renewed") == (b"c2", "application/octet-stream")
        await store.upload("default", b"again", ttl=None)  # an expired key written again is live
        assert await store.download("default") == (b"again", "application/octet-stream")

    async def test_sweep_deletes_expired_blobs_keeping_shared_bytes(self, expiring: ExpiringFactory) -> None:
        store = await expiring.blobs(TTLConfig())
        await store.upload("a", b"shared", ttl=SHORT)
        await store.upload("b", b"shared")
        await store.upload("c", b"alone", ttl=SHORT)
        await asyncio.sleep(PAST)
        assert await store.count_expired() == 2
        assert await store.sweep_expired() == 2
        assert await store.count_expired() == 0
        assert await store.sweep_expired() == 0
        assert await store.download("b") == (b"shared", "application/octet-stream")
        await store.upload("c", b"alone")  # the freed bytes are stored again
        assert await store.download("c") == (b"alone", "application/octet-stream")

    async def test_a_sweep_runs_in_batches(self, expiring: ExpiringFactory) -> None:
        blobs = await expiring.blobs(TTLConfig(default_ttl=SHORT))
        tasks = await expiring.tasks(TTLConfig(default_ttl=SHORT))
        vectors = await expiring.vectors(TTLConfig(default_ttl=SHORT))
        for i in range(5):
            await blobs.upload(f"k{i}", bytes([i]))
            await tasks.create_task_list(f"c{i}", ["t"])
            await vectors.add([Document(f"d{i}", "x", [1.0, float(i)])])
        await asyncio.sleep(PAST)
        for store in (blobs, tasks, vectors):
            assert await store.count_expired() == 5
            assert await store.sweep_expired(batch=2) == 5  # three transactions: 2, 2, 1
            assert await store.count_expired() == 0

    async def test_expired_board_is_never_returned_before_a_sweep(self, expiring: ExpiringFactory) -> None:
        store = await expiring.tasks(TTLConfig())
        gone = await store.create_task_list("conv", ["one", "two"], ttl=SHORT)
        kept = await store.create_task_list("conv", ["three"], agent_id="helper", ttl=3600)
        await asyncio.sleep(PAST)
        task = gone.tasks[0].id
        assert await store.get_task_list(gone.id) is None
        assert [b.id for b in await store.get_boards_by_conversation("conv")] == [kept.id]
        assert (await store.get_by_conversation("conv")).id == kept.id
        assert [b.id for b in await store.list_task_lists()] == [kept.id]
        assert await store.add_tasks(gone.id, ["more"]) == []
        assert await store.update_status(gone.id, task, "in_progress") is None
        assert await store.increment_retry(gone.id, task) is None
        assert await store.update_task_title(gone.id, task, "renamed") is None
        assert await store.delete_task(gone.id, task) is False
        assert await store.count_expired() == 1
        assert await store.sweep_expired() == 1
        assert await store.count_expired() == 0
        assert [b.id for b in await store.list_task_lists()] == [kept.id]

    async def test_board_default_ttl_and_a_new_board_for_the_key(self, expiring: ExpiringFactory) -> None:
        store = await expiring.tasks(TTLConfig(default_ttl=SHORT))
        await store.create_task_list("conv", ["old"])
        kept = await store.create_task_list("other", ["x"], ttl=None)
        await asyncio.sleep(PAST)
        assert await store.get_by_conversation("conv") is None
        new = await store.create_task_list("conv", ["new"], ttl=None)
        assert [t.title for t in (await store.get_by_conversation("conv")).tasks] == ["new"]
        assert {b.id for b in await store.list_task_lists()} == {new.id, kept.id}
        assert await store.count_expired() == 0  # replacing the key deleted the expired board

    async def test_refresh_on_read(self, expiring: ExpiringFactory) -> None:
        # Every store at once, so the waits are paid once; margins of 0.8 s on either side keep
        # it true on a loaded machine: written at 0, read (refreshed) at ~1.2, checked at ~2.4,
        # past the 2 s of what was not read and before the refreshed 2 s run out.
        config = TTLConfig(default_ttl=REFRESHED, refresh_on_read=True)
        vectors = await expiring.vectors(config)
        blobs = await expiring.blobs(config)
        tasks = await expiring.tasks(config)
        await vectors.add([Document("read", "r", [1.0, 0.0]), Document("unread", "u", [0.0, 1.0])])
        await vectors.add([Document("never", "n", [0.7, 0.7])], ttl=None)
        for key in ("read", "unread", "peeked"):
            await blobs.upload(key, key.encode())
        board = await tasks.create_task_list("read", ["a"])
        await tasks.create_task_list("unread", ["b"])
        await asyncio.sleep(REFRESHED * 0.6)
        assert [d.id for d in await vectors.get(["read"])] == ["read"]  # restarts its TTL
        assert await blobs.stat("read") is not None  # restarts its TTL
        assert await blobs.stat("peeked", refresh_ttl=False) is not None  # does not
        assert await tasks.get_task_list(board.id) is not None  # restarts its TTL
        await asyncio.sleep(REFRESHED * 0.6)
        assert [d.id for d in await vectors.documents()] == ["never", "read"]
        assert [i.key for i in await blobs.list_keys()] == ["read"]
        assert [b.conversation_id for b in await tasks.list_task_lists()] == ["read"]

    @pytest.mark.parametrize("bad", BAD_TTLS, ids=repr)
    async def test_bad_ttl_is_refused_and_nothing_written(
        self, expiring: ExpiringFactory, bad: object
    ) -> None:
        blobs = await expiring.blobs(TTLConfig())
        with pytest.raises(InvalidTTLError, match=r"^ttl is a number of seconds"):
            await blobs.upload("k", b"data", ttl=bad)
        assert await blobs.stat("k") is None
        tasks = await expiring.tasks(TTLConfig())
        with pytest.raises(InvalidTTLError, match=r"^ttl is a number of seconds"):
            await tasks.create_task_list("conv", ["t"], ttl=bad)
        assert await tasks.list_task_lists() == []
        vectors = await expiring.vectors(TTLConfig())
        with pytest.raises(InvalidTTLError, match=r"^ttl is a number of seconds"):
            await vectors.upsert([Document("d", "x", [1.0])], ttl=bad)
        assert await vectors.list_collections() == []
        with pytest.raises(InvalidTTLError, match=r"^default_ttl is a number of seconds"):
            TTLConfig(default_ttl=bad)  # type: ignore[arg-type]
