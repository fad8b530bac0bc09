"""sqlite-vec's self-test runs once per driver and library in a process: a later connection
only loads the library (a cold open's largest cost was the probe), and still answers KNN."""

from __future__ import annotations

from array import array

import sqlean

from axio_context_sqlite.store.vec import load_sqlite_vec


def _traced_load() -> tuple[bool, list[str], sqlean.Connection]:
    conn = sqlean.connect(":memory:")
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    ok = load_sqlite_vec(conn)
    conn.set_trace_callback(None)
    return ok, seen, conn


def test_a_later_connection_skips_the_probe_and_still_runs_knn() -> None:
    first_ok, _, first = _traced_load()
    first.close()
    assert first_ok
    ok, seen, conn = _traced_load()
    try:
        assert ok
        assert not [s for s in seen if "axio_vec_probe" in s]  # the probe ran once, before
        conn.execute("CREATE VIRTUAL TABLE temp.t USING vec0(v float[2])")
        conn.executemany(
            "INSERT INTO temp.t (rowid, v) VALUES (?, ?)",
            [(1, array("f", [1.0, 0.0]).tobytes()), (2, array("f", [0.0, 1.0]).tobytes())],
        )
        near = conn.execute(
            "SELECT rowid FROM temp.t WHERE v MATCH ? AND k = 1", (array("f", [0.1, 0.9]).tobytes(),)
        ).fetchall()
        assert near == [(2,)]
    finally:
        conn.close()
