"""An embedder that does not fit the store (a wrong dimension or number of vectors) fails the
whole append, loudly, since every later batch would fail the same way. (One that merely fails,
a service that is down, costs only the batch's embeddings: tests/test_review2_search.py,
``test_append_stores_the_message_when_the_embedder_fails_and_reindex_embeds_it``.)"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from pathlib import Path

import pytest

from axio_context.embeddings import Vector
from axio_context.errors import EmbeddingMismatchError
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.sqlite_checks import check_storage, scalar, text_message, texts


class Misfit:
    """Declares 8 dimensions; returns ``width``-wide vectors, ``extra`` more than asked for."""

    model = "misfit-v1"
    dimension = 8

    def __init__(self, width: int = 8, extra: int = 0) -> None:
        self._width, self._extra = width, extra

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        one = array("f", [1.0] + [0.0] * (self._width - 1))
        return [one] * (len(texts) + self._extra)


@pytest.mark.parametrize(
    ("embedder", "error"),
    [
        (Misfit(width=4), "returned a 4-d vector; it declares 8"),
        (Misfit(extra=1), "returned 3 vectors for 2"),
    ],
)
async def test_an_embedder_that_does_not_fit_fails_the_append(
    db_path: Path, embedder: Misfit, error: str
) -> None:
    async with connect(db_path) as conn:
        await SQLiteContextStore(conn, "s").append(text_message("before"))
        store = SQLiteContextStore(conn, "s", embedder=embedder)
        with pytest.raises(EmbeddingMismatchError, match=error):
            await store.append_many([text_message("one"), text_message("two")])
        assert texts(await store.get_history()) == ["before"]
    assert scalar(db_path, "SELECT count(*) FROM message_vectors") == 0
    check_storage(db_path)


async def test_a_fitting_embedder_embeds_the_batch(db_path: Path) -> None:
    async with connect(db_path) as conn:
        store = SQLiteContextStore(conn, "s", embedder=Misfit())
        await store.append_many([text_message("one"), text_message("two")])
        assert texts(await store.get_history()) == ["one", "two"]
    assert scalar(db_path, "SELECT count(*) FROM message_vectors") == 2
