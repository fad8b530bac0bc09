"""Search fixes from the second review: raw queries in every mode, non-finite vectors, the
similarity floor, a custom embedder's database searched without it, late snippets, "newest
first" on a pruned keyword search, wrong-count embedders, and appends an embedder fails.

Every test runs on a real database file with real FTS5 and sqlite-vec, through the real store.
"""

from __future__ import annotations

import asyncio
import logging
import math
from array import array
from collections.abc import Sequence
from pathlib import Path

import pytest

from axio_context.embeddings import HashingEmbedder, Vector
from axio_context.errors import (
    EmbedderUnavailableError,
    EmbeddingMismatchError,
    NoEmbeddingsError,
    SearchQueryError,
)
from axio_context.testing import text
from axio_context_sqlite import SearchHit, SQLiteContextStore, connect
from axio_context_sqlite.database import Database, open_database
from axio_context_sqlite.search import keyword as keyword_module
from axio_context_sqlite.search import semantic as search_module
from axio_context_sqlite.search.fts import raw_words
from axio_context_sqlite.store.vec import brute_force_knn
from tests.search.test_search import plain_sqlean
from tests.support.sqlite_checks import raw_connect

MODES = ("keyword", "semantic", "hybrid")


def where(hits: Sequence[SearchHit]) -> list[tuple[str, int]]:
    return [(h.session_id, h.position) for h in hits]


class TinyEmbedder:
    """Deterministic 8-d unit vectors, one axis per word bucket; a word starting with ``zz`` is
    unknown to it. With ``nan`` a text of only unknown words gets NaN (it divides by a zero
    norm), as a careless embedder does; otherwise a zero vector."""

    def __init__(self, model: str = "tiny-v1", *, nan: bool = False) -> None:
        self._model = model
        self._nan = nan
        self.seen: list[str] = []

    @property
    def model(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return 8

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.seen.extend(texts)
        out = []
        for t in texts:
            v = [0.0] * 8
            for w in t.lower().split():
                if not w.startswith("zz"):
                    v[sum(map(ord, w)) % 8] += 1.0
            n = math.sqrt(sum(x * x for x in v))
            out.append(array("f", [x / n if n else (math.nan if self._nan else 0.0) for x in v]))
        return out


class Failing(TinyEmbedder):
    """An embedding service that is down."""

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        raise ConnectionError("embedding service timed out")


class Counted(TinyEmbedder):
    """Returns ``count`` vectors whatever it is asked."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self._count = count

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [array("f", [1.0] + [0.0] * 7) for _ in range(self._count)]


# --- 1. a raw query is a filter in every mode ----------------------------------------------------


PIZZA = [
    text("user", "the parser fails on pizza orders"),  # parser and pizza: excluded
    text("user", "pizza pizza pizza delivery tonight"),  # pizza only: excluded
    text("user", "the parser handles nested lists now"),  # the one answer
    text("user", "weather report for tomorrow"),
]


async def test_raw_not_excludes_the_word_in_every_mode(tmp_path: Path) -> None:
    path = tmp_path / "raw.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=HashingEmbedder()).append_many(PIZZA)
    async with open_database(path) as db:
        for mode in MODES:
            hits = await db.search("parser NOT pizza", raw=True, mode=mode)  # type: ignore[arg-type]
            assert where(hits) == [("s", 2)], mode
            assert "[parser]" in hits[0].marked()
        hybrid = await db.search("parser NOT pizza", raw=True)
        assert hybrid[0].keyword_rank == 1 and hybrid[0].semantic_rank == 1
        # NEAR, column filters and OR hold for the semantic half too
        near = await db.search("NEAR(parser pizza, 3)", raw=True, mode="semantic")
        assert where(near) == [("s", 0)]
        either = await db.search("weather OR delivery", raw=True, mode="hybrid")
        assert sorted(where(either)) == [("s", 1), ("s", 3)]


async def test_raw_query_embeds_its_words_not_its_operators(tmp_path: Path) -> None:
    path = tmp_path / "raw.db"
    emb = TinyEmbedder()
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=emb).append_many(PIZZA)
    async with open_database(path) as db:
        emb.seen.clear()
        await db.search('parser NOT (pizza OR delivery) AND body:"nested lists"', raw=True, embedder=emb)
        await db.search("NEAR(parser handles, 4) OR tool:weather*", raw=True, embedder=emb)
    assert emb.seen == ["parser nested lists", "parser handles weather"]


def test_raw_words() -> None:
    cases = {
        "parser NOT pizza": "parser",
        "a NOT b c AND d": "a d",  # FTS5 groups adjacent phrases: NOT takes "b c"
        "a OR b NOT c": "a b",
        "a NOT (b OR c) d": "a d",
        "a NOT body:(b c) AND d": "a d",
        "{body tool}:parser NOT -tool:pizza": "parser",
        "NEAR(one two, 10)": "one two",
        '"quoted ""phrase""" pre* ^first': 'quoted "phrase" pre first',
        "parser NOT": "parser",
    }
    assert {q: raw_words(q) for q in cases} == cases


