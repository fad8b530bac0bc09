"""Reindex (resumable, rebuild to another model), index status, recall@5 of each mode on the
labelled set through the real store, and keyword search on a database upgraded from schema v1."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from axio_context.embeddings import Embedder, HashingEmbedder, Vector
from axio_context.errors import EmbeddingMismatchError
from axio_context.testing import text
from axio_context_sqlite import Database, SQLiteContextStore, connect, open_database
from axio_context_sqlite.store.vec import code_bits
from tests.fixtures.make_fixture import load
from tests.support.retrieval_set import load_retrieval_set, recall_at
from tests.support.sqlite_checks import raw_connect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Interrupted(Exception):
    pass


class Flaky:
    """Wraps an embedder and fails on the call after ``ok_calls`` (a crash mid-reindex)."""

    def __init__(self, inner: Embedder, ok_calls: int) -> None:
        self.inner, self.ok_calls, self.calls = inner, ok_calls, 0
        self.model, self.dimension = inner.model, inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        self.calls += 1
        if self.calls > self.ok_calls:
            raise Interrupted
        return await self.inner.embed(texts)


def counts(path: Path) -> dict[str, int]:
    db = raw_connect(path)
    try:
        return {
            "messages": db.execute("SELECT COUNT(*) FROM messages").fetchone()[0],
            "vectors": db.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0],
            "dims": db.execute("SELECT COUNT(DISTINCT length(embedding)) FROM message_vectors").fetchone()[0],
        }
    finally:
        db.close()


async def fill_plain(path: Path, sessions: int = 5, per: int = 100) -> None:
    """Messages stored without an embedder (one in ten has no text to embed)."""
    async with connect(path) as conn:
        for s in range(sessions):
            store = SQLiteContextStore(conn, f"s{s}", "/p")
            await store.append_many(
                [
                    text("user", "" if i % 10 == 9 else f"message {i} of session {s} about topic{i % 7}")
                    for i in range(per)
                ]
            )


async def test_reindex_is_resumable_and_embeds_each_message_once(tmp_path: Path) -> None:
    path = tmp_path / "resume.db"
    await fill_plain(path)
    emb = HashingEmbedder()
    steps: list[tuple[str, int, int]] = []
    async with open_database(path) as db:
        status = await db.index_status()
        assert (status.model, status.embedded, status.messages, status.semantic) == (None, 0, 500, "none")
        with pytest.raises(Interrupted):
            await db.reindex(Flaky(emb, ok_calls=3), batch_size=64)
        first = 3 * 64 - sum(1 for i in range(3 * 64) if i % 10 == 9)  # three batches, less empty texts
        assert (await db.index_status()).embedded == first
        report = await db.reindex(emb, batch_size=64, progress=lambda *a: steps.append(a))
        # messages without text never get an embedding, so every run looks at them again
        assert (report.embedded, report.without_text) == (450 - first, 50)
        status = await db.index_status()
        assert (status.embedded, status.codes_stale, status.semantic) == (450, False, "vec0")
        # a third run finds nothing left to embed
        again = await db.reindex(emb, batch_size=64)
        assert (again.embedded, again.codes_added, again.codes_removed) == (0, 0, 0)
    assert counts(path) == {"messages": 500, "vectors": 450, "dims": 1}
    raw = raw_connect(path)
    try:
        from axio_context_sqlite.store.vec import load_sqlite_vec

        assert load_sqlite_vec(raw)
        assert raw.execute("SELECT COUNT(*) FROM message_codes").fetchone()[0] == 450
    finally:
        raw.close()
    embedding = [s for s in steps if s[0] == "embedding"]
    assert embedding[0][1] == 0 and embedding[-1][1] == embedding[-1][2]
    assert [d for _, d, _ in embedding] == sorted(d for _, d, _ in embedding)


async def test_reindex_refuses_another_model_unless_rebuilding(tmp_path: Path) -> None:
    path = tmp_path / "rebuild.db"
    await fill_plain(path, sessions=2)
    async with open_database(path) as db:
        await db.reindex(HashingEmbedder())
        with pytest.raises(EmbeddingMismatchError, match="--rebuild"):
            await db.reindex(HashingEmbedder(128))
        # a rebuild interrupted midway: the database already speaks the new model only
        with pytest.raises(Interrupted):
            await db.reindex(Flaky(HashingEmbedder(128), ok_calls=1), batch_size=50, rebuild=True)
        status = await db.index_status()
        assert (status.model, status.dimension, status.embedded) == ("axio-hashing-v1", 128, 45)
        assert counts(path)["dims"] == 1
        with pytest.raises(EmbeddingMismatchError):
            await db.search("topic3", mode="semantic", embedder=HashingEmbedder())
        with pytest.raises(EmbeddingMismatchError):  # an old-model writer is refused, not mixed in
            await SQLiteContextStore(db.connection, "s0", "/p", embedder=HashingEmbedder()).append(
                text("user", "late")
            )
        report = await db.reindex(HashingEmbedder(128))  # resumes the fill
        assert report.embedded == 135
        status = await db.index_status()
        assert (status.embedded, status.semantic) == (180, "vec0")
        hits = await db.search("topic3 session 1", mode="semantic", embedder=HashingEmbedder(128))
        assert hits and "topic3" in hits[0].snippet
        # the default embedder follows the database: hashing at 128
        assert (await db.embedder()).dimension == 128
    raw = raw_connect(path)
    try:
        from axio_context_sqlite.store.vec import load_sqlite_vec

        assert load_sqlite_vec(raw)
        sql = raw.execute("SELECT sql FROM sqlite_master WHERE name = 'message_codes'").fetchone()[0]
        assert f"bit[{code_bits(128)}]" in sql
        assert raw.execute("SELECT COUNT(*) FROM message_codes").fetchone()[0] == 180
    finally:
        raw.close()


async def test_reindex_on_an_empty_database(tmp_path: Path) -> None:
    async with open_database(tmp_path / "empty.db") as db:
        report = await db.reindex(HashingEmbedder())
        assert (report.embedded, report.without_text, report.codes_added) == (0, 0, 0)
        assert (await db.index_status()).semantic == "none"


async def test_appends_with_an_embedder_keep_codes_in_step(tmp_path: Path) -> None:
    path = tmp_path / "codes.db"
    async with open_database(path) as db:
        store = SQLiteContextStore(db.connection, "s", "/p", embedder=HashingEmbedder())
        await store.append_many([text("user", f"note {i} about caching") for i in range(5)])
        fork = await store.fork()
        await store.pop()  # the fork still needs position 4: it gets a copy, with its embedding
        await fork.append(text("user", "fork note about caching"))
        status = await db.index_status()
        assert (status.embedded, status.codes_stale, status.semantic) == (6, False, "vec0")
        hits = await db.search("note 4 about caching", mode="semantic", k=1)
        assert [(h.session_id, h.position) for h in hits] == [(fork.session_id, 4)]


# --- recall on the labelled set, through the store and Database.search ------------------------------


@pytest.fixture(scope="module")
def labelled_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    rs = load_retrieval_set()
    path = tmp_path_factory.mktemp("recall") / "labelled.db"

    async def build() -> None:
        async with connect(path) as conn:
            by: dict[tuple[str, str], list[object]] = {}
            for m in rs.messages:
                by.setdefault((m.session_id, m.project), []).append(m.message)
            for (sid, project), messages in by.items():
                store = SQLiteContextStore(conn, sid, project, embedder=HashingEmbedder())
                await store.append_many(messages)  # type: ignore[arg-type]

    asyncio.run(build())
    return path


async def _recall(db: Database, mode: str, kinds: set[str] | None = None) -> float:
    rs = load_retrieval_set()
    scores = []
    for q in rs.queries:
        if kinds is not None and q.kind not in kinds:
            continue
        hits = await db.search(q.query, mode=mode, k=5)  # type: ignore[arg-type]
        scores.append(recall_at([f"{h.session_id}:{h.position}" for h in hits], q.relevant, 5))
    return sum(scores) / len(scores)


@pytest.mark.parametrize(("mode", "floor"), [("keyword", 0.9), ("semantic", 0.85), ("hybrid", 0.9)])
async def test_recall_at_5_through_the_store(labelled_db: Path, mode: str, floor: float) -> None:
    """Measured when written: keyword 0.933, semantic 0.900, hybrid 0.950."""
    async with open_database(labelled_db) as db:
        assert await _recall(db, mode) >= floor


async def test_exact_and_identifier_queries_are_all_found(labelled_db: Path) -> None:
    async with open_database(labelled_db) as db:
        for mode in ("keyword", "hybrid"):
            assert await _recall(db, mode, {"identifier", "exact"}) == 1.0
        assert await _recall(db, "semantic", {"paraphrase"}) >= 0.75


# --- an old database ------------------------------------------------------------------------------


async def test_a_v1_database_upgraded_is_keyword_searchable(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    load((FIXTURES / "schema_v1.sql").read_text(), path)
    async with open_database(path) as db:
        hits = await db.search("quick brown fox", mode="keyword")
        assert hits and "[quick] [brown] [fox]" in hits[0].marked()
        survivors = await db.search("fork survives", mode="keyword")
        assert survivors[0].marked() == "the [fork] [survives]"
        assert {h.snippet for h in survivors[1:]} == {"fork one", "fork two"}
        # nothing is embedded yet: hybrid is the keyword ranking
        assert [h.snippet for h in await db.search("fork survives")] == [h.snippet for h in survivors]
        report = await db.reindex(HashingEmbedder())
        assert report.embedded > 0
        semantic = await db.search("the fork survived", mode="semantic", k=1)
        assert semantic[0].snippet == "the fork survives"
