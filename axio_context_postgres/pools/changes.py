"""What other writers changed in a container since a writer's copy: read under the row lock.

A writer whose copy is stale (the container's ``version`` moved since it was read) used to read
the whole container again after each change; with four writers on one pool each add then cost a
reload of every item. Here a write that finds its copy stale first reads, in the same
transaction and under the same lock, only the container's own entries written since its
``mark`` (the newest entry seq its copy reflects): entries are an append-only log whose seqs are
taken under the lock, so those are exactly the other writers' changes, in order (read before
the write itself deletes the entries it replaces). The caller applies them to its
copy (:func:`apply_to_queue`, :func:`apply_to_pool`); a pool also checks the stored size after,
since removing a root pool's last entry of a key leaves no removal entry to read.

The whole container is read instead (a :class:`State`) when the copy has no mark (just opened
or refreshed) or a clear moved ``base_seq`` past it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Final, NamedTuple, TypeVar

from axio_context.pools.items import ContextItem
from axio_context_sqlite.pools.rows import Entry, Header, State

__all__ = ["Change", "Fresh", "apply_to_pool", "apply_to_queue", "since"]

T = TypeVar("T")


class Change(NamedTuple):
    """One entry another writer wrote: an item (or, ``removed``, a key's removal)."""

    seq: int
    key: str | None
    ord: int
    removed: bool
    description: str | None
    content: bytes
    extra: bytes | None

    def entry(self) -> Entry:
        return Entry(self.seq, self.key, self.ord, self.description, self.content, self.extra)


#: What a stale writer gets back: the others' changes, oldest first, or the whole container.
Fresh = list[Change] | State

_SINCE: Final = (
    "SELECT seq, key, ord, removed, description, content, extra FROM context_pool_entries"
    " WHERE owner = $1 AND seq > $2 ORDER BY seq DESC LIMIT $3"
)


async def since(c: Any, h: Header, mark: int | None, base: int) -> list[Change] | None:
    """Inside a writer's locked transaction, before it writes: the container's own entries
    after seq ``mark`` (the others' writes since the copy), oldest first (a queue's newest
    ``lim`` only); None (read the container whole instead) when ``mark`` is None or a clear
    moved ``base_seq`` away from ``base``, the copy's."""
    if mark is None or base != h.base_seq:
        return None
    rows = await c.fetch(_SINCE, h.id, mark, h.lim if h.kind == "queue" else None)
    return [Change(*r) for r in reversed(rows)]


def apply_to_queue(
    items: deque[ContextItem[T]], changes: list[Change], item: Callable[[Entry], ContextItem[T]]
) -> None:
    """Append the other writers' items to a queue's copy (its ``maxlen`` evicts the oldest)."""
    items.extend(item(c.entry()) for c in changes)


def apply_to_pool(
    items: dict[str, ContextItem[T]],
    seqs: dict[str, int],
    mark: int,
    changes: list[Change],
    item: Callable[[Entry], ContextItem[T]],
) -> None:
    """Apply the other writers' adds, replacements and removals to a pool's copy (which
    reflects every entry up to seq ``mark``), in order.

    The pool's order is ``ord``, the seq of a key's first entry since it was last added: an
    ``ord`` up to ``mark`` is the copy's own key replaced in place; a later one a key added
    since (maybe again, after a removal), which goes after every key the copy had, the new
    ones by their ``ord``.
    """
    new: dict[str, Change] = {}
    for c in changes:
        key = str(c.key)
        if c.removed:
            items.pop(key, None)
            seqs.pop(key, None)
            new.pop(key, None)
        elif c.ord <= mark and key in items:
            items[key] = item(c.entry())
            seqs[key] = c.seq
        else:
            items.pop(key, None)
            seqs.pop(key, None)
            new[key] = c  # its latest entry; the ord is its incarnation's
    for key, c in sorted(new.items(), key=lambda kv: kv[1].ord):
        items[key] = item(c.entry())
        seqs[key] = c.seq
