"""The :class:`~axio_context.memory.VectorStore` contract."""

from __future__ import annotations

import math

import pytest

from ..errors import (
    DimensionMismatchError,
    EmbedderMismatchError,
    FilterError,
    InvalidEmbeddingError,
    MissingEmbeddingError,
)
from ..vectors import Document, VectorStore
from .factory import MemoryFactory, TinyEmbedder

__all__ = ["VectorStoreContract"]


def _doc(i: str, vec: list[float], **meta: object) -> Document:
    return Document(i, f"text {i}", vec, dict(meta))


async def _ids(store: VectorStore, query: list[float], **kw: object) -> list[str]:
    return [r.id for r in await store.search(query, **kw)]  # type: ignore[arg-type]


class VectorStoreContract:
    """What every vector store does; subclass it and provide ``memory``."""

    @pytest.fixture
    def memory(self) -> MemoryFactory:
        raise NotImplementedError("provide a `memory` fixture returning a MemoryFactory")

    async def test_add_inserts_and_keeps_existing(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        assert await store.add([_doc("a", [1, 0, 0], v=1)]) == ["a"]
        assert await store.add([_doc("a", [0, 1, 0], v=2), _doc("b", [0, 1, 0])]) == ["a", "b"]
        [a] = await store.get(["a"])
        assert a.metadata == {"v": 1}
        assert a.embedding == [1.0, 0.0, 0.0]
        assert a.content == "text a"

    async def test_upsert_replaces(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0, 0], v=1)])
        await store.upsert([Document("a", "new", [0, 1, 0], {"v": 2})])
        [a] = await store.get(["a"])
        assert (a.content, a.embedding, a.metadata) == ("new", [0.0, 1.0, 0.0], {"v": 2})
        assert await _ids(store, [0, 1, 0], limit=1) == ["a"]

    async def test_get_keeps_order_and_skips_missing(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0]), _doc("b", [0, 1])])
        assert [d.id for d in await store.get(["b", "zz", "a"])] == ["b", "a"]
        assert await store.get(["a"], collection="elsewhere") == []

    async def test_delete_counts_and_forgets(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0]), _doc("b", [0, 1])])
        assert await store.delete(["a", "a", "missing"]) == 1
        assert await _ids(store, [1, 0]) == ["b"]
        assert await store.delete(["a"], collection="nothing") == 0

    async def test_search_ranks_by_cosine(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("x", [1, 0]), _doc("y", [1, 1]), _doc("z", [0, 1]), _doc("w", [-1, 0])])
        hits = await store.search([2, 0.1], limit=3)
        assert [h.id for h in hits] == ["x", "y", "z"]
        assert hits[0].score == pytest.approx(2 / math.hypot(2, 0.1), abs=1e-5)
        assert hits[0].content == "text x"
        assert hits[0].score >= hits[1].score >= hits[2].score
        assert await store.search([1, 0], limit=0) == []
        assert await store.search([1, 0], collection="empty") == []

    async def test_ties_break_by_id(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc(i, [1, 0]) for i in ("c", "a", "b")])
        assert await _ids(store, [1, 0]) == ["a", "b", "c"]

    async def test_missing_embedding_is_embedded(self, memory: MemoryFactory) -> None:
        embedder = TinyEmbedder()
        store = await memory.vectors(embedder)
        await store.add([Document("1", "aaa"), Document("2", "bbb"), Document("3", "x", [0, 0, 1, 0])])
        [one] = await store.get(["1"])
        assert one.embedding == [3.0, 0.0, 0.0, 0.0]
        assert await _ids(store, [0, 1, 0, 0], limit=1) == ["2"]
        assert [h.id for h in await store.search_text("b", limit=1)] == ["2"]

    async def test_missing_embedding_without_embedder_is_value_error(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        with pytest.raises(ValueError, match="no embedding"):
            await store.add([_doc("ok", [1, 0]), Document("bad", "no vector")])
        assert isinstance(MissingEmbeddingError("x"), ValueError)
        assert await store.get(["ok", "bad"]) == []
        with pytest.raises(MissingEmbeddingError):
            await store.search_text("anything")

    async def test_dimension_is_fixed(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0, 0])])
        with pytest.raises(DimensionMismatchError, match="2 dimensions"):
            await store.add([_doc("b", [1, 1, 1]), _doc("c", [1, 0])])
        assert await store.get(["b", "c"]) == []
        with pytest.raises(DimensionMismatchError):
            await store.search([1, 0])
        await store.add([_doc("d", [1, 0])], collection="other")  # each collection its own
        [info] = [c for c in await store.list_collections() if c.name == "default"]
        assert (info.dimension, info.documents) == (3, 1)

    async def test_nan_and_empty_embeddings_are_refused(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        for bad in ([math.nan, 0.0], [math.inf, 1.0], []):
            with pytest.raises(InvalidEmbeddingError):
                await store.add([_doc("a", [1.0, 0.0]), _doc("b", bad)])
        assert await store.get(["a", "b"]) == []
        assert await store.list_collections() == []
        with pytest.raises(InvalidEmbeddingError):
            await store.search([math.nan, 1.0])

    async def test_embedder_recorded_per_collection(self, memory: MemoryFactory) -> None:
        store = await memory.vectors(TinyEmbedder("model-a"))
        await store.create_collection("kb", 4, embedder="model-b")
        with pytest.raises(EmbedderMismatchError, match="model-b"):
            await store.add([Document("1", "aaa")], collection="kb")
        with pytest.raises(EmbedderMismatchError):
            await store.search_text("a", collection="kb")
        with pytest.raises(DimensionMismatchError):
            await store.create_collection("kb", 5)
        await store.add([Document("1", "abc")], collection="fresh")
        [fresh] = [c for c in await store.list_collections() if c.name == "fresh"]
        assert (fresh.embedder, fresh.dimension) == ("model-a", 4)

    async def test_filters(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add(
            [
                _doc("en1", [1, 0], lang="en", year=2020, draft=False),
                _doc("en2", [1, 0.1], lang="en", year=2023, draft=True),
                _doc("de1", [1, 0.2], lang="de", year=2021, draft=False),
                _doc("fr1", [1, 0.3], lang="fr", year=1, draft=None),
                _doc("nolang", [1, 0.4]),
                _doc("numstr", [1, 0.5], lang=1, year="2022"),
                _doc("listy", [1, 0.6], lang=["en"], year=[2021]),
            ]
        )

        async def hits(flt: dict[str, object]) -> set[str]:
            return set(await _ids(store, [1, 0], limit=10, filter=flt))

        assert await hits({"lang": "en"}) == {"en1", "en2"}
        assert await hits({"lang": {"$eq": "de"}}) == {"de1"}
        assert await hits({"lang": {"$in": ["de", "fr"]}}) == {"de1", "fr1"}
        assert await hits({"lang": {"$in": []}}) == set()
        assert await hits({"year": {"$gte": 2021}}) == {"en2", "de1"}
        assert await hits({"year": {"$gt": 2020, "$lt": 2023}}) == {"de1"}
        assert await hits({"year": {"$lte": 2020}}) == {"en1", "fr1"}  # the string "2022" is no number
        assert await hits({"lang": "en", "year": {"$lt": 2022}}) == {"en1"}
        assert await hits({"draft": False}) == {"en1", "de1"}  # False is not 0
        assert await hits({"draft": None}) == {"fr1"}
        assert await hits({"lang": 1}) == {"numstr"}  # 1 is not True, nor "1"
        assert await hits({"missing": "x"}) == set()
        assert await hits({"lang": '["en"]'}) == set()  # a list is not its JSON text

    async def test_filtered_search_returns_limit_hits(self, memory: MemoryFactory) -> None:
        # 300 documents nearer the query than any matching one: a filter applied after fetching
        # the nearest would find none of the 30 that match.
        store = await memory.vectors()
        near = [_doc(f"n{i:03}", [1.0, 0.001 * i], keep=False) for i in range(300)]
        far = [_doc(f"f{i:03}", [0.0, 1.0 + i], keep=True) for i in range(30)]
        await store.add(near + far)
        hits = await store.search([1.0, 0.0], limit=10, filter={"keep": True})
        assert len(hits) == 10
        assert all(h.metadata == {"keep": True} for h in hits)

    async def test_bad_filters_are_refused(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0], n=1)])
        bads: list[dict[str, object]] = [
            {"n": {"$regex": "x"}},
            {"$or": [{"n": 1}]},
            {"n": {"$gt": "1"}},
            {"n": {"$in": "abc"}},
            {"n": {}},
            {"n": [1, 2]},
            {"n": {"$gt": math.nan}},
        ]
        for bad in bads:
            with pytest.raises(FilterError):
                await store.search([1, 0], filter=bad)

    async def test_collections_are_separate(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0])], collection="one")
        await store.add([_doc("a", [0, 1, 0])], collection="two")
        assert [d.embedding for d in await store.get(["a"], collection="one")] == [[1.0, 0.0]]
        assert [(c.name, c.dimension, c.documents) for c in await store.list_collections()] == [
            ("one", 2, 1),
            ("two", 3, 1),
        ]

    async def test_metadata_round_trips_as_json(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        meta = {"nested": {"list": [1, "two", None, True]}, "é": "ü", "f": 1.5}
        await store.add([Document("a", "text ✓", [1, 0], meta)])
        [a] = await store.get(["a"])
        assert a.metadata == meta
        assert a.content == "text ✓"
        [hit] = await store.search([1, 0])
        assert hit.metadata == meta

    async def test_bad_ids_are_refused(self, memory: MemoryFactory) -> None:
        store = await memory.vectors()
        with pytest.raises(ValueError, match="id"):
            await store.add([Document("", "x", [1, 0])])
        with pytest.raises(ValueError, match="limit"):
            await store.search([1, 0], limit=-1)
        assert await store.list_collections() == []

    async def test_numbers_past_64_bits_agree_everywhere(self, memory: MemoryFactory) -> None:
        # Every store answers these alike: no OverflowError from a driver that binds 64 bits.
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0], n=5), _doc("b", [0, 1], n=2**64)])
        assert await _ids(store, [1, 0], filter={"n": 2**65}) == []
        assert await _ids(store, [1, 0], filter={"n": {"$gt": 2**64}}) == []
        assert await _ids(store, [1, 0], filter={"n": {"$lt": 2**64}}) == ["a"]
        assert await _ids(store, [1, 0], filter={"n": {"$in": [2**70, 5]}}) == ["a"]
        assert await _ids(store, [1, 0], limit=2**63) == ["a", "b"]
        assert await _ids(store, [1, 0], limit=2**64) == ["a", "b"]

    async def test_an_id_twice_in_one_batch(self, memory: MemoryFactory) -> None:
        # add keeps the first (the second finds it stored), upsert the last (each replaces).
        store = await memory.vectors()
        await store.add([_doc("a", [1, 0], v=1), _doc("a", [0, 1], v=2), _doc("b", [1, 1])])
        [a] = await store.get(["a"])
        assert (a.embedding, a.metadata) == ([1.0, 0.0], {"v": 1})
        await store.upsert([_doc("a", [0, 1], v=3), _doc("a", [1, 1], v=4)])
        [a] = await store.get(["a"])
        assert (a.embedding, a.metadata) == ([1.0, 1.0], {"v": 4})
        assert [d.id for d in await store.get(["a", "b"])] == ["a", "b"]
