"""The labelled retrieval set (tests/data/retrieval.json) and recall@k of each search mode on it.

The set holds short agent conversations and queries, each with the messages (``session:position``)
it should find. :func:`build_index` loads it into a real SQLite connection (FTS5 and sqlite-vec);
:func:`evaluate` measures recall@k for keyword, semantic and hybrid search. Used by the tests,
which assert floors, and by ``python -m bench.bench_vectors``, which prints the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import msgspec

from axio_context import Message
from axio_context.embeddings import HashingEmbedder, vector_to_blob
from axio_context.messages import searchable_text, text_columns
from axio_context_sqlite.search.fts import BM25_WEIGHTS, FTS_TOKENIZE, match_expression
from axio_context_sqlite.search.ranking import reciprocal_rank_fusion

DATA = Path(__file__).parents[1] / "data" / "retrieval.json"

Mode = Literal["keyword", "semantic", "hybrid"]


@dataclass(frozen=True)
class LabelledMessage:
    id: str  # "session:position"
    session_id: str
    project: str
    position: int
    message: Message


@dataclass(frozen=True)
class LabelledQuery:
    query: str
    kind: str
    relevant: tuple[str, ...]


@dataclass(frozen=True)
class RetrievalSet:
    messages: list[LabelledMessage]
    queries: list[LabelledQuery]
    by_id: dict[str, LabelledMessage] = field(repr=False)


class _Session(msgspec.Struct):
    id: str
    project: str
    messages: list[dict[str, Any]]


class _Query(msgspec.Struct):
    query: str
    kind: str
    relevant: list[str]


class _File(msgspec.Struct):
    description: str
    sessions: list[_Session]
    queries: list[_Query]


def load_retrieval_set(path: Path = DATA) -> RetrievalSet:
    """Parse the JSON file; every relevant id must name a message in it."""
    doc = msgspec.json.decode(path.read_bytes(), type=_File)
    messages = [
        LabelledMessage(f"{s.id}:{i}", s.id, s.project, i, Message.from_dict(m))
        for s in doc.sessions
        for i, m in enumerate(s.messages)
    ]
    by_id = {m.id: m for m in messages}
    queries = [LabelledQuery(q.query, q.kind, tuple(q.relevant)) for q in doc.queries]
    for q in queries:
        missing = [r for r in q.relevant if r not in by_id]
        if missing or not q.relevant:
            raise ValueError(
                f"query {q.query!r}: relevant ids {missing or '(none)'} are not messages of the set"
            )
    return RetrievalSet(messages, queries, by_id)


def build_index(
    conn: Any,
    rs: RetrievalSet,
    *,
    embedder: HashingEmbedder | None = None,
    tokenize: str = FTS_TOKENIZE,
    weights: tuple[float, float] = BM25_WEIGHTS,
) -> None:
    """Create messages, an external-content FTS5 table and (with ``embedder``) a vec0 table in
    ``conn`` and fill them; the message rowid is its index in ``rs.messages`` plus one."""
    conn.execute(
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, key TEXT UNIQUE, role TEXT, body TEXT, tool TEXT)"
    )
    conn.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(body, tool, content='messages', content_rowid='id', "
        f"tokenize='{tokenize}')"
    )
    conn.execute(
        f"INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', 'bm25({weights[0]}, {weights[1]})')"
    )
    for rowid, m in enumerate(rs.messages, start=1):
        body, tool = text_columns(m.message)
        conn.execute(
            "INSERT INTO messages (id, key, role, body, tool) VALUES (?, ?, ?, ?, ?)",
            (rowid, m.id, m.message.role, body, tool),
        )
        conn.execute("INSERT INTO messages_fts (rowid, body, tool) VALUES (?, ?, ?)", (rowid, body, tool))
    if embedder is not None:
        conn.execute(f"CREATE VIRTUAL TABLE messages_vec USING vec0(embedding float[{embedder.dimension}])")
        vectors = embedder.embed_sync([searchable_text(m.message) for m in rs.messages])
        conn.executemany(
            "INSERT INTO messages_vec (rowid, embedding) VALUES (?, ?)",
            [(i, vector_to_blob(v)) for i, v in enumerate(vectors, start=1)],
        )


def keyword_ranking(conn: Any, query: str, limit: int, *, operator: Literal["AND", "OR"] = "OR") -> list[str]:
    """Message ids best first by FTS5 bm25 (the table's configured rank)."""
    expr = match_expression(query, operator=operator)
    if expr is None:
        return []
    rows = conn.execute(
        "SELECT m.key FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
        "WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?",
        (expr, limit),
    ).fetchall()
    return [r[0] for r in rows]


def semantic_ranking(conn: Any, embedder: HashingEmbedder, query: str, limit: int) -> list[str]:
    """Message ids nearest first by a vec0 KNN over the embeddings (exact: the set is small)."""
    (vec,) = embedder.embed_sync([query])
    rows = conn.execute(
        "SELECT m.key FROM (SELECT rowid, distance FROM messages_vec WHERE embedding MATCH ? AND k = ?) v "
        "JOIN messages m ON m.id = v.rowid ORDER BY v.distance",
        (vector_to_blob(vec), limit),
    ).fetchall()
    return [r[0] for r in rows]


def ranking(
    conn: Any, embedder: HashingEmbedder, query: str, mode: Mode, limit: int, *, depth: int = 50
) -> list[str]:
    """Message ids for ``mode``; hybrid fuses the top ``depth`` of each by RRF (k=60)."""
    if mode == "keyword":
        return keyword_ranking(conn, query, limit)
    if mode == "semantic":
        return semantic_ranking(conn, embedder, query, limit)
    fused = reciprocal_rank_fusion(
        [keyword_ranking(conn, query, depth), semantic_ranking(conn, embedder, query, depth)], limit=limit
    )
    return [f.key for f in fused]


def recall_at(found: list[str], relevant: tuple[str, ...], k: int) -> float:
    """Share of ``relevant`` among the first ``k`` of ``found``."""
    top = set(found[:k])
    return sum(1 for r in relevant if r in top) / len(relevant)


def evaluate(
    conn: Any,
    rs: RetrievalSet,
    embedder: HashingEmbedder,
    mode: Mode,
    *,
    k: int = 5,
    kinds: set[str] | None = None,
) -> float:
    """Mean recall@k over the set's queries (optionally only those of ``kinds``)."""
    queries = [q for q in rs.queries if kinds is None or q.kind in kinds]
    scores = [recall_at(ranking(conn, embedder, q.query, mode, k), q.relevant, k) for q in queries]
    return sum(scores) / len(scores)
