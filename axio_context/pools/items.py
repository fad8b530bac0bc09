"""``ContextItem``: one entry of a context queue or pool (pygents' names and fields)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Generic, TypeVar

import msgspec

__all__ = ["ContextItem"]

T = TypeVar("T")

_KNOWN: Final = frozenset({"id", "description", "content"})


class ContextItem(msgspec.Struct, Generic[T], frozen=True):
    """An immutable piece of context: the ``content`` itself, an optional one-line
    ``description`` a selector reads instead of the content, and an optional ``id`` (the key
    in a pool). ``extra`` holds the keys of an item dict from a newer version, kept whole."""

    content: T
    description: str | None = None
    id: str | None = None
    extra: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """pygents' dict shape: ``{"id", "description", "content"}`` (and any ``extra`` keys)."""
        return {**(self.extra or {}), "id": self.id, "description": self.description, "content": self.content}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextItem[Any]:
        """Inverse of :meth:`to_dict`; only ``content`` is required."""
        if not isinstance(data, Mapping) or "content" not in data:
            raise ValueError(f"a context item dict needs a 'content' key, got {data!r:.80}")
        description, item_id = data.get("description"), data.get("id")
        if description is not None and not isinstance(description, str):
            raise ValueError(f"a context item's description must be a string, got {description!r:.80}")
        if item_id is not None and not isinstance(item_id, str):
            raise ValueError(f"a context item's id must be a string, got {item_id!r:.80}")
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return ContextItem(content=data["content"], description=description, id=item_id, extra=extra or None)
