"""Database.search / similar: real files, real FTS5, real sqlite-vec, through the real store.

Every mode is checked against what it must find (and must not): exact words, paraphrases that
share words, every filter, deleted and forked sessions, hostile queries, embedder mismatches,
and the exact scan that stands in when sqlite-vec does not run or its codes are stale.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path

import aiosqlite
import pytest
import sqlean

from axio_context import Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.embeddings import HashingEmbedder
from axio_context.errors import (
    EmbeddingMismatchError,
    MessageNotFoundError,
    NoEmbeddingsError,
    SearchQueryError,
    SessionNotFoundError,
)
from axio_context.testing import text
from axio_context_sqlite import SearchHit, SQLiteContextStore, connect
from axio_context_sqlite.database import Database, open_database
from axio_context_sqlite.search import keyword as keyword_module
from axio_context_sqlite.search import semantic as search_module
from axio_context_sqlite.search.hits import SEMANTIC_FLOOR
from axio_context_sqlite.search.query import DEPTH, MAX_QUERY_CHARS, MAX_QUERY_WORDS
from tests.support.sqlite_checks import raw_connect

MODES = ("keyword", "semantic", "hybrid")
EMB = HashingEmbedder()


def where(hits: list[SearchHit]) -> list[tuple[str, int]]:
    return [(h.session_id, h.position) for h in hits]


@asynccontextmanager
async def plain_sqlean(path: Path) -> AsyncIterator[aiosqlite.Connection]:
    """A connection through the same SQLite library, without sqlite-vec loaded: what a platform
    whose sqlite-vec binary fails to load looks like to the store."""
    conn = aiosqlite.Connection(lambda: sqlean.connect(str(path), isolation_level=None), 64)
    await conn
    try:
        yield conn
    finally:
        await conn.close()


PARSER = [
    text("user", "The JSON parser crashes on nested brackets like [[1, [2]], 3]."),
    Message(
        role="assistant",
        content=[
            TextBlock(text="Let me read the parser."),
            ToolUseBlock(id="c1", name="read_file", input={"path": "src/jsonkit/parser.py"}),
        ],
    ),
    Message(
        role="user",
        content=[ToolResultBlock(tool_use_id="c1", content="def parse_array(self):\n    self.depth = 0\n")],
    ),
    text("assistant", "Fixed: parse_array reset the depth counter after every item."),
]
DEPLOY = [
    text("user", "Deploy the billing service to staging and check the health endpoint."),
    text("assistant", "Deployed billing to staging; the health endpoint answers 200."),
]
HOSTILE = [
    text("user", "Unbalanced parentheses (like this make NEAR operators fail"),
    text("assistant", "Never DROP TABLE messages in production; use a migration."),
    text("system", "You are a careful reviewer of parser code."),
]


async def build(path: Path) -> None:
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "jsonkit-crash", "/p/jsonkit", embedder=EMB).append_many(PARSER)
        await SQLiteContextStore(conn, "billing-deploy", "/p/billing", embedder=EMB).append_many(DEPLOY)
        await SQLiteContextStore(conn, "misc", "/p/misc", embedder=EMB).append_many(HOSTILE)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    path = tmp_path / "search.db"
    await build(path)
    async with open_database(path) as database:
        yield database


# --- what each mode finds ---------------------------------------------------------------------------


async def test_keyword_finds_exact_words_with_highlighted_snippet(db: Database) -> None:
    hits = await db.search("nested brackets", mode="keyword", embedder=EMB)
    assert where(hits)[0] == ("jsonkit-crash", 0)
    top = hits[0]
    assert top.role == "user" and top.project == "/p/jsonkit" and top.keyword_rank == 1
    assert top.semantic_rank is None and top.score > 0
    assert top.preview.startswith("The JSON parser crashes")
    assert top.marked() == "The JSON parser crashes on [nested] [brackets] like [[1, [2]], 3]."
    assert top.created_at.endswith("+00:00")


async def test_keyword_matches_porter_stems_and_highlights_what_matched(db: Database) -> None:
    hits = await db.search("crashing", mode="keyword")
    assert where(hits) == [("jsonkit-crash", 0)]
    assert "[crashes]" in hits[0].marked()
    # tool names, inputs and results are searchable too
    assert ("jsonkit-crash", 1) in where(await db.search("src/jsonkit/parser.py", mode="keyword"))
    result = await db.search("parse_array depth", mode="keyword")
    assert set(where(result)) == {("jsonkit-crash", 2), ("jsonkit-crash", 3)}


async def test_semantic_finds_paraphrases_sharing_words(db: Database) -> None:
    hits = await db.search("the parsers crash with nested lists", mode="semantic", k=3, embedder=EMB)
    assert where(hits)[0] == ("jsonkit-crash", 0)
    assert hits[0].semantic_rank == 1 and hits[0].keyword_rank is None
    assert 0 < hits[0].score <= 1.0  # cosine similarity
    deploy = await db.search("deploying billing to staging", mode="semantic", k=2, embedder=EMB)
    assert {h.session_id for h in deploy} == {"billing-deploy"}


async def test_hybrid_fuses_both_rankings(db: Database) -> None:
    hits = await db.search("parser crashes nested", embedder=EMB)
    top = hits[0]
    assert (top.session_id, top.position) == ("jsonkit-crash", 0)
    assert top.keyword_rank == 1 and top.semantic_rank == 1
    # weighted RRF, k = 60: the top hit holds every word of the query (coverage 1), so keyword
    # weighs 1 and semantic its floor times the square of how far its nearest stands out: here
    # fewer than 50 messages are near at all, so that is the nearest's own cosine (see hits.rank)
    near = await db.search("parser crashes nested", mode="semantic", k=DEPTH, embedder=EMB)
    assert len(near) < DEPTH
    assert top.score == pytest.approx((1 + SEMANTIC_FLOOR * near[0].score ** 2) / 61)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


async def test_default_embedder_is_the_databases(db: Database) -> None:
    """Without an embedder the database's own (hashing, 384) is used."""
    assert where(await db.search("nested brackets", mode="semantic", k=1)) == [("jsonkit-crash", 0)]


