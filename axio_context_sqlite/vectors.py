"""Turning message text into the embeddings the store keeps (outside any transaction)."""

from __future__ import annotations

from collections.abc import Sequence

from axio_context.embeddings import Embedder, vector_to_blob
from axio_context.errors import EmbeddingMismatchError

from .ops import Embeddings
from .vec import binary_code

__all__ = ["embed_batch", "embedding_text"]


def embedding_text(body: str, tool: str) -> str:
    """The text a message is embedded from: what was written, then tool text."""
    return f"{body}\n{tool}" if body and tool else body or tool


async def embed_batch(embedder: Embedder, texts: Sequence[tuple[str, str]], codes: bool) -> Embeddings:
    """Embed a batch's ``(body, tool)`` texts; messages without text (or a zero vector) get none."""
    wanted = [(i, embedding_text(b, t)) for i, (b, t) in enumerate(texts)]
    wanted = [(i, text) for i, text in wanted if text.strip()]
    rows: list[tuple[int, bytes, bytes | None]] = []
    if wanted:
        vectors = await embedder.embed([text for _, text in wanted])
        if len(vectors) != len(wanted):
            raise EmbeddingMismatchError(
                f"embedder {embedder.model!r} returned {len(vectors)} vectors for {len(wanted)} texts"
            )
        for (i, _), vector in zip(wanted, vectors, strict=True):
            if len(vector) != embedder.dimension:
                raise EmbeddingMismatchError(
                    f"embedder {embedder.model!r} returned a {len(vector)}-d vector;"
                    f" it declares {embedder.dimension}"
                )
            if not any(vector):
                continue  # a zero vector would sit near every query: never index it
            rows.append((i, vector_to_blob(vector), binary_code(vector) if codes else None))
    return Embeddings(model=embedder.model, dimension=embedder.dimension, rows=rows)
