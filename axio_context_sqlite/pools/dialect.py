"""What queues and pools say in SQLite's words (:class:`SQLitePoolSQL`): log positions come from
``sqlite_sequence`` (AUTOINCREMENT never reuses one), ``select`` ranks descriptions with FTS5's
bm25 and embeddings with sqlite-vec's ``vec_distance_cosine`` when it is loaded."""

from __future__ import annotations

from typing import Any, Final

from axio_context.pools.sql import PoolSQL
from axio_context.pools.sql.plans import chain_owners
from axio_context.sql import Dialect, Execute, Plan, Rows, Value

from ..search.fts import match_expression

__all__ = ["SQLITE_POOLS", "SQLitePoolSQL"]

_TOP: Final = "(SELECT IFNULL(MAX(seq), 0) FROM main.sqlite_sequence WHERE name = 'context_pool_entries')"


def _visible_first(sql: str, params: tuple[Any, ...], visible: dict[int, str], depth: int) -> Plan[list[str]]:
    """Run ``sql`` (seqs, best first, ending in ``LIMIT ?``) and keep the visible ones: first
    with a limit a little past ``depth`` (most entries are visible), else without one."""
    out: list[str] = []
    for limit in (depth * 4, -1):
        rows = yield Rows(sql, (*params, limit))
        out = [visible[int(r[0])] for r in rows if int(r[0]) in visible][:depth]
        if len(out) >= depth or len(rows) < limit or limit < 0:
            break
    return out


class SQLitePoolSQL(PoolSQL):
    """SQLite's statements for queues and pools."""

    new_seq = _TOP.replace("IFNULL(MAX(seq), 0)", "IFNULL(MAX(seq), 0) + 1")
    log_top = _TOP
    vectors_probe = "SELECT EXISTS (SELECT 1 FROM pragma_function_list WHERE name = 'vec_distance_cosine')"

    def keyword_ranking(self, d: Dialect, query: str, visible: dict[int, str], depth: int) -> Plan[list[str]]:
        expr = match_expression(query, operator="OR")
        if expr is None:
            return []
        return (
            yield from _visible_first(
                "SELECT rowid FROM context_pool_fts WHERE context_pool_fts MATCH ? ORDER BY rank LIMIT ?",
                (expr,),
                visible,
                depth,
            )
        )

    def nearest(
        self, d: Dialect, model: str, query: bytes, cid: int, visible: dict[int, str], depth: int
    ) -> Plan[list[str]]:
        owners = yield from chain_owners(cid)
        return (
            yield from _visible_first(
                "SELECT seq FROM (SELECT v.seq AS seq, vec_distance_cosine(v.embedding, ?) AS d"
                " FROM context_pool_vectors v JOIN context_pool_entries e ON e.seq = v.seq"
                f" WHERE v.model = ? AND e.owner IN ({', '.join('?' * len(owners))}))"
                " WHERE d IS NOT NULL ORDER BY d, seq LIMIT ?",
                (query, model, *owners),
                visible,
                depth,
            )
        )

    def log_start(self) -> Plan[int]:
        return int((yield Value(f"SELECT {_TOP}")))

    def advance_log(self, top: int) -> Plan[None]:
        yield Execute(
            "INSERT INTO main.sqlite_sequence (name, seq) SELECT 'context_pool_entries', 0"
            " WHERE NOT EXISTS (SELECT 1 FROM main.sqlite_sequence WHERE name = 'context_pool_entries')"
        )
        yield Execute(
            "UPDATE main.sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'context_pool_entries'", (top,)
        )


#: The statements every SQLite queue and pool uses.
SQLITE_POOLS: Final = SQLitePoolSQL()