# --- filters -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_project_and_role_filters(db: Database, mode: str) -> None:
    hits = await db.search("parser", mode=mode, project="/p/jsonkit", k=20)  # type: ignore[arg-type]
    assert hits and {h.session_id for h in hits} == {"jsonkit-crash"}
    users = await db.search("parser", mode=mode, role="user", k=20)  # type: ignore[arg-type]
    assert users and {h.role for h in users} == {"user"}
    system = await db.search("parser reviewer", mode=mode, role="system", k=20)  # type: ignore[arg-type]
    assert where(system) == [("misc", 2)]
    assert await db.search("parser", mode=mode, project="/p/nowhere") == []  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_session_filter(db: Database, mode: str) -> None:
    hits = await db.search("staging parser", mode=mode, session_id="billing-deploy", k=20)  # type: ignore[arg-type]
    assert hits and {h.session_id for h in hits} == {"billing-deploy"}
    with pytest.raises(SessionNotFoundError):
        await db.search("parser", mode=mode, session_id="nope")  # type: ignore[arg-type]
    # a session filter and a project it is not in: nothing
    assert await db.search("staging", mode=mode, session_id="billing-deploy", project="/p/x") == []  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
async def test_since_filter(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "since.db"
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "s", "/p", embedder=EMB)
        await store.append(text("user", "old note about the cache"))
        await asyncio.sleep(0.05)
        cut = datetime.now().astimezone()
        await asyncio.sleep(0.05)
        await store.append(text("user", "new note about the cache"))
    async with open_database(path) as db:
        everything = await db.search("note cache", mode=mode)  # type: ignore[arg-type]
        assert {h.position for h in everything} == {0, 1}
        recent = await db.search("note cache", mode=mode, since=cut)  # type: ignore[arg-type]
        assert where(recent) == [("s", 1)]
        naive = cut.replace(tzinfo=None)  # a naive time is local time
        assert where(await db.search("note cache", mode=mode, since=naive)) == [("s", 1)]  # type: ignore[arg-type]
        future = cut + timedelta(days=1)
        assert await db.search("note cache", mode=mode, since=future) == []  # type: ignore[arg-type]


async def test_bad_arguments_are_named(db: Database) -> None:
    with pytest.raises(ValueError, match="mode"):
        await db.search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        await db.search("x", k=0)
    with pytest.raises(ValueError, match="role"):
        await db.search("x", role="robot")


# --- forks and deletes -----------------------------------------------------------------------------


