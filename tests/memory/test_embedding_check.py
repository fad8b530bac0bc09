"""check_embedding: a list or tuple of numbers goes to float32 through one packed struct (issue 32,
vector inserts: 3x faster than ``array("f", ...)`` element by element); the values, and what is
refused and how, are those of ``array("f", value)`` for every input."""

from __future__ import annotations

from array import array
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from axio_context.memory.errors import DimensionMismatchError, InvalidEmbeddingError
from axio_context.memory.vectors import check_embedding


@pytest.mark.parametrize(
    "value",
    [
        [0.1, -2.5, 3e-40, 1e-45, 65504.0, 3.4e38],
        (1, True, False, 2**60, -7),
        [Decimal("1.5"), Fraction(1, 3), np.float64(2.5), np.float32(-0.25), np.int64(3)],
        np.random.default_rng(7).standard_normal(384).tolist(),
        np.arange(5, dtype=np.float32),  # neither list nor tuple: element by element, as before
        range(1, 4),
        b"\x00\x00\x80?",  # bytes are the array's frombytes, as before (one float, 1.0)
    ],
)
def test_same_floats_as_the_array_module(value: Any) -> None:
    assert check_embedding(value, None).tobytes() == array("f", value).tobytes()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([1.0, "x"], "not a sequence of numbers"),
        ([1.0, None], "not a sequence of numbers"),
        ([1.0, 2**2000], "not a sequence of numbers"),
        ([], "is empty"),
        ([1.0, float("nan")], "NaN or infinity"),
        ([1.0, float("inf")], "NaN or infinity"),
        ([1.0, 1e39], "too large for float32"),
        ("abc", "not a sequence of numbers"),
    ],
)
def test_refused_as_before(value: Any, message: str) -> None:
    with pytest.raises(InvalidEmbeddingError, match=message):
        check_embedding(value, None, "document 'd'")


def test_the_dimension_is_checked() -> None:
    with pytest.raises(DimensionMismatchError, match="3 dimensions, the collection has 4"):
        check_embedding([1.0, 2.0, 3.0], 4)
    assert list(check_embedding((1.0, 2.0, 3.0, 4.0), 4)) == [1.0, 2.0, 3.0, 4.0]


async def test_a_batch_names_its_first_document_that_is_not_finite() -> None:
    from axio_context.memory.vectors import Document, embed_missing

    docs = [Document(f"d{i}", "t", [1.0, 2.0]) for i in range(5)]
    docs[3].embedding = [1.0, float("inf")]
    docs[4].embedding = [float("nan"), 1.0]
    with pytest.raises(InvalidEmbeddingError, match="document 'd3': embedding holds NaN or infinity"):
        await embed_missing(docs, None, None)
    assert len(await embed_missing(docs[:3], None, 2)) == 3
