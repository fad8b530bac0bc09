"""The embedding settings a database records (model, dimension, stale codes), and the checks
every search and reindex makes against them."""

from __future__ import annotations

from typing import Any

from axio_context.errors import EmbeddingMismatchError

from ..store import indexing

__all__ = ["check_model", "codes_usable", "read_settings"]


def read_settings(c: Any) -> dict[str, str]:
    return {
        str(k): str(v)
        for k, v in c.execute(
            "SELECT key, value FROM settings WHERE key IN"
            " ('embedding_model', 'embedding_dimension', 'codes_stale')"
        ).fetchall()
    }


def check_model(
    settings: dict[str, str], model: str, dimension: int, what: str = "the query embedder"
) -> bool:
    """True when the database has embeddings from this model; raise when from another one."""
    stored = settings.get("embedding_model")
    if stored is None:
        return False
    stored_dim = settings.get("embedding_dimension")
    if stored != model or stored_dim != str(dimension):
        raise EmbeddingMismatchError(
            f"this database's embeddings come from {stored!r} ({stored_dim} dimensions); "
            f"{what} is {model!r} ({dimension} dimensions). Use the same embedder, "
            "or re-embed the database with `reindex --rebuild`"
        )
    return True


def codes_usable(c: Any, settings: dict[str, str]) -> bool:
    """Whether the vec0 codes can answer: sqlite-vec runs here, they exist and are complete."""
    return "codes_stale" not in settings and indexing.vec_available(c) and indexing.codes_table_exists(c)
