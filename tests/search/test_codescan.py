"""Semantic search's first pass in NumPy (:mod:`axio_context_sqlite.search.codescan`): the same
candidates as vec0's KNN, the same hits as the exact scan under every filter, a copy that follows
every write (its own connection's, another connection's, a slot vec0 reuses), and vec0 again for a
codes table it cannot read."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import sqlean
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context.embeddings import HashingEmbedder
from axio_context.testing import text
from axio_context_sqlite import Database, SQLiteContextStore, open_database
from axio_context_sqlite.search import codescan
from axio_context_sqlite.store import indexing
from axio_context_sqlite.store.calls import run
from axio_context_sqlite.store.files import RawConnection
from axio_context_sqlite.store.vec import binary_code, load_sqlite_vec, quantize, query_code
from tests.search.test_search import _corpus, plain_sqlean, where
from tests.search.test_vector_layout import make_outdated

EMB = HashingEmbedder()
DIM = 384


def vec_connection(path: Path) -> sqlean.Connection:
    raw = sqlean.connect(str(path), isolation_level=None, factory=RawConnection)
    assert load_sqlite_vec(raw)
    return raw


def query(words: str) -> tuple[bytes, bytes, bytes]:
    """The float32 vector of ``words``, its binary code and its int8 form."""
    vector = np.asarray(EMB.embed_sync([words])[0], dtype=np.float32).tobytes()
    return vector, binary_code(vector), quantize(vector)


def hamming(raw: sqlean.Connection, code: bytes, ids: list[int]) -> list[int]:
    """Each id's Hamming distance to ``code``, by sqlite-vec, smallest first."""
    return sorted(
        int(
            raw.execute(
                "SELECT vec_distance_hamming(vec_bit(code), vec_bit(?)) FROM message_codes WHERE rowid = ?",
                (code, i),
            ).fetchone()[0]
        )
        for i in ids
    )


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 70).flatmap(
        lambda n: st.lists(
            st.one_of(st.just(0.0), st.floats(-1e3, 1e3, width=32, allow_subnormal=False)),
            min_size=n,
            max_size=n,
        )
    ),
    st.integers(1, 3),
)
def test_the_query_code_is_binary_codes_bits(values: list[float], rotations: int) -> None:
    """The query's code in NumPy is :func:`binary_code`'s, bit for bit (sparse, odd-length and
    signed-zero vectors included)."""
    vector = np.asarray(values, dtype=np.float32).tobytes()
    expected = binary_code(vector, rotations)
    assert query_code(vector, len(expected)) == expected


async def test_the_nearest_codes_are_vec0s(tmp_path: Path) -> None:
    """By Hamming distance alone, with and without vec0's metadata filters: the same distances as
    vec0's own KNN (ties at the last place may pick other rows, never nearer or farther ones),
    before and after half the sessions are deleted (their codes stay in the chunks, unmarked)."""
    path = tmp_path / "codes.db"
    queries = await _corpus(path)
    raw = vec_connection(path)

    def compare() -> None:
        two = [r[0] for r in raw.execute("SELECT sid FROM sessions WHERE id IN ('s01', 's07')")]
        for words in queries:
            vector, code, _ = query(words)
            for where_sql, args, f in [
                ("", [], codescan.Filters()),
                (" AND role = ?", [0], codescan.Filters(role=0)),
                (" AND sid IN (?, ?)", two, codescan.Filters(sids=two)),
            ]:
                expected = [
                    r[0]
                    for r in raw.execute(
                        f"SELECT rowid FROM message_codes WHERE code MATCH vec_bit(?) AND k = 40{where_sql}",
                        (code, *args),
                    )
                ]
                found = codescan.nearest(raw, vector, 40, f)
                assert found is not None
                ids, complete = found
                assert len(ids) == len(expected) == 40 and not complete
                assert hamming(raw, code, ids) == hamming(raw, code, expected)

    try:
        compare()
        async with open_database(path) as db:
            assert len(await db.delete([f"s{i:02d}" for i in range(0, 12, 2)])) == 6
        compare()
        live = {r[0] for r in raw.execute("SELECT id FROM message_vectors")}
        # a freed slot keeps no code (zeros): nearest of all to a code of zeros, and never picked
        zeros = codescan.nearest(raw, bytes(4 * DIM), 40, codescan.Filters())
        assert zeros is not None and set(zeros[0]) <= live
        found = codescan.nearest(raw, query(queries[0])[0], 10_000, codescan.Filters())
        assert found is not None and found[1] and set(found[0]) == live
        # asking for more than pass the filters: all of them, and said to be all
        one = raw.execute("SELECT sid FROM sessions WHERE id = 's03'").fetchone()[0]
        everything = codescan.nearest(raw, query(queries[0])[0], 10_000, codescan.Filters(sids=[one]))
        assert everything is not None and everything[1] and len(everything[0]) == 40
    finally:
        raw.close()