async def _family(path: Path) -> tuple[str, str]:
    async with connect(path) as conn:
        parent = SQLiteContextStore(conn, "parent", "/p/a", embedder=EMB)
        await parent.append_many(
            [text("user", "the tokenizer drops unicode escapes"), text("assistant", "fixed the escape table")]
        )
        child = await parent.fork()
        await child.append(text("user", "unicode escapes in keys still break"))
        await parent.append(text("assistant", "parent only: unicode escapes released"))
        return parent.session_id, child.session_id


@pytest.mark.parametrize("vec0", [False, True], ids=["exact-scan", "vec0"])
@pytest.mark.parametrize("mode", MODES)
async def test_inherited_messages_are_found_once_as_the_owners(
    tmp_path: Path, mode: str, vec0: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if vec0:  # a session filter through vec0 (sid IN, over-fetching what the parent added later)
        monkeypatch.setattr(search_module, "EXACT_ROWS", 0)
    path = tmp_path / "fork.db"
    parent, child = await _family(path)
    async with open_database(path) as db:
        hits = where(await db.search("unicode escapes", mode=mode, k=20))  # type: ignore[arg-type]
        assert sorted(hits) == sorted([(parent, 0), (parent, 1), (parent, 2), (child, 2)])
        assert (child, 0) not in hits and len(hits) == len(set(hits))
        # the fork's own search covers what it inherited, reported as the fork's
        mine = where(await db.search("unicode escapes", mode=mode, session_id=child, k=20))  # type: ignore[arg-type]
        assert sorted(mine) == [(child, 0), (child, 1), (child, 2)]
        theirs = where(await db.search("unicode escapes", mode=mode, session_id=parent, k=20))  # type: ignore[arg-type]
        assert sorted(theirs) == [(parent, 0), (parent, 1), (parent, 2)]


@pytest.mark.parametrize("how", ["delete", "clear"])
@pytest.mark.parametrize("mode", MODES)
async def test_after_the_parent_goes_the_fork_owns_them(tmp_path: Path, mode: str, how: str) -> None:
    path = tmp_path / "fork.db"
    parent, child = await _family(path)
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, parent, "/p/a", embedder=EMB)
        await (store.delete_session() if how == "delete" else store.clear())
        db = Database(conn, path)
        hits = where(await db.search("unicode escapes", mode=mode, k=20))  # type: ignore[arg-type]
        assert sorted(hits) == [(child, 0), (child, 1), (child, 2)]


@pytest.mark.parametrize("mode", MODES)
async def test_deleted_sessions_never_appear(db: Database, mode: str) -> None:
    assert "billing-deploy" in {h.session_id for h in await db.search("billing staging", mode=mode)}  # type: ignore[arg-type]
    assert await db.delete(["billing-deploy"]) == ["billing-deploy"]
    hits = await db.search("billing staging health endpoint", mode=mode, k=50)  # type: ignore[arg-type]
    assert "billing-deploy" not in {h.session_id for h in hits}


# --- hostile queries --------------------------------------------------------------------------------

HOSTILE_QUERIES = [
    '"',
    '"unbalanced',
    'a "phrase',
    "NEAR(parser",
    "NEAR",
    "parser NEAR/2 crash",
    "*",
    "pars*",
    "**",
    "-",
    "-parser",
    "parser -crash",
    "(",
    "((parser",
    "parser)",
    "'; DROP TABLE messages; --",
    '" OR 1=1 --',
    "body:parser",
    "tool:read_file",
    "^parser",
    "AND",
    "OR NOT",
    "",
    "   ",
    "!!! ??? ...",
    "\x00\x01",
    "\ud800 lone surrogate",
    "x" * 5000,
    " ".join(f"w{i}" for i in range(200)),
]


@pytest.mark.parametrize("query", HOSTILE_QUERIES, ids=range(len(HOSTILE_QUERIES)))
async def test_a_persons_query_never_raises(db: Database, query: str) -> None:
    """Never, but for the query bounds (search/query.py), which name the limit."""
    oversized = len(query) > MAX_QUERY_CHARS or len(query.split()) > MAX_QUERY_WORDS
    for mode in MODES:
        if oversized:
            with pytest.raises(SearchQueryError, match="the limit is"):
                await db.search(query, mode=mode, k=5)  # type: ignore[arg-type]
            continue
        hits = await db.search(query, mode=mode, k=5)  # type: ignore[arg-type]
        assert all(isinstance(h, SearchHit) for h in hits)