# --- 2. non-finite vectors ---------------------------------------------------------------------


async def test_append_keeps_the_message_and_leaves_a_nan_vector_out(tmp_path: Path) -> None:
    # A NaN vector (a text the embedder has no words for, divided by its zero norm) is left out
    # as a zero vector is: that message stays unembedded, the batch's others are embedded.
    path = tmp_path / "nan.db"
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder(nan=True))
        await store.append_many([text("user", "parser crash report"), text("user", "zzqq zzrr")])
        assert [m.text for m in await store.get_full_history()] == ["parser crash report", "zzqq zzrr"]
    sid = await _sid(path, "s")
    db = raw_connect(path)
    try:
        stored = db.execute("SELECT id, embedding FROM message_vectors").fetchall()
        assert [i for i, _ in stored] == [sid << 32]
        assert all(math.isfinite(x) for _, blob in stored for x in array("f", bytes(blob)))
    finally:
        db.close()


async def test_query_refuses_a_nan_vector_and_reindex_leaves_it_out(tmp_path: Path) -> None:
    path = tmp_path / "nan.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder()).append_many(
            [text("user", "parser crash report"), text("user", "zzqq parser")]
        )
        await SQLiteContextStore(conn, "t", "/p").append(text("user", "zzqq zzrr"))  # no embedding
    async with open_database(path) as db:
        for mode in ("semantic", "hybrid"):
            with pytest.raises(EmbeddingMismatchError, match="NaN or infinite"):
                await db.search("zzqq", mode=mode, embedder=TinyEmbedder(nan=True))
        await db.reindex(TinyEmbedder(nan=True))  # "zzqq zzrr" gets NaN: left unembedded
        assert (await db.index_status()).embedded == 2
        hits = await db.search("parser crash", mode="semantic", embedder=TinyEmbedder())
        assert {h.session_id for h in hits} == {"s"}


def _poison(path: Path, position: int) -> None:
    """Overwrite one stored embedding with NaN, as a database written before they were refused."""
    db = raw_connect(path)
    try:
        db.execute(
            "UPDATE message_vectors SET embedding = ? WHERE id = ?",
            (array("f", [math.nan] * 8).tobytes(), position),
        )
        db.commit()
    finally:
        db.close()


async def test_search_and_similar_pass_over_nan_vectors_already_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "nan.db"
    emb = TinyEmbedder()
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=emb).append_many(
            [text("user", "parser crash report"), text("user", "parser crash"), text("user", "parser notes")]
        )
    sid = await _sid(path, "s")
    _poison(path, (sid << 32) | 1)
    async with open_database(path) as db:
        # the codes (global), the exact scan in SQL (a session), then the codes for a session too
        for exact_rows in (search_module.EXACT_ROWS, 0):
            monkeypatch.setattr(search_module, "EXACT_ROWS", exact_rows)
            for scope in (None, "s"):
                for mode in ("semantic", "hybrid"):
                    hits = await db.search("parser crash", mode=mode, embedder=emb, session_id=scope)
                    semantic = [h.position for h in hits if h.semantic_rank is not None]
                    assert semantic and 1 not in semantic, (exact_rows, scope, mode)
        assert [h.position for h in await db.similar("s", 0)] == [2]
        with pytest.raises(NoEmbeddingsError, match="NaN or infinite"):
            await db.similar("s", 1)
    async with plain_sqlean(path) as conn:  # no sqlite-vec: the Python scan
        hits = await Database(conn, path).search("parser crash", mode="semantic", embedder=emb)
        assert 1 not in [h.position for h in hits] and hits


async def _sid(path: Path, session_id: str) -> int:
    db = raw_connect(path)
    try:
        return int(db.execute("SELECT sid FROM sessions WHERE id = ?", (session_id,)).fetchone()[0])
    finally:
        db.close()


def test_brute_force_knn_leaves_nan_rows_out() -> None:
    rows = [(1, [math.nan, 0.0]), (2, [0.0, 1.0]), (3, [1.0, 0.0])]
    assert [r for r, _ in brute_force_knn([1.0, 0.0], rows, 3)] == [3, 2]


# --- 3. no semantic hit shares nothing with the query ------------------------------------------


async def test_semantic_and_hybrid_drop_unrelated_messages(tmp_path: Path) -> None:
    path = tmp_path / "floor.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=HashingEmbedder()).append_many(
            [
                text("user", "the walrus parser crashed"),
                text("user", "deploy billing service to staging"),
                text("user", "quarterly budget spreadsheet review"),
            ]
        )
    async with open_database(path) as db:
        for mode in ("semantic", "hybrid"):
            hits = await db.search("walrus", mode=mode)
            assert where(hits) == [("s", 0)], mode
        assert all(h.score > 0 for h in await db.search("walrus", mode="semantic"))


# --- 4. a custom embedder's database, searched without it --------------------------------------


