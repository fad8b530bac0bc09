"""Turning message text into the embeddings the store keeps (outside any transaction)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec

from axio_context.embeddings import Embedder, Vector, check_embedder
from axio_context.errors import EmbeddingMismatchError

from .vec import binary_code, quantize

__all__ = ["Embeddings", "check_finite", "embed_batch", "embed_checked", "embedding_text"]


class Embeddings(msgspec.Struct, frozen=True):
    """Vectors computed for a batch before its transaction: (index in batch, float32 BLOB, code)."""

    model: str
    dimension: int
    rows: list[tuple[int, bytes, bytes | None]]


def embedding_text(body: str, tool: str) -> str:
    """The text a message is embedded from: what was written, then tool text."""
    return f"{body}\n{tool}" if body and tool else body or tool


def check_finite(model: str, vector: Sequence[float], what: str) -> None:
    """Refuse a vector holding NaN or an infinity (an embedder that divides by a zero norm):
    its distance to anything is NaN, which no ranking can order."""
    if not all(map(math.isfinite, vector)):
        raise EmbeddingMismatchError(
            f"embedder {model!r} returned a vector with NaN or infinite values for {what}; "
            "an embedding must be finite (a unit vector)"
        )


async def embed_checked(embedder: Embedder, texts: Sequence[str], what: str = "texts") -> list[Vector]:
    """``embedder``'s vectors for ``texts``; :class:`EmbeddingMismatchError` for a wrong number of
    them or one of another width than it declares (``what`` names the texts in the message);
    :class:`EmbedderDimensionError` before embedding when it declares no usable width."""
    check_embedder(embedder)
    vectors = await embedder.embed(texts)
    if len(vectors) != len(texts):
        raise EmbeddingMismatchError(
            f"embedder {embedder.model!r} returned {len(vectors)} vectors for {len(texts)} {what}"
        )
    for vector in vectors:
        if len(vector) != embedder.dimension:
            raise EmbeddingMismatchError(
                f"embedder {embedder.model!r} returned a {len(vector)}-d vector;"
                f" it declares {embedder.dimension}"
            )
    return list(vectors)


async def embed_batch(embedder: Embedder, texts: Sequence[tuple[str, str]], codes: bool) -> Embeddings:
    """Embed a batch's ``(body, tool)`` texts; messages without text, or whose vector is zero or
    not finite (NaN: an embedder dividing by the zero norm of a text it has no words for), get none.

    Vectors are stored as int8 (:func:`.vec.quantize`). A wrong number of vectors or a vector of
    the wrong width is :class:`EmbeddingMismatchError`: the embedder does not fit the store, and
    nothing of the batch is used. Each distinct text is embedded once: identical messages are
    common in agent transcripts (a tool's same output, "continue", a retried request), and a
    model such as MiniLM embeds some tens of texts a second on a CPU.
    """
    wanted = [(i, embedding_text(b, t)) for i, (b, t) in enumerate(texts)]
    wanted = [(i, text) for i, text in wanted if text.strip()]
    rows: list[tuple[int, bytes, bytes | None]] = []
    if wanted:
        distinct = list(dict.fromkeys(text for _, text in wanted))
        vectors = await embed_checked(embedder, distinct)
        stored: dict[str, tuple[bytes, bytes | None] | None] = {}
        for text, vector in zip(distinct, vectors, strict=True):
            if not any(vector) or not all(map(math.isfinite, vector)):
                # A zero vector would sit near every query, a NaN one at no distance from
                # anything: neither ranks, so neither is kept; the message stays unembedded.
                stored[text] = None
                continue
            stored[text] = (quantize(vector), binary_code(vector) if codes else None)
        for i, text in wanted:
            kept = stored[text]
            if kept is not None:
                rows.append((i, *kept))
    return Embeddings(model=embedder.model, dimension=embedder.dimension, rows=rows)