async def test_hostile_words_are_searched_as_words(db: Database) -> None:
    hits = await db.search("'; DROP TABLE messages; --", mode="keyword")
    assert where(hits)[0] == ("misc", 1)
    assert "[DROP] [TABLE] [messages]" in hits[0].marked()
    assert where(await db.search('"unbalanced parentheses', mode="keyword")) == [("misc", 0)]
    assert where(await db.search("NEAR(", mode="keyword")) == [("misc", 0)]  # the word NEAR
    db_file = raw_connect(db.path)
    try:
        assert db_file.execute("SELECT COUNT(*) FROM messages").fetchone() == (9,)
    finally:
        db_file.close()
    for query in ("", "   ", "!!!", "*", "-"):
        assert await db.search(query, mode="keyword") == []
        assert await db.search(query, mode="semantic") == []


async def test_raw_fts5_syntax(db: Database) -> None:
    both = where(await db.search("parser AND crashes", mode="keyword", raw=True))
    assert both == [("jsonkit-crash", 0)]
    without = where(await db.search("parser NOT crashes", mode="keyword", raw=True, k=20))
    assert without and ("jsonkit-crash", 0) not in without
    near = await db.search("NEAR(parser crashes, 2)", mode="keyword", raw=True)
    assert where(near) == [("jsonkit-crash", 0)] and near[0].highlights
    tool_only = where(await db.search("tool:parser", mode="keyword", raw=True))
    assert tool_only == [("jsonkit-crash", 1)]
    prefix = await db.search("deploy*", mode="keyword", raw=True)
    assert {h.session_id for h in prefix} == {"billing-deploy"}
    assert "[Deployed]" in " ".join(h.marked() for h in prefix)


@pytest.mark.parametrize("query", ["NEAR(parser", '"unterminated', "AND", "(", "parser)", "nocolumn:x", "*"])
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
async def test_raw_syntax_errors_are_named(db: Database, query: str, mode: str) -> None:
    with pytest.raises(SearchQueryError, match="invalid FTS5 query"):
        await db.search(query, mode=mode, raw=True)  # type: ignore[arg-type]


# --- embedders ---------------------------------------------------------------------------------------


async def test_query_embedder_mismatch_is_refused(db: Database) -> None:
    for mode in ("semantic", "hybrid"):
        with pytest.raises(EmbeddingMismatchError, match="384"):
            await db.search("parser", mode=mode, embedder=HashingEmbedder(256))  # type: ignore[arg-type]
    # keyword search needs no embedder, so any is fine
    assert await db.search("parser", mode="keyword", embedder=HashingEmbedder(256))


async def test_store_append_with_another_dimension_is_refused_and_writes_nothing(db: Database) -> None:
    store = SQLiteContextStore(db.connection, "jsonkit-crash", "/p/jsonkit", embedder=HashingEmbedder(128))
    with pytest.raises(EmbeddingMismatchError, match="128"):
        await store.append(text("user", "zebracorn sighting"))
    assert (await db.info("jsonkit-crash")).message_count == 4
    assert await db.search("zebracorn", mode="keyword") == []


