"""Embeddings as the vector stores take them: float32, not empty, of the collection's dimension
and finite, each error one line naming the document (or the query)."""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence
from functools import lru_cache

from .errors import DimensionMismatchError, InvalidEmbeddingError

__all__ = ["check_embedding", "first_not_finite", "not_finite", "sized_float32"]


@lru_cache(maxsize=32)
def _packer(length: int) -> struct.Struct:
    return struct.Struct(f"{length}f")


def _float32(value: Sequence[float]) -> array[float]:
    """``array("f", value)``, a list or tuple packed at once (5 us for 384 floats, not 16-28):
    anything else, or what the struct refuses, goes to the array (its values and errors)."""
    if type(value) is list or type(value) is tuple:
        try:
            packed = _packer(len(value)).pack(*value)
        except (TypeError, OverflowError, struct.error):
            pass
        else:
            vec = array("f")
            vec.frombytes(packed)
            return vec
    return array("f", value)


def sized_float32(value: Sequence[float], dimension: int | None, label: str) -> array[float]:
    """``value`` as float32, not empty and ``dimension`` long when given (``label`` names it)."""
    try:
        vec = _float32(value)
    except (TypeError, OverflowError) as exc:
        raise InvalidEmbeddingError(f"{label}embedding is not a sequence of numbers ({exc})") from None
    if not len(vec):
        raise InvalidEmbeddingError(f"{label}embedding is empty")
    if dimension is not None and len(vec) != dimension:
        raise DimensionMismatchError(
            f"{label}embedding has {len(vec)} dimensions, the collection has {dimension}"
        )
    return vec


def not_finite(label: str) -> InvalidEmbeddingError:
    """The error of an embedding holding NaN or infinity."""
    return InvalidEmbeddingError(f"{label}embedding holds NaN or infinity (or a value too large for float32)")


def check_embedding(value: Sequence[float], dimension: int | None, where: str = "") -> array[float]:
    """``value`` as float32, checked: not empty, finite, and ``dimension`` long when given."""
    label = f"{where}: " if where else ""
    vec = sized_float32(value, dimension, label)
    # One C-speed sum instead of a test per coordinate: NaN or infinity anywhere makes it NaN
    # or infinite, and float32 values (at most 3.4e38) cannot overflow a float64 sum.
    if not math.isfinite(sum(vec)):
        raise not_finite(label)
    return vec


def first_not_finite(vectors: Sequence[array[float]]) -> int | None:
    """The index of the first of ``vectors`` (float32, all one length) holding NaN or infinity,
    in one NumPy pass over the batch; None when all are finite."""
    if not vectors:
        return None
    import numpy as np

    matrix = np.frombuffer(b"".join(vectors), dtype=np.float32).reshape(len(vectors), -1)
    finite = np.isfinite(matrix).all(axis=1)
    return None if finite.all() else int(np.argmin(finite))
