"""Issue 17/18 search fixes: bounded queries, no noise for a word found nowhere, the results'
notes (not embedded, fallback, withheld), embedders of dimension 0, and reindex's growth estimate.

Every test runs on a real database file with real FTS5 and sqlite-vec, through the real store.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import msgspec
import pytest

from axio_context import Message
from axio_context.embeddings import HashingEmbedder, Vector
from axio_context.errors import EmbedderDimensionError, SearchQueryError
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.database import Database, open_database
from axio_context_sqlite.search.hits import SearchResults
from axio_context_sqlite.search.query import (
    MAX_PREFIXES,
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    MAX_WORD_REPEATS,
)
from axio_context_sqlite.search.status import vector_bytes
from tests.support.cli_helpers import invoke, invoke_json
from tests.support.words import WORDS, prose

MODES = ("keyword", "semantic", "hybrid")
MESSAGES = 3000


async def _fill(path: Path, *, embedded: bool = True) -> None:
    rng = random.Random(17)
    async with connect(path) as conn:
        emb = HashingEmbedder() if embedded else None
        for s in range(30):
            store = SQLiteContextStore(conn, f"s{s:02}", f"/p/{s % 3}", embedder=emb)
            await store.append_many([text("user", prose(rng, 12)) for _ in range(MESSAGES // 30)])


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bounds") / "big.db"
    asyncio.run(_fill(path))
    return path


@pytest.fixture
async def big(big_db: Path) -> AsyncIterator[Database]:
    async with open_database(big_db) as db:
        yield db


# --- 1. bounded queries -----------------------------------------------------------------------


HOSTILE = {
    "repeated word, raw": (" ".join(["parser"] * 400), True, "characters"),
    "a word 5 times, raw": (" ".join(["parser"] * 5), True, "repeats 'parser' 5 times"),
    "many words, raw": (" AND ".join(WORDS[:24] + WORDS[:9]), True, "33 words"),
    "10 KB raw": (" OR ".join(WORDS[i % len(WORDS)] for i in range(1200))[:10_240], True, "characters"),
    "10 KB quoted phrase": ('"' + prose(random.Random(1), 1500)[:10_240] + '"', False, "characters"),
    "repeated word, plain": (" ".join(["parser"] * 400), False, "characters"),
    "a word 5 times, plain": (" ".join(["Parser"] * 2 + ["parser"] * 3), False, "repeats 'parser' 5 times"),
}


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("mode", MODES)
async def test_hostile_queries_are_refused_naming_the_limit(big: Database, name: str, mode: str) -> None:
    query, raw, said = HOSTILE[name]
    with pytest.raises(SearchQueryError, match="the limit is") as caught:
        await big.search(query, mode=mode, raw=raw)  # type: ignore[arg-type]
    assert said in str(caught.value) and "\n" not in str(caught.value)


async def test_queries_at_the_limits_run_and_find_what_they_ask(big: Database) -> None:
    repeated = " ".join(["parser"] * MAX_WORD_REPEATS)  # raw: an AND of the same word
    for mode in MODES:
        hits = await big.search(repeated, raw=True, mode=mode, k=20)  # type: ignore[arg-type]
        assert len(hits) == 20 and all("parser" in h.snippet for h in hits)
    words = " ".join(WORDS[i % len(WORDS)] + str(i // len(WORDS)) for i in range(MAX_QUERY_WORDS))
    assert (await big.search(words, mode="keyword")).hits == []  # runs: none of these words exist
    with pytest.raises(SearchQueryError, match=f"{MAX_QUERY_WORDS + 1} words; the limit is"):
        await big.search(words + " parser", mode="keyword")
    phrase = '"' + " ".join(WORDS[: MAX_QUERY_WORDS // 2]) + '"'
    assert len(phrase) < MAX_QUERY_CHARS
    assert (await big.search(phrase, mode="keyword")).hits == []  # a 16-word phrase nobody wrote
    prefixes = " ".join(f"{w[:3]}*" for w in WORDS[: MAX_PREFIXES + 1])
    with pytest.raises(SearchQueryError, match="prefix searches"):
        await big.search(prefixes, mode="keyword")
    assert await big.search(" ".join(prefixes.split()[:MAX_PREFIXES]), mode="keyword")


def test_the_cli_refuses_a_hostile_query_in_one_line(big_db: Path) -> None:
    for query, raw, _ in HOSTILE.values():
        result = invoke("--db", big_db, "search", *(["--raw"] if raw else []), "--", query, ok=False)
        assert result.exit_code == 1 and result.stdout == ""
        assert result.stderr.startswith("Error: ") and "the limit is" in result.stderr
        assert len(result.stderr.splitlines()) == 1


# --- 2. a word that appears nowhere ---------------------------------------------------------------


async def test_hybrid_shows_nothing_for_words_no_message_holds(big: Database) -> None:
    nowhere = "parsnipology"
    meaning = await big.search(nowhere, mode="semantic")
    assert meaning.hits  # the hashing embedder's buckets collide: meaning alone finds "neighbours"
    hybrid = await big.search(nowhere)
    assert hybrid.hits == [] and hybrid.withheld > 0
    assert any("no message contains these words" in n for n in hybrid.notes())
    found = await big.search("parser nowhere-else")  # one word is there: fused as before
    assert found.hits and found.withheld == 0 and found.notes() == []


def test_the_cli_says_why_a_hybrid_search_found_nothing(big_db: Path) -> None:
    result = invoke("--db", big_db, "search", "parsnipology")
    assert result.stdout == ""
    assert "note: no message contains these words" in result.stderr
    out = invoke_json("--db", big_db, "search", "parsnipology", "--json")
    assert out["hits"] == [] and out["withheld"] > 0
    assert any("semantic mode shows" in n for n in out["notes"])


# --- 3. the results' notes ------------------------------------------------------------------------


async def test_semantic_search_counts_the_messages_it_could_not_see(tmp_path: Path) -> None:
    path = tmp_path / "half.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "with", "/a", embedder=HashingEmbedder()).append_many(
            [text("user", f"parser note {i}") for i in range(5)]
        )
        await SQLiteContextStore(conn, "without", "/b").append_many(
            [text("user", f"parser later {i}") for i in range(3)]
        )
    async with open_database(path) as db:
        hits = await db.search("parser", mode="semantic", k=50)
        assert len(hits) == 5 and hits.not_embedded == 3
        assert any("3 message(s) have no embedding" in n for n in hits.notes())
        assert (await db.search("parser", mode="semantic", project="/a")).not_embedded == 0
        assert (await db.search("parser", mode="semantic", session_id="without")).not_embedded == 3
        assert (await db.search("later", mode="semantic", raw=True)).not_embedded == 3
        assert (await db.similar("with", 0)).not_embedded == 3
        await db.reindex(HashingEmbedder())
        after = await db.search("parser", mode="semantic", k=50)
        assert len(after) == 8 and after.not_embedded == 0 and after.notes() == []


async def test_the_whole_database_count_agrees_with_counting_row_by_row(tmp_path: Path) -> None:
    """Unfiltered, the count is the keyword index and its queue less the embeddings; filtered (a
    project holding every session), it is counted row by row: both agree through a fork, a
    deleted session, messages still queued for the index and one without text."""
    path = tmp_path / "count.db"
    async with connect(path) as conn:
        with_ = SQLiteContextStore(conn, "with", "/all", embedder=HashingEmbedder())
        await with_.append_many([text("user", f"parser note {i}") for i in range(6)])
        without = SQLiteContextStore(conn, "without", "/all")
        await without.append_many([text("user", f"parser later {i}") for i in range(4)])
        await without.append(Message(role="assistant", content=[]))  # no text: nothing to embed
        fork = await without.fork()
        await fork.append(text("user", "parser in the fork"))
        gone = SQLiteContextStore(conn, "gone", "/all")
        await gone.append_many([text("user", f"parser gone {i}") for i in range(3)])
        assert await gone.delete_session()
    async with open_database(path) as db:
        counts = []
        for _ in range(2):  # queued for the keyword index, then folded into it by a keyword search
            whole = await db.search("parser", mode="semantic")
            by_row = await db.search("parser", mode="semantic", project="/all")
            counts.append((whole.not_embedded, by_row.not_embedded))
            await db.search("parser", mode="keyword")
        # while queued, the message without text counts (whether it has text is known when it is
        # folded), on both paths alike
        assert counts == [(6, 6), (5, 5)]


def test_search_results_are_a_struct_that_reads_like_its_hits() -> None:
    empty = SearchResults(unindexed=2, why="the database is read-only here", fallback="keyword only")
    assert empty == [] and not empty and len(empty) == 0 and list(empty) == []
    encoded = json.loads(msgspec.json.encode(empty))
    assert encoded["unindexed"] == 2 and encoded["fallback"] == "keyword only" and encoded["hits"] == []
    assert empty.notes()[0] == "keyword only" and "read-only" in empty.notes()[1]


# --- 5. an embedder of dimension 0 ----------------------------------------------------------------


class ZeroEmbedder:
    """Declares a width of 0, and returns empty vectors to match."""

    model = "zero-v1"
    dimension = 0

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        return [HashingEmbedder(8).embed_one("")[:0] for _ in texts]


async def test_an_embedder_of_dimension_zero_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "zero.db"
    async with connect(path) as conn:
        with pytest.raises(EmbedderDimensionError, match="'zero-v1' declares dimension 0"):
            SQLiteContextStore(conn, "s", "/p", embedder=ZeroEmbedder())
        await SQLiteContextStore(conn, "s", "/p").append(text("user", "parser notes"))
    async with open_database(path) as db:
        with pytest.raises(EmbedderDimensionError, match="'zero-v1'"):
            await db.reindex(ZeroEmbedder())
        assert await db.embedding_model() is None  # nothing recorded
        for mode in ("semantic", "hybrid"):
            with pytest.raises(EmbedderDimensionError, match="'zero-v1'"):
                await db.search("parser", mode=mode, embedder=ZeroEmbedder())  # type: ignore[arg-type]
        assert [h.position for h in await db.search("parser", mode="keyword")] == [0]


# --- 6. reindex warns about growth -----------------------------------------------------------------


async def test_reindex_estimates_its_growth_and_vector_space_measures_it(tmp_path: Path) -> None:
    path = tmp_path / "grow.db"
    await _fill(path, embedded=False)
    async with open_database(path) as db:
        before = await db.vector_space()
        assert before.embedded == 0 and before.codes == 0 and before.vectors <= 4096  # one empty page
        told: list[tuple[int, int]] = []
        report = await db.reindex(HashingEmbedder(), on_estimate=lambda n, size: told.append((n, size)))
        assert told == [(MESSAGES, MESSAGES * vector_bytes(384, True))]
        assert report.estimated_bytes == told[0][1] and report.embedded == MESSAGES
        space = await db.vector_space()
        assert space.measured and space.embedded == MESSAGES
        # int8 vectors: one byte a coordinate (float32 took four)
        assert MESSAGES * 384 <= space.vectors < MESSAGES * 384 * 2 and space.codes >= MESSAGES * 384 // 8
        assert 0.5 < space.total / report.estimated_bytes < 2  # the estimate is the right size
        again: list[tuple[int, int]] = []
        assert (
            await db.reindex(HashingEmbedder(), on_estimate=lambda n, s: again.append((n, s)))
        ).embedded == 0
        assert again == [(0, 0)]


def test_the_cli_prints_the_estimate_before_embedding(tmp_path: Path) -> None:
    path = tmp_path / "cli.db"
    asyncio.run(_fill(path, embedded=False))
    result = invoke("--db", path, "reindex", "--dimension", "64", "--json")
    assert f"embedding up to {MESSAGES:,} message(s): the database grows by about" in result.stderr
    report = json.loads(result.stdout)
    assert report["estimated_bytes"] == MESSAGES * vector_bytes(64, True) and report["embedded"] == MESSAGES