async def test_semantic_without_embeddings(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"
    async with connect(path) as conn:
        await SQLiteContextStore(conn, "s", "/p").append_many(PARSER)
        db = Database(conn, path)
        with pytest.raises(NoEmbeddingsError, match="reindex"):
            await db.search("parser", mode="semantic")
        hybrid = await db.search("nested brackets")  # no embeddings: the keyword ranking alone
        assert where(hybrid) == [("s", 0)] and hybrid[0].semantic_rank is None
        with pytest.raises(NoEmbeddingsError):
            await db.similar("s", 0)


# --- similar ------------------------------------------------------------------------------------------


async def test_similar_finds_neighbours_but_not_itself(db: Database) -> None:
    hits = await db.similar("billing-deploy", 0, k=3)
    assert ("billing-deploy", 0) not in where(hits)
    assert where(hits)[0] == ("billing-deploy", 1)
    assert hits[0].semantic_rank == 1 and hits[0].snippet.startswith("Deployed billing")
    # a negative position counts from the end, as in Python
    assert where(await db.similar("billing-deploy", -2, k=3)) == where(hits)
    last = await db.similar("billing-deploy", 1, k=3)
    assert where(await db.similar("billing-deploy", -1, k=3)) == where(last)
    with pytest.raises(MessageNotFoundError, match="has no message 2 "):
        await db.similar("billing-deploy", 2)
    with pytest.raises(MessageNotFoundError, match="has no message -3 "):
        await db.similar("billing-deploy", -3)
    with pytest.raises(SessionNotFoundError):
        await db.similar("nope", 0)


# --- the exact fallback ----------------------------------------------------------------------------

_VOCAB = (  # noqa: SIM905
    "parser tokenizer bracket nested unicode escape cache invalidation retry backoff socket timeout "
    "database migration index query latency config permission denied deploy staging billing health "
    "endpoint chart render component effect loop memory pod restart kernel build compile error"
).split()


async def _corpus(path: Path, n_sessions: int = 12, per: int = 40) -> list[str]:
    rng = random.Random(5)
    async with connect(path) as conn:
        for s in range(n_sessions):
            store = SQLiteContextStore(conn, f"s{s:02d}", f"/p/{s % 3}", embedder=EMB)
            await store.append_many(
                [
                    text(
                        "user" if i % 2 == 0 else "assistant",
                        " ".join(rng.sample(_VOCAB, rng.randint(4, 12))),
                    )
                    for i in range(per)
                ]
            )
    return [" ".join(rng.sample(_VOCAB, 3)) for _ in range(12)]


async def test_exact_scan_without_sqlite_vec_gives_the_same_hits(tmp_path: Path) -> None:
    """480 messages, 100 candidates by binary code: the vec0 path re-scores a fraction of them,
    the connection without sqlite-vec scans them all; the hits are the same."""
    path = tmp_path / "fallback.db"
    queries = await _corpus(path)
    expected: dict[tuple[str, str], list[tuple[str, int]]] = {}
    async with open_database(path) as db:
        assert (await db.index_status()).semantic == "vec0"
        for q in queries:
            for mode in ("semantic", "hybrid"):
                expected[q, mode] = where(await db.search(q, mode=mode, k=5))  # type: ignore[arg-type]
        filtered = where(await db.search(queries[0], mode="semantic", project="/p/1", role="user"))
    async with plain_sqlean(path) as conn:
        plain = Database(conn, path)
        status = await plain.index_status()
        assert (status.vec_available, status.semantic) == (False, "exact")
        for (q, mode), hits in expected.items():
            assert where(await plain.search(q, mode=mode, k=5)) == hits  # type: ignore[arg-type]
        assert where(await plain.search(queries[0], mode="semantic", project="/p/1", role="user")) == filtered


async def test_stale_codes_fall_back_then_reindex_repairs_them(tmp_path: Path) -> None:
    path = tmp_path / "stale.db"
    queries = await _corpus(path, n_sessions=6)
    async with plain_sqlean(path) as conn:  # deletes without sqlite-vec: the codes go stale
        plain = Database(conn, path)
        assert await plain.delete(["s01"]) == ["s01"]
        await SQLiteContextStore(conn, "late", "/p/0", embedder=EMB).append(
            text("user", "parser tokenizer bracket nested unicode")
        )
    async with open_database(path) as db:
        status = await db.index_status()
        assert status.codes_stale and status.semantic == "exact" and status.vec_available
        exact = {q: where(await db.search(q, mode="semantic", k=5)) for q in queries}
        assert all("s01" not in {s for s, _ in hits} for hits in exact.values())
        late = await db.search("parser tokenizer bracket nested unicode", mode="semantic", k=1)
        assert where(late) == [("late", 0)]
        report = await db.reindex(EMB)
        assert (report.embedded, report.codes_added, report.codes_removed) == (0, 1, 40)
        assert not report.codes_stale
        status = await db.index_status()
        assert not status.codes_stale and status.semantic == "vec0"
        assert {q: where(await db.search(q, mode="semantic", k=5)) for q in queries} == exact
        assert where(await db.search("parser tokenizer bracket nested unicode", mode="semantic", k=1)) == [
            ("late", 0)
        ]


async def test_vectors_stored_before_the_codes_table_existed_are_not_lost(tmp_path: Path) -> None:
    """Embeddings written where sqlite-vec did not run, then more where it does: the codes
    table created by the second lacks the first, so it must be marked stale, not trusted."""
    path = tmp_path / "mixed.db"
    async with plain_sqlean(path) as conn:
        await SQLiteContextStore(conn, "first", "/p", embedder=EMB).append(
            text("user", "kernel panic after the driver update")
        )
    async with open_database(path) as db:
        await SQLiteContextStore(db.connection, "second", "/p", embedder=EMB).append(
            text("user", "chart renders twice")
        )
        assert (await db.index_status()).codes_stale
        assert where(await db.search("kernel panic driver", mode="semantic", k=1)) == [("first", 0)]
        await db.reindex(EMB)
        assert (await db.index_status()).semantic == "vec0"
        assert where(await db.search("kernel panic driver", mode="semantic", k=1)) == [("first", 0)]


# --- the paths large databases take, forced on small ones ---------------------------------------


@pytest.fixture
def vec0_for_filters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Filtered semantic searches through vec0 (``sid IN``) even over a handful of messages."""
    monkeypatch.setattr(search_module, "EXACT_ROWS", 0)


@pytest.mark.usefixtures("vec0_for_filters")
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
async def test_filtered_vec0_path_agrees_with_the_exact_scan(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "filtered.db"
    queries = await _corpus(path, n_sessions=6)
    async with open_database(path) as db:
        child = await db.fork("s02")  # inherits all 40: a session filter whose rows are s02's
        await SQLiteContextStore(db.connection, child, "/p/2", embedder=EMB).append(
            text("user", "parser tokenizer bracket nested unicode in the fork")
        )
        await SQLiteContextStore(db.connection, "s02", "/p/2", embedder=EMB).append_many(
            [text("user", f"parser tokenizer bracket after the fork {i}") for i in range(30)]
        )
        cases = [{"project": "/p/1"}, {"session_id": child}, {"session_id": child, "role": "user"}]
        expected = [
            [where(await db.search(q, mode=mode, k=5, **case)) for q in queries]  # type: ignore[arg-type]
            for case in cases
        ]
    async with plain_sqlean(path) as conn:
        plain = Database(conn, path)
        for case, hits in zip(cases, expected, strict=True):
            assert [where(await plain.search(q, mode=mode, k=5, **case)) for q in queries] == hits  # type: ignore[arg-type]
        # the fork's own message is found, the parent's messages after the fork are not
        mine = where(await plain.search("parser tokenizer bracket fork", mode=mode, session_id=child, k=50))  # type: ignore[arg-type]
        assert mine[0] == (child, 40) and all(pos <= 40 for _, pos in mine)
    assert all(pos <= 40 for hits in expected[1] for _, pos in hits)


async def test_words_in_most_messages_do_not_rank_on_a_large_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bm25 gives a word in over half the messages no weight; past PRUNE_MIN_ROWS it is left
    out of the ranking, and messages matching only it follow the ranked ones, newest first."""
    path = tmp_path / "common.db"
    async with connect(path) as conn:
        store = SQLiteContextStore(conn, "s", "/p")
        await store.append_many([text("user", f"common note {i}") for i in range(20)])
        await store.append(text("user", "common note about a rare zeppelin"))
        await store.append(text("user", "zeppelin only"))
    async with open_database(path) as db:
        exact = where(await db.search("common zeppelin", mode="keyword", k=5))
        monkeypatch.setattr(keyword_module, "PRUNE_MIN_ROWS", 10)
        pruned = await db.search("common zeppelin", mode="keyword", k=5)
        assert set(where(pruned)[:2]) == set(exact[:2]) == {("s", 20), ("s", 21)}
        assert [p for _, p in where(pruned)[2:]] == [19, 18, 17]  # newest first
        assert [h.score for h in pruned[2:]] == [0.0, 0.0, 0.0]
        everything = await db.search("common zeppelin", mode="keyword", k=100)
        assert sorted(p for _, p in where(everything)) == list(range(22))
        # raw queries are ranked as written
        raw = where(await db.search('"common" OR "zeppelin"', mode="keyword", raw=True, k=5))
        assert raw == exact


async def test_semantic_hits_highlight_the_querys_words_not_its_function_words(db: Database) -> None:
    hits = await db.search("the crash of the parser", mode="semantic", k=3)
    marked = {h.marked() for h in hits}
    assert "The JSON [parser] [crashes] on nested brackets like [[1, [2]], 3]." in marked
    assert "Let me read the [parser]." in marked