async def test_wide_candidates_are_ranked_by_cosine(tmp_path: Path) -> None:
    """With the query's int8 vector: the ``count`` best by cosine among the ``wide`` nearest codes,
    checked against NumPy over the stored vectors; read from the database on the first search,
    from memory from the second, with the same answer."""
    path = tmp_path / "wide.db"
    queries = await _corpus(path)
    raw = vec_connection(path)
    try:
        stored = {
            int(i): np.frombuffer(b, dtype=np.int8)
            for i, b in raw.execute("SELECT id, embedding FROM message_vectors")
        }
        answers = []
        for _ in range(3):
            for words in queries:
                _, code, q8 = query(words)
                scan = codescan._scan_for(raw, DIM)
                ids, _ = scan.search(raw, code, 10, codescan.Filters(), q8, wide=120)
                near, _ = scan.search(raw, code, 120, codescan.Filters())
                q = np.frombuffer(q8, dtype=np.int8).astype(np.float64)
                cosine = {
                    i: float(stored[i] @ q / np.linalg.norm(stored[i].astype(np.float64))) for i in near
                }
                best = sorted(near, key=lambda i: -cosine[i])[:10]
                assert set(ids) <= set(near)
                assert [round(cosine[i], 5) for i in ids] == [round(cosine[i], 5) for i in best]
                answers.append(ids)
        kept = codescan.held(raw)
        assert kept is not None and kept.vectors is not None  # held from the second search
        n = len(queries)
        assert answers[:n] == answers[n : 2 * n] == answers[2 * n :]
    finally:
        raw.close()


async def test_every_filter_gives_the_exact_scans_hits(tmp_path: Path) -> None:
    """Role, time, project, one session's transcript (a fork whose parent went on: rows outside
    its lineage) and "more like this one": the same hits as the exact scan without sqlite-vec."""
    path = tmp_path / "filters.db"
    queries = await _corpus(path)
    async with open_database(path) as db:
        parent = SQLiteContextStore(db.connection, "s03", "/p/0", embedder=EMB)
        fork = await parent.fork()
        await parent.append_many([text("user", f"{queries[1]} after the fork {i}") for i in range(6)])
        await fork.append(text("user", f"{queries[2]} only in the fork"))
        fork_id = fork.session_id
    cutoff = datetime.fromtimestamp(0, UTC)
    searches: list[dict[str, object]] = [
        {},
        {"role": "user"},
        {"project": "/p/1"},
        {"project": "/p/2", "role": "assistant"},
        {"session_id": fork_id},
        {"session_id": "s03"},
        {"since": cutoff},
    ]
    expected = {}
    async with open_database(path) as db:
        for words in queries[:6]:
            for i, filters in enumerate(searches):
                expected[words, i] = where(await db.search(words, mode="semantic", k=8, **filters))  # type: ignore[arg-type]
        for position in (0, 7, 39):
            expected["similar", position] = where((await db.similar("s05", position, k=8)).hits)
    async with plain_sqlean(path) as conn:
        plain = Database(conn, path)
        assert (await plain.index_status()).semantic == "exact"
        for (words, i), hits in expected.items():
            if words == "similar":
                assert hits and where((await plain.similar("s05", i, k=8)).hits) == hits
                continue
            assert hits and where(await plain.search(words, mode="semantic", k=8, **searches[i])) == hits  # type: ignore[arg-type]


