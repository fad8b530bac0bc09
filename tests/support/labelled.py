"""The labelled agent set (tests/data/agent_retrieval.json) measured through the real search.

:func:`store_set` appends the set's sessions to a database with a store and an embedder, as an
agent would; :func:`measure` runs every query through :meth:`Database.search` in each mode and
gives recall@k and MRR per query class. The tests assert on these; ``bench/bench_search.py``
prints them alone and among 100,000 messages.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

import msgspec

from axio_context.embeddings import Embedder
from axio_context_sqlite import Database, SQLiteContextStore, connect

from .retrieval_set import RetrievalSet, load_retrieval_set

AGENT_SET = Path(__file__).parents[1] / "data" / "agent_retrieval.json"
KINDS = ("paraphrase", "identifier", "keyword")
MODES = ("keyword", "semantic", "hybrid")


def load_agent_set() -> RetrievalSet:
    """The labelled agent set (see tests/data/make_agent_set.py for how it was made)."""
    return load_retrieval_set(AGENT_SET)


async def store_set(path: Path, rs: RetrievalSet, embedder: Embedder | None) -> None:
    """Append every session of ``rs`` to the database at ``path`` (embedding on append)."""
    by: dict[tuple[str, str], list[object]] = {}
    for m in rs.messages:
        by.setdefault((m.session_id, m.project), []).append(m.message)
    async with connect(path) as conn:
        for (sid, project), messages in by.items():
            store = SQLiteContextStore(conn, sid, project, embedder=embedder)
            await store.append_many(messages)  # type: ignore[arg-type]


class Score(msgspec.Struct, frozen=True):
    """Mean recall@k and mean reciprocal rank (of the first relevant hit in the top k) of a
    mode on one query class, over ``queries`` queries."""

    recall: float
    mrr: float
    queries: int


def reciprocal_rank(found: list[str], relevant: Iterable[str]) -> float:
    wanted = set(relevant)
    return next((1.0 / i for i, f in enumerate(found, 1) if f in wanted), 0.0)


async def measure(
    db: Database, rs: RetrievalSet, embedder: Embedder, *, k: int = 5, modes: Iterable[str] = MODES
) -> dict[str, dict[str, Score]]:
    """``{mode: {kind or "all": Score}}`` over every query of ``rs``."""
    out: dict[str, dict[str, Score]] = {}
    for mode in modes:
        per: dict[str, list[tuple[float, float]]] = {}
        for q in rs.queries:
            hits = await db.search(q.query, mode=mode, k=k, embedder=embedder)  # type: ignore[arg-type]
            found = [f"{h.session_id}:{h.position}" for h in hits]
            top = set(found[:k])
            recall = sum(1 for r in q.relevant if r in top) / len(q.relevant)
            for kind in (q.kind, "all"):
                per.setdefault(kind, []).append((recall, reciprocal_rank(found[:k], q.relevant)))
        out[mode] = {
            kind: Score(statistics.fmean(r for r, _ in v), statistics.fmean(m for _, m in v), len(v))
            for kind, v in per.items()
        }
    return out


def table(scores: dict[str, dict[str, Score]], title: str = "") -> str:
    """The scores as a plain-text table: one row per mode, recall@k / MRR per class."""
    kinds = [*KINDS, "all"]
    lines = [f"{title:10s} " + " ".join(f"{kind:>17s}" for kind in kinds)]
    for mode, per in scores.items():
        cells = [
            f"{per[kind].recall:7.3f} / {per[kind].mrr:5.3f}" if kind in per else " " * 17 for kind in kinds
        ]
        lines.append(f"{mode:10s} " + " ".join(f"{c:>17s}" for c in cells))
    return "\n".join(lines)
