"""axio 0.12's parameter names, accepted as keyword aliases of ours (``context`` for ``store``,
``transport`` for ``summarizer``), so calls written against axio by keyword port unchanged."""

from __future__ import annotations

from typing import Final, TypeVar

__all__ = ["UNSET", "Unset", "resolve_alias"]

T = TypeVar("T")


class Unset:
    """The type of :data:`UNSET`: an argument not given (``None`` means something already)."""

    def __repr__(self) -> str:
        return "UNSET"


#: Marks an argument that was not given.
UNSET: Final = Unset()


def resolve_alias(where: str, name: str, value: T | Unset, alias: str, alias_value: T | Unset) -> T:
    """The argument given as ``name`` or as axio's ``alias``; a TypeError (as Python raises for a
    missing or doubled argument) when neither or both were given."""
    if isinstance(alias_value, Unset):
        if isinstance(value, Unset):
            raise TypeError(f"{where}() missing required argument: {name!r} (axio's {alias!r})")
        return value
    if not isinstance(value, Unset):
        raise TypeError(f"{where}() got both {name!r} and axio's {alias!r}; give one")
    return alias_value