async def test_the_copy_follows_every_write(tmp_path: Path) -> None:
    """Appends on the searching connection, a delete, another connection's append, and a message
    re-embedded into the very slot vec0 freed for it: each shows in the next search."""
    path = tmp_path / "follow.db"
    await _corpus(path, n_sessions=3)
    async with open_database(path) as db:
        for _ in range(2):  # the second search holds the vectors
            assert (await db.search("kestrel lantern", mode="semantic", k=3)).hits
        store = SQLiteContextStore(db.connection, "late", "/p/0", embedder=EMB)
        await store.append(text("user", "kestrel lantern quasar"))
        hits = await db.search("kestrel lantern quasar", mode="semantic", k=1)
        assert where(hits.hits) == [("late", 0)]
        assert await db.delete(["late"]) == ["late"]
        hits = await db.search("kestrel lantern quasar", mode="semantic", k=3)
        assert "late" not in {h.session_id for h in hits.hits}
        async with open_database(path) as other:  # another connection's commit
            await SQLiteContextStore(other.connection, "other", "/p/1", embedder=EMB).append(
                text("user", "zeppelin marmalade")
            )
        hits = await db.search("zeppelin marmalade", mode="semantic", k=1)
        assert where(hits.hits) == [("other", 0)]
        # the newest message's code and vector replaced under the same rowid, by another
        # connection, as storing a new embedding for it does: vec0 puts it back in its slot
        raw = vec_connection(path)
        try:
            newest = (
                "SELECT rowid, chunk_offset FROM message_codes_rowids"
                " ORDER BY chunk_id DESC, chunk_offset DESC"
            )
            mid, slot = raw.execute(newest).fetchone()
            sid = mid >> 32
            vector = np.asarray(EMB.embed_sync(["obsidian tuba"])[0], dtype=np.float32).tobytes()
            raw.execute("BEGIN IMMEDIATE")
            indexing.store_embeddings(
                raw, EMB.model, DIM, [(mid, quantize(vector), binary_code(vector), sid, "/p/1", 0, 0)]
            )
            raw.execute("COMMIT")
            assert (
                raw.execute(
                    "SELECT chunk_offset FROM message_codes_rowids WHERE rowid = ?", (mid,)
                ).fetchone()[0]
                == slot
            )
        finally:
            raw.close()
        hits = await db.search("obsidian tuba", mode="semantic", k=1)
        assert [h.session_id for h in hits.hits] == ["other"] and hits.hits[0].score > 0.99
        kept = await run(db.connection, codescan.held)
        assert kept is not None
        row = int(np.flatnonzero(kept.ids == mid)[0])
        assert kept.codes[:, row].tobytes() == binary_code(vector)
        assert kept.vectors is not None and kept.vectors[row].tobytes() == quantize(vector)


async def test_codes_it_cannot_read_are_asked_of_vec0(tmp_path: Path) -> None:
    """A codes table laid out otherwise (here with an auxiliary column): vec0's KNN answers, with
    the exact scan's hits; an older table with a project text column is read, filters and all."""
    path = tmp_path / "other.db"
    queries = await _corpus(path)
    raw = vec_connection(path)
    try:
        rows = raw.execute("SELECT rowid, sid, role, created_at, code FROM message_codes").fetchall()
        raw.execute("BEGIN")
        raw.execute("DROP TABLE message_codes")
        raw.execute(
            "CREATE VIRTUAL TABLE message_codes USING vec0(sid integer, role integer, created_at integer,"
            f" code bit[{len(rows[0][4]) * 8}], +note text)"
        )
        raw.executemany(
            "INSERT INTO message_codes (rowid, sid, role, created_at, code) VALUES (?, ?, ?, ?, vec_bit(?))",
            rows,
        )
        raw.execute("COMMIT")
        assert codescan.nearest(raw, query(queries[0])[0], 10, codescan.Filters()) is None
    finally:
        raw.close()
    searches = [(q, f) for q in queries[:4] for f in ({}, {"role": "user", "project": "/p/1"})]
    async with open_database(path) as db:
        got = [where(await db.search(q, mode="semantic", k=6, **f)) for q, f in searches]  # type: ignore[arg-type]
    make_outdated(path)
    raw = vec_connection(path)
    try:
        assert codescan.nearest(raw, query(queries[0])[0], 10, codescan.Filters(role=1)) is not None
    finally:
        raw.close()
    async with open_database(path) as db:
        outdated = [where(await db.search(q, mode="semantic", k=6, **f)) for q, f in searches]  # type: ignore[arg-type]
    async with plain_sqlean(path) as conn:
        plain = Database(conn, path)
        exact = [where(await plain.search(q, mode="semantic", k=6, **f)) for q, f in searches]  # type: ignore[arg-type]
    assert got == outdated == exact and all(exact)


