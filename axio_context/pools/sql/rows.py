"""The row shapes of persisted queues and pools, and the codec of their items.

An item is stored as MessagePack (its content, and its keys of a newer version when it has any);
what cannot come back out is refused before anything is written: content msgspec cannot encode,
content nested past the encoder's depth, and maps whose keys JSON cannot show (a tuple, None or a
boolean as a key: ``axio-context pools show`` prints every item as JSON).
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple

import msgspec

from ..errors import ContentEncodeError
from ..items import ContextItem

__all__ = [
    "HEADER",
    "Change",
    "Entry",
    "Header",
    "Packed",
    "State",
    "decode_any",
    "decode_extra",
    "decode_hooks",
    "decode_object",
    "decode_tags",
    "encode_items",
    "encode_json",
]

#: The columns of a :class:`Header`, in its order.
HEADER: Final = (
    "id, name, kind, parent, fork_seq, base_seq, lim, tags, hooks, extra, size, version,"
    " created_at, updated_at"
)


class Header(NamedTuple):
    """One ``context_pools`` row."""

    id: int
    name: str
    kind: str
    parent: int | None
    fork_seq: int | None
    base_seq: int
    lim: int | None
    tags: str
    hooks: str
    extra: str
    size: int
    version: int
    created_at: int
    updated_at: int


class Entry(NamedTuple):
    """One visible item: its log position, key, insertion order, description, packed content,
    packed extra keys (None: none) and when it expires (ms since the epoch; None: never). A
    pool's state holds expired items not yet swept too: a reader leaves them out by time."""

    seq: int
    key: str | None
    ord: int
    description: str | None
    content: bytes
    extra: bytes | None
    expires_at: int | None = None

    def alive(self, now: int) -> bool:
        """Whether the item has not expired at ``now``."""
        return self.expires_at is None or self.expires_at > now


class Change(NamedTuple):
    """One entry another writer wrote: an item (or, ``removed``, a key's removal)."""

    seq: int
    key: str | None
    ord: int
    removed: bool
    description: str | None
    content: bytes
    extra: bytes | None
    expires_at: int | None = None

    def entry(self) -> Entry:
        exp = None if self.expires_at is None else int(self.expires_at)
        return Entry(self.seq, self.key, self.ord, self.description, bytes(self.content), self.extra, exp)


#: An item ready to store: (id, description, packed content, packed extra keys or None).
Packed = tuple[str | None, str | None, bytes, bytes | None]


class State(NamedTuple):
    """A container's header and its visible entries (a queue oldest first, a pool by ``ord``)."""

    header: Header
    entries: list[Entry]


_PACK: Final = msgspec.msgpack.Encoder()
_ANY: Final = msgspec.msgpack.Decoder()
_SHOWN: Final = msgspec.json.Encoder()
_JSON: Final = msgspec.json.Encoder()
_TAGS: Final = msgspec.json.Decoder(list[str])
_HOOKS: Final = msgspec.json.Decoder(dict[str, list[str]])
_OBJECT: Final = msgspec.json.Decoder(dict[str, Any])
_EXTRA: Final = msgspec.msgpack.Decoder(dict[str, Any])


def _pack(value: Any) -> bytes:
    packed = _PACK.encode(value)
    _SHOWN.encode(_ANY.decode(packed))  # what `pools show` does with it: JSON must take it
    return packed


def _text(value: str | None) -> None:
    if value is not None:
        value.encode()  # a lone surrogate is no UTF-8: no database column takes it


def encode_items(items: list[ContextItem[Any]], what: str) -> list[Packed]:
    """Each item as (id, description, MessagePack content, MessagePack extra keys or None);
    ContentEncodeError names the first item that cannot be stored and read back, before
    anything is written."""
    out = []
    for n, item in enumerate(items):
        part = "content"
        try:
            packed = _pack(item.content)
            part = "extra keys"
            extra = None if item.extra is None else _pack(item.extra)  # {} comes back as {}
            part = "id or description"
            _text(item.id)
            _text(item.description)
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            label = f"item {n}" + ("" if item.id is None else f" (id {item.id!r})")
            if part == "content":
                part = f"content ({type(item.content).__name__})"
            raise ContentEncodeError(
                f"{label} of the {what}: its {part} cannot be stored: {_reason(exc)}"
            ) from None
        out.append((item.id, item.description, packed, extra))
    return out


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).encode("utf-8", "backslashreplace").decode()


def encode_json(value: Any) -> str:
    """``value`` (tags, hook names, a header's extra keys) as the JSON text the row keeps."""
    return _JSON.encode(value).decode()


def decode_tags(text: str) -> list[str]:
    return _TAGS.decode(text)


def decode_hooks(text: str) -> dict[str, list[str]]:
    return _HOOKS.decode(text)


def decode_object(text: str) -> dict[str, Any]:
    return _OBJECT.decode(text)


def decode_extra(packed: bytes) -> dict[str, Any]:
    return _EXTRA.decode(packed)


def decode_any(packed: bytes) -> Any:
    """Stored MessagePack as plain values (what the command line shows)."""
    return _ANY.decode(packed)
