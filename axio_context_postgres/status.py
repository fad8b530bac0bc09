"""The state of a PostgreSQL database's search indexes, for ``axio-context index``."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["PostgresIndexStatus"]


class PostgresIndexStatus(msgspec.Struct, frozen=True):
    """Model, dimension and coverage of the embeddings; pgvector and its HNSW index.

    ``messages`` counts stored rows (a fork's inherited messages are its ancestor's rows);
    ``embedded`` those with an embedding. ``semantic``: ``hnsw`` (the index, ``ef_search``
    candidates, iterative scan under filters), ``exact`` (no index: a scan of every embedding)
    or ``none`` (nothing embedded yet).
    """

    model: str | None
    dimension: int | None
    messages: int
    embedded: int
    vector_extension: bool
    pgvector_version: str | None
    hnsw_index: bool
    ef_search: int
    semantic: Literal["hnsw", "exact", "none"]

    def lines(self) -> list[str]:
        """What ``axio-context index`` prints for people."""
        model = (
            "(none yet: `axio-context reindex`)"
            if self.model is None
            else f"{self.model} ({self.dimension} dimensions)"
        )
        missing = self.messages - self.embedded
        note = f" ({missing:,} without: no text, or not embedded yet)" if missing else ""
        vector = (
            f"installed ({self.pgvector_version})"
            if self.vector_extension
            else "missing: `CREATE EXTENSION vector;` enables semantic search"
        )
        semantic = {
            "hnsw": f"pgvector HNSW index (cosine), ef_search {self.ef_search}",
            "exact": "exact scan of every embedding (no HNSW index)",
            "none": "unavailable until messages are embedded",
        }[self.semantic]
        return [
            f"model        {model}",
            f"embedded     {self.embedded:,} of {self.messages:,} stored message(s){note}",
            f"pgvector     {vector}",
            f"semantic     {semantic}",
            "keyword      tsvector (GIN index): every committed message",
        ]