async def test_a_driver_connection_that_keeps_nothing_still_searches(tmp_path: Path) -> None:
    """The copy is kept on the connection (the store's connections take attributes); a plain
    driver connection keeps none, and gets a fresh copy each search, with the same answer."""
    path = tmp_path / "plain.db"
    queries = await _corpus(path, n_sessions=4)
    plain = sqlean.connect(str(path), isolation_level=None)
    cached = vec_connection(path)
    try:
        assert load_sqlite_vec(plain)
        for words in queries:
            vector = query(words)[0]
            assert codescan.nearest(plain, vector, 10, codescan.Filters(), rescore=True) == codescan.nearest(
                cached, vector, 10, codescan.Filters(), rescore=True
            )
    finally:
        plain.close()
        cached.close()


async def test_search_runs_on_the_databases_own_connection(tmp_path: Path) -> None:
    """The store's connection is one that keeps the copy (its factory's class takes attributes)."""
    path = tmp_path / "own.db"
    await _corpus(path, n_sessions=2)
    async with open_database(path) as db:
        await db.search("kestrel", mode="semantic")
        kept = await run(db.connection, codescan.held)
        assert kept is not None and kept.searches == 1


async def test_past_its_limits_it_holds_less_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vectors past :data:`VECTOR_BYTES` are read per search instead of held; codes past
    :data:`CODE_BYTES` are not held at all (vec0's KNN answers). The hits stay the exact scan's."""
    path = tmp_path / "limits.db"
    queries = await _corpus(path)
    async with plain_sqlean(path) as conn:
        plain = Database(conn, path)
        exact = [where(await plain.search(q, mode="semantic", k=6)) for q in queries[:4]]
    monkeypatch.setattr(codescan, "VECTOR_BYTES", 1_000)
    async with open_database(path) as db:
        for _ in range(2):
            assert [where(await db.search(q, mode="semantic", k=6)) for q in queries[:4]] == exact
        kept = await run(db.connection, codescan.held)
        assert kept is not None and kept.searches == 8 and kept.vectors is None
    monkeypatch.setattr(codescan, "CODE_BYTES", 1_000)
    async with open_database(path) as db:
        assert [where(await db.search(q, mode="semantic", k=6)) for q in queries[:4]] == exact
        assert await run(db.connection, codescan.held) is None


async def test_a_nan_vector_stored_before_they_were_refused_is_passed_over(tmp_path: Path) -> None:
    """A float32 vector holding NaN (an old database) cannot be quantized: reading candidates'
    vectors, and holding them all, pass over it instead of failing the search."""
    path = tmp_path / "nan.db"
    queries = await _corpus(path, n_sessions=3)
    raw = vec_connection(path)
    try:
        poisoned = raw.execute("SELECT id FROM message_vectors ORDER BY id LIMIT 1 OFFSET 7").fetchone()[0]
        raw.execute(
            "UPDATE message_vectors SET embedding = ? WHERE id = ?",
            (np.full(DIM, np.nan, dtype=np.float32).tobytes(), poisoned),
        )
        for _ in range(3):  # read for the candidates, then held, then from memory
            for words in queries:
                found = codescan.nearest(raw, query(words)[0], 5, codescan.Filters(), rescore=True)
                assert found is not None and len(found[0]) == 5 and poisoned not in found[0]
        kept = codescan.held(raw)
        assert kept is not None and kept.vectors is not None
    finally:
        raw.close()
