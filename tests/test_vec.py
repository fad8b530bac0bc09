"""The sqlite-vec probe and the exact brute-force KNN, against real sqlite-vec."""

from __future__ import annotations

import math
import random
import sqlite3
from array import array
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlean

from axio_context.embeddings import HashingEmbedder, vector_to_blob
from axio_context_sqlite.vec import brute_force_knn, load_sqlite_vec, probe_sqlite_vec


@pytest.fixture
def vec_conn() -> Iterator[sqlean.Connection]:
    conn = sqlean.connect(":memory:")
    assert load_sqlite_vec(conn)
    yield conn
    conn.close()


def unit(rng: random.Random, dim: int) -> array:
    v = [rng.gauss(0.0, 1.0) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v))
    return array("f", [x / n for x in v])


def test_probe_passes_with_sqlite_vec_loaded(vec_conn: sqlean.Connection) -> None:
    assert probe_sqlite_vec(vec_conn)
    assert probe_sqlite_vec(vec_conn)  # repeatable
    assert vec_conn.execute("SELECT vec_version()").fetchone()[0].startswith("v")


def test_probe_fails_cleanly_without_sqlite_vec() -> None:
    """A connection where the extension never loaded stands in for a broken binary."""
    conn = sqlean.connect(":memory:")
    try:
        assert probe_sqlite_vec(conn) is False
        conn.execute("CREATE TABLE t (x)")  # the connection is still usable afterwards
    finally:
        conn.close()


def test_load_fails_cleanly_on_a_driver_that_cannot_load_extensions() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        ok = load_sqlite_vec(conn)
        if not hasattr(conn, "enable_load_extension"):
            assert ok is False  # this machine's pyenv Python: no extension loading at all
        assert probe_sqlite_vec(conn) is ok
    finally:
        conn.close()


def test_load_fails_cleanly_when_the_extension_file_is_broken(tmp_path: Path) -> None:
    broken = tmp_path / "vec0.so"
    broken.write_bytes(b"\x7fELF this is not a shared library")
    conn = sqlean.connect(":memory:")
    try:
        conn.enable_load_extension(True)
        with pytest.raises(sqlean.OperationalError):
            conn.load_extension(str(broken))
        assert probe_sqlite_vec(conn) is False
    finally:
        conn.close()


def test_probe_writes_nothing_to_the_database_file(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    conn = sqlean.connect(path)
    try:
        conn.execute("CREATE TABLE kept (x)")
        conn.commit()
        before = path.read_bytes()
        assert load_sqlite_vec(conn)
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("kept",)]
        # vec0 leaves temp.sqlite_sequence behind (its shadow tables use AUTOINCREMENT); it goes
        # with the connection. The probe's own tables are gone.
        temp = {r[0] for r in conn.execute("SELECT name FROM sqlite_temp_master")}
        assert temp <= {"sqlite_sequence"}
        assert not conn.in_transaction
    finally:
        conn.close()
    assert path.read_bytes() == before


def test_brute_force_matches_vec0_knn_exactly(vec_conn: sqlean.Connection) -> None:
    rng = random.Random(5)
    dim = 48
    rows = [(i, unit(rng, dim)) for i in range(1, 801)]
    vec_conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(e float[{dim}])")
    vec_conn.executemany("INSERT INTO v(rowid, e) VALUES (?, ?)", [(i, vector_to_blob(x)) for i, x in rows])
    for _ in range(10):
        q = unit(rng, dim)
        expected = vec_conn.execute(
            "SELECT rowid, distance FROM v WHERE e MATCH ? AND k = 10 ORDER BY distance", (q.tobytes(),)
        ).fetchall()
        blobs = [(i, x.tobytes()) for i, x in rows]
        got = brute_force_knn(q, blobs, 10)
        assert [r for r, _ in got] == [r for r, _ in expected]
        for (_, d_got), (_, d_vec) in zip(got, expected, strict=True):
            assert d_got == pytest.approx(d_vec, abs=1e-5)
        assert brute_force_knn(q, rows, 10) == got  # arrays and BLOBs alike


async def test_brute_force_on_hashing_vectors_finds_the_paraphrase() -> None:
    emb = HashingEmbedder()
    texts = [
        "fixed the parser crash on nested brackets",
        "raised the pod memory limit",
        "lazy-load the chart",
    ]
    vecs = await emb.embed(texts)
    (q,) = await emb.embed(["parser crashed with nested brackets"])
    rows = [(i, vector_to_blob(v)) for i, v in enumerate(vecs, start=1)]
    assert brute_force_knn(q, rows, 1)[0][0] == 1


def test_brute_force_ties_break_by_rowid_and_edges() -> None:
    same = array("f", [1.0, 0.0])
    assert brute_force_knn(same, [(9, same), (3, same), (5, array("f", [0.0, 1.0]))], 2) == [
        (3, 0.0),
        (9, 0.0),
    ]
    assert brute_force_knn(same, [(1, same)], 0) == []
    assert brute_force_knn(same, [], 5) == []
    assert brute_force_knn(same, [(1, same)], 5) == [(1, 0.0)]
    zero = array("f", [0.0, 0.0])  # the vector of a text with nothing to embed
    assert brute_force_knn(zero, [(1, same)], 1) == [(1, 1.0)]


def test_brute_force_refuses_a_wrong_dimension() -> None:
    with pytest.raises(ValueError, match="row 7 has a 3-d vector, the query is 2-d"):
        brute_force_knn([1.0, 0.0], [(7, array("f", [1.0, 0.0, 0.0]))], 1)


def test_probe_leaves_a_callers_transaction_open_and_uncommitted(tmp_path: Path) -> None:
    conn = sqlean.connect(tmp_path / "db.sqlite")
    try:
        assert load_sqlite_vec(conn)
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (1)")
        assert conn.in_transaction
        assert probe_sqlite_vec(conn)
        assert conn.in_transaction
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    finally:
        conn.close()


def test_probe_on_an_autocommit_connection() -> None:
    conn = sqlean.connect(":memory:", isolation_level=None)
    try:
        assert load_sqlite_vec(conn)
        assert not conn.in_transaction
    finally:
        conn.close()
