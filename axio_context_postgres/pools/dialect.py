"""What queues and pools say in PostgreSQL's words (:class:`PostgresPoolSQL`): log positions
from the ``context_pool_seq`` sequence (taken under the container's row lock), a queue's items
inserted in one statement (``unnest``), ``select`` over the generated ``tsvector`` (English
stemming as SQLite's porter tokenizer, any of the query's words) and pgvector's ``<=>`` when
the extension is installed; embeddings are ``real[]``."""

from __future__ import annotations

import re
from array import array
from typing import Any, Final

from axio_context.pools.selection import word_ranking
from axio_context.pools.sql import PoolSQL
from axio_context.pools.sql.rows import Packed
from axio_context.sql import Dialect, Execute, Plan, Rows, Value

from ..runner import POSTGRES

__all__ = ["POSTGRES_POOLS", "PostgresPoolSQL", "tsquery_text"]

_WORD: Final = re.compile(r"[^\W_]+")
# Many entries at once, in order, each its own new key (a queue's): ord is the entry's seq.
_INSERT_MANY: Final = (
    "INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, extra)"
    " SELECT s, ?, k, s, d, ct, x FROM (SELECT nextval('context_pool_seq') AS s, k, d, ct, x"
    " FROM unnest(?::text[], ?::text[], ?::bytea[], ?::bytea[]) WITH ORDINALITY AS u (k, d, ct, x, n)"
    " ORDER BY n) fresh RETURNING seq"
)
_KEYWORD: Final = (
    "SELECT e.seq FROM context_pool_entries e, to_tsquery('english', ?) AS q"
    " WHERE e.seq = ANY(?::bigint[]) AND e.tsv @@ q ORDER BY ts_rank(e.tsv, q) DESC, e.seq LIMIT ?"
)
# Exact cosine distance over the shown entries' embeddings of one model and dimension; a zero
# vector's distance is NaN (undefined): left out.
_NEAREST: Final = (
    "SELECT seq FROM (SELECT seq, embedding::vector <=> ?::real[]::vector AS d FROM context_pool_vectors"
    " WHERE model = ? AND seq = ANY(?::bigint[]) AND cardinality(embedding) = cardinality(?::real[]))"
    " ranked WHERE d <> 'NaN'::float8 ORDER BY d, seq LIMIT ?"
)


_DESCRIBED: Final = (
    "SELECT seq, description FROM context_pool_entries WHERE seq = ANY(?::bigint[]) ORDER BY seq"
)


def tsquery_text(query: str) -> str | None:
    """The query's words joined by ``|`` (any of them), as ``to_tsquery`` text: only letters
    and digits reach the parser, so a typed query is never a syntax error. None: no word."""
    found = _WORD.findall(query)
    return " | ".join(found) if found else None


class PostgresPoolSQL(PoolSQL):
    """PostgreSQL's statements for queues and pools."""

    new_seq = "nextval('context_pool_seq')"
    log_top = "nextval('context_pool_seq')"
    vectors_probe = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')"
    vector_placeholder = "?::real[]"

    def insert_entries(self, d: Dialect, owner: int, items: list[Packed]) -> Plan[list[int]]:
        keys, *payloads = ([item[n] for item in items] for n in range(4))
        # description, content and extra are what a user wrote: sealed under a key (see ..sealed)
        return [int(r[0]) for r in (yield Rows(_INSERT_MANY, (owner, keys, *map(d.sealed, payloads))))]

    def sealed(self, value: Any) -> Any:
        return POSTGRES.sealed(value)

    def vector_param(self, blob: bytes) -> Any:
        return array("f", blob).tolist()

    def vector_blob(self, stored: Any) -> bytes:
        return array("f", stored).tobytes()

    def keyword_ranking(self, d: Dialect, query: str, visible: dict[int, str], depth: int) -> Plan[list[str]]:
        if (yield from d.sealing()):
            # Sealed descriptions index no words: ranked here, as the in-memory pool ranks them.
            rows = yield Rows(_DESCRIBED, (list(visible),))
            return word_ranking(query, [(visible[int(s)], str(t)) for s, t in rows if t])[:depth]
        text = tsquery_text(query)
        if text is None:
            return []
        return [visible[int(r[0])] for r in (yield Rows(_KEYWORD, (text, list(visible), depth)))]

    def nearest(
        self, d: Dialect, model: str, query: bytes, cid: int, visible: dict[int, str], depth: int
    ) -> Plan[list[str]]:
        q = self.vector_param(query)
        return [visible[int(r[0])] for r in (yield Rows(_NEAREST, (q, model, list(visible), q, depth)))]

    def lock_log(self) -> Plan[None]:
        # Two copies take turns here; every writer's later values exceed what a copy sets.
        yield Execute("LOCK TABLE context_pools IN SHARE ROW EXCLUSIVE MODE")

    def log_start(self) -> Plan[int]:
        return int(
            (yield Value("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM context_pool_seq"))
        )

    def advance_log(self, top: int) -> Plan[None]:
        if top > 0:
            yield Execute("SELECT setval('context_pool_seq', ?)", (top,))


#: The statements every PostgreSQL queue and pool uses.
POSTGRES_POOLS: Final = PostgresPoolSQL()
