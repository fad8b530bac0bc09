"""What other writers changed in a container since a writer's copy, read inside its write.

A writer whose copy is stale (the container's ``version`` moved since it was read) could read the
whole container again after each change; with four writers on one pool each add would then cost a
reload of every item. Instead a write that finds its copy stale first reads, in the same
transaction (under the container's row lock on PostgreSQL, the database's write lock on SQLite),
only the container's own entries written since its ``mark`` (the newest entry seq its copy
reflects): entries are an append-only log whose seqs are taken under that lock, so those are
exactly the other writers' changes, in order (read before the write itself deletes the entries
it replaces). The caller applies them to its copy (:func:`apply_to_queue`,
:func:`apply_to_pool`); a pool also checks the stored size after, since removing a root pool's
last entry of a key leaves no removal entry to read.

The whole container is read instead (a :class:`State`) when the copy has no mark (just opened
or refreshed) or a clear moved ``base_seq`` past it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Final, TypeVar

from axio_context.sql import Plan, Rows

from ..items import ContextItem
from .rows import Change, Entry, Header, State

__all__ = ["Fresh", "Seen", "apply_to_pool", "apply_to_queue", "since"]

T = TypeVar("T")

#: What a stale writer gets back: the others' changes, oldest first, or the whole container.
Fresh = list[Change] | State
#: What a write tells the database of the writer's copy: (version, mark, base_seq).
Seen = tuple[int, int | None, int]

_SINCE: Final = (
    "SELECT seq, key, ord, removed, description, content, extra, expires_at FROM context_pool_entries"
    " WHERE owner = ? AND seq > ? ORDER BY seq DESC"
)


def since(h: Header, seen: Seen) -> Plan[list[Change] | None]:
    """Inside a writer's transaction, before it writes: the container's own entries after the
    copy's mark, oldest first (a queue's newest ``lim`` only); None (read the container whole
    instead) when the copy has no mark or a clear moved ``base_seq`` away from the copy's."""
    _, mark, base = seen
    if mark is None or base != h.base_seq:
        return None
    if h.kind == "queue":
        rows = yield Rows(_SINCE + " LIMIT ?", (h.id, mark, h.lim))
    else:
        rows = yield Rows(_SINCE, (h.id, mark))
    return [Change(r[0], r[1], r[2], bool(r[3]), r[4], r[5], r[6], r[7]) for r in reversed(rows)]


def apply_to_queue(
    items: deque[ContextItem[T]], changes: list[Change], item: Callable[[Entry], ContextItem[T]]
) -> None:
    """Append the other writers' items to a queue's copy (its ``maxlen`` evicts the oldest)."""
    items.extend(item(c.entry()) for c in changes)


def apply_to_pool(
    items: dict[str, ContextItem[T]],
    seqs: dict[str, int],
    expires: dict[str, int],
    mark: int,
    changes: list[Change],
    item: Callable[[Entry], ContextItem[T]],
) -> None:
    """Apply the other writers' adds, replacements and removals to a pool's copy (which
    reflects every entry up to seq ``mark``; ``expires``: when its keys that have a TTL
    expire), in order.

    The pool's order is ``ord``, the seq of a key's first entry since it was last added: an
    ``ord`` up to ``mark`` is the copy's own key replaced in place; a later one a key added
    since (maybe again, after a removal), which goes after every key the copy had, the new
    ones by their ``ord``.
    """
    new: dict[str, Change] = {}
    for c in changes:
        key = str(c.key)
        expires.pop(key, None)
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
        if not c.removed and c.expires_at is not None:
            expires[key] = int(c.expires_at)
    for key, c in sorted(new.items(), key=lambda kv: kv[1].ord):
        items[key] = item(c.entry())
        seqs[key] = c.seq