async def test_default_hybrid_falls_back_to_keyword_naming_the_model(tmp_path: Path) -> None:
    path = tmp_path / "custom.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder()).append(
            text("user", "walrus parser")
        )
    async with open_database(path) as db:
        hits = await db.search("walrus")
        assert where(hits) == [("s", 0)] and hits[0].semantic_rank is None
        # the reason is the result's fallback (it was folded into ``why`` before that had one)
        assert (
            hits.fallback is not None and "'tiny-v1'" in hits.fallback and "keyword search" in hits.fallback
        )
        assert hits.why is None and hits.notes() == [hits.fallback]
        assert (await db.search("walrus", mode="keyword")).fallback is None
        with pytest.raises(EmbedderUnavailableError, match="'tiny-v1'"):
            await db.search("walrus", mode="semantic")
        # with its embedder, both halves run
        both = await db.search("walrus", embedder=TinyEmbedder())
        assert both.fallback is None and both[0].semantic_rank == 1


# --- 5. a keyword match past the snippet table's limit ----------------------------------------


async def test_keyword_match_past_the_snippet_limit_is_shown(tmp_path: Path) -> None:
    path = tmp_path / "long.db"
    body = "filler " * 30_000 + "the needleword is near the very end " + "tail " * 10
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p").append(text("user", body))
    async with open_database(path) as db:
        [hit] = await db.search("needleword", mode="keyword")
    assert "[needleword]" in hit.marked()
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert len(hit.snippet) < 400


# --- 6. "newest first" on a pruned keyword search ---------------------------------------------


async def test_pruned_keyword_search_puts_the_newest_message_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "prune.db"
    async with connect(path) as conn:
        old = SQLiteContextStore(conn, "old", "/p")
        new = SQLiteContextStore(conn, "new", "/p")
        await old.append(text("user", "common word first"))
        await asyncio.sleep(0.005)
        await new.append_many([text("user", f"common word filler {i}") for i in range(12)])
        await asyncio.sleep(0.005)
        await old.append(text("user", "common word, the newest message"))
    monkeypatch.setattr(keyword_module, "PRUNE_MIN_ROWS", 10)
    async with open_database(path) as db:
        hits = await db.search("common word", mode="keyword", k=3)
        assert where(hits) == [("old", 1), ("new", 11), ("new", 10)]
        assert [math.copysign(1.0, h.score) for h in hits] == [1.0, 1.0, 1.0]  # 0.0, not -0.0
        scoped = await db.search("common word", mode="keyword", k=3, session_id="new")
        assert where(scoped) == [("new", 11), ("new", 10), ("new", 9)]


# --- 7. an embedder returning the wrong number of vectors --------------------------------------


async def test_query_embedder_returning_the_wrong_number_of_vectors(tmp_path: Path) -> None:
    path = tmp_path / "count.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder()).append(text("user", "walrus"))
    async with open_database(path) as db:
        for count in (0, 2):
            with pytest.raises(EmbeddingMismatchError, match=f"returned {count} vectors for 1 query"):
                await db.search("walrus", mode="semantic", embedder=Counted(count))


# --- 8. an embedder failing during an append ---------------------------------------------------


async def test_append_stores_the_message_when_the_embedder_fails_and_reindex_embeds_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "flaky.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder()).append(text("user", "first turn"))
        flaky = SQLiteContextStore(conn, "s", "/p", embedder=Failing())
        with caplog.at_level(logging.WARNING, logger="axio_context_sqlite"):
            await flaky.append(text("assistant", "an important walrus answer"))
        assert [m.text for m in await flaky.get_full_history()] == [
            "first turn",
            "an important walrus answer",
        ]
        assert "embedding service timed out" in caplog.text and "reindex" in caplog.text
        db = Database(conn, path)
        assert (await db.index_status()).embedded == 1
        report = await db.reindex(TinyEmbedder())
        assert report.embedded == 1
        hits = await db.search("important walrus answer", mode="semantic", embedder=TinyEmbedder())
        assert where(hits)[0] == ("s", 1)


@pytest.mark.parametrize("query", ["NOT parser", "AND", "*", "(", '"unclosed'])
async def test_a_raw_semantic_query_with_nothing_to_embed_is_an_error_not_no_matches(
    tmp_path: Path, query: str
) -> None:
    # Semantic mode embeds the expression's words; with none, the expression was never run and
    # "no matches" hid its syntax error (keyword and hybrid report it).
    path = tmp_path / "raw.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p", embedder=TinyEmbedder()).append(
            text("user", "parser crash")
        )
    async with open_database(path) as db:
        for mode in ("semantic", "keyword", "hybrid"):
            with pytest.raises(SearchQueryError, match="invalid FTS5 query"):
                await db.search(query, mode=mode, raw=True, embedder=TinyEmbedder())
        hits = await db.search("parser", mode="semantic", raw=True, embedder=TinyEmbedder())
        assert where(hits) == [("s", 0)]
