"""Copying what the layers keep beside the sessions: usage, memory stores, memory blocks (each
with its whole history), context pools, resumable state and framework conversation records,
after the sessions themselves.

Each layer is dumped on both sides and compared item by item. An item (a collection, a blob key,
a pool family, a state...) is named by its key: absent from the destination, it is copied; there
with the same content, it counts as already there; there with different content, it is a
conflict, refused with a one-line reason and never overwritten, and the rest is still copied.
Usage rows have no name: they are compared as a multiset (the same row twice is two requests),
and the destination gets the difference. Items go in batches, one transaction each, so a second
run copies nothing and an interrupted one finishes on the next.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any, Final

import msgspec

from ..memory_blocks.transfer_sql import block_key
from ..transcript.hidden import Renumbering
from .rows import LayerReport, PoolRow, RunRow
from .sides import LayerSide as Side

__all__ = ["LAYERS", "Layer", "copy_layers", "dump", "families"]


def _family_key(rows: list[PoolRow]) -> str:
    return rows[0].name


def _family_content(rows: list[PoolRow]) -> Hashable:
    """A family with its log positions relative to its oldest entry: two databases' copies of
    it compare equal (a copy shifts them all by one offset)."""
    seqs = [e.seq for p in rows for e in p.entries]
    low = min(seqs) if seqs else None

    def rel(value: int | None) -> int | None:
        if not value:
            return value
        return None if low is None else value - low

    return tuple(
        (
            msgspec.structs.replace(p, fork_seq=rel(p.fork_seq), base_seq=rel(p.base_seq) or 0, entries=()),
            tuple(msgspec.structs.replace(e, seq=rel(e.seq) or 0, ord=rel(e.ord) or 0) for e in p.entries),
        )
        for p in rows
    )


def families(rows: list[PoolRow]) -> list[list[PoolRow]]:
    """Pools grouped by the root of their parent chain, parents before branches."""
    root: dict[str, str] = {}
    groups: dict[str, list[PoolRow]] = {}
    for p in rows:  # dumped parents first
        r = p.name if p.parent is None else root.get(p.parent, p.parent)
        root[p.name] = r
        groups.setdefault(r, []).append(p)
    return list(groups.values())


class Layer(msgspec.Struct, frozen=True):
    """How to copy one layer: its items' key and comparable content, a batch size, a label."""

    name: str
    label: str
    key: Callable[[Any], str]
    content: Callable[[Any], Hashable] = lambda item: item
    batch: int = 200


#: In order: graph entities before relationships; sessions (copied first) before what points at
#: their messages (states, conversation entries, turns, run tags).
LAYERS: Final = (
    Layer("collections", "collection", lambda c: c.name, batch=1),
    Layer("blobs", "blob", lambda b: b.key, batch=1),
    Layer("graph_entities", "graph entity", lambda e: e.id),
    Layer("graph_relationships", "graph relationship", lambda r: r.id),
    Layer("task_lists", "task list", lambda t: t.id, batch=20),
    Layer("memory_blocks", "memory block", block_key, batch=50),
    Layer("pools", "queue or pool family", _family_key, _family_content, batch=1),
    Layer("states", "state of session", lambda s: s.session_id),
    Layer("conversations", "conversation", lambda c: c.id),
    Layer("conversation_entries", "conversation entry", lambda e: e.id, batch=1000),
    Layer("turns", "turn", lambda t: f"{t.session_id} at {t.position}", batch=1000),
    Layer("runs", "agent run", lambda r: r.run_id, batch=50),
)

Progress = Callable[[str, int, int], object]


def _renumbered(
    rows: list[Any], hidden: dict[str, list[int]], field: str, session: str, *, drop_hidden: bool = False
) -> list[Any]:
    """``rows`` with their message positions as the copied sessions number them (an export
    leaves the messages a cleared run hid out); with ``drop_hidden`` a row of a hidden message
    keeps no position (a usage row: the message is not copied, the spending is)."""
    if not hidden:
        return rows
    out = []
    for row in rows:
        gone = hidden.get(getattr(row, session) or "")
        position: int | None = getattr(row, field)
        if gone and position is not None:
            kept: int | None = Renumbering(gone).position(position)
            if drop_hidden and position in gone:
                kept = None
            row = msgspec.structs.replace(row, **{field: kept})
        out.append(row)
    return out


def _visible_tags(runs: list[RunRow], hidden: dict[str, list[int]]) -> list[RunRow]:
    """Runs with the tags of messages a cleared run hid left out, the rest renumbered."""
    if not hidden:
        return runs
    out = []
    for run in runs:
        tags = [
            (session, Renumbering(hidden[session]).position(p) if session in hidden else p)
            for session, p in run.tags
            if p not in hidden.get(session, ())
        ]
        out.append(msgspec.structs.replace(run, tags=tuple(sorted(tags))))
    return out


async def dump(side: Side, layer: str, hidden: dict[str, list[int]]) -> list[Any]:
    """One side's items of ``layer`` as the copy compares them: positions that point at
    messages renumbered as the copied sessions number them (``hidden``: :meth:`Side.hidden`)."""
    rows = await side.dump(layer)
    if layer == "runs":
        return _visible_tags(rows, hidden)
    if layer == "usage":
        return _renumbered(rows, hidden, "position", "session", drop_hidden=True)
    if layer == "conversation_entries":
        return _renumbered(rows, hidden, "position", "session_id")
    if layer == "conversations":
        return _renumbered(rows, hidden, "head_position", "head_session")
    if layer == "turns":  # a hidden user message is not copied: neither is its turn
        rows = [r for r in rows if r.position not in hidden.get(r.session_id, ())]
        return _renumbered(rows, hidden, "position", "session_id")
    return rows


async def _copy_usage(
    src: Side,
    dst: Side,
    hidden: tuple[dict[str, list[int]], dict[str, list[int]]],
    dry_run: bool,
    progress: Progress | None,
) -> LayerReport:
    have = Counter(await dump(dst, "usage", hidden[1]))
    todo = []
    already = 0
    for row in await dump(src, "usage", hidden[0]):
        if have[row] > 0:
            have[row] -= 1
            already += 1
        else:
            todo.append(row)
    if not dry_run:
        for start in range(0, len(todo), 500):
            await dst.load("usage", todo[start : start + 500])
            if progress is not None:
                progress("usage", min(start + 500, len(todo)), len(todo))
    return LayerReport(copied=len(todo), already=already)


async def _copy_layer(
    layer: Layer,
    src: Side,
    dst: Side,
    hidden: tuple[dict[str, list[int]], dict[str, list[int]]],
    dry_run: bool,
    progress: Progress | None,
) -> LayerReport:
    items = await dump(src, layer.name, hidden[0])
    theirs = await dump(dst, layer.name, hidden[1])
    if layer.name == "pools":
        items, theirs = families(items), families(theirs)
        taken = {p.name for family in theirs for p in family}
    else:
        taken = set()
    there = {layer.key(t): layer.content(t) for t in theirs}
    report = LayerReport()
    todo = []
    for item in items:
        k = layer.key(item)
        if k in there:
            if there[k] == layer.content(item):
                report.already += 1
            else:
                report.conflicts.append(f"{layer.label} {k!r} differs in the destination: not copied")
        elif layer.name == "pools" and (clash := sorted({p.name for p in item} & taken)):
            report.conflicts.append(
                f"pool {clash[0]!r} exists in the destination in another family: not copied"
            )
        else:
            todo.append(item)
    if dry_run:
        report.copied = len(todo)
        return report
    for start in range(0, len(todo), layer.batch):
        batch = todo[start : start + layer.batch]
        for item, written in zip(batch, await dst.load(layer.name, batch), strict=True):
            if written:
                report.copied += 1
            else:
                report.conflicts.append(
                    f"{layer.label} {layer.key(item)!r}: the session is not in the destination: not copied"
                )
        if progress is not None:
            progress(layer.name, start + len(batch), len(todo))
    return report


async def copy_layers(
    src: Side, dst: Side, *, dry_run: bool = False, progress: Progress | None = None
) -> dict[str, LayerReport]:
    """Copy every layer's items ``dst`` lacks; the report per layer, usage first."""
    hidden = (await src.hidden(), await dst.hidden())
    out = {"usage": await _copy_usage(src, dst, hidden, dry_run, progress)}
    for layer in LAYERS:
        out[layer.name] = await _copy_layer(layer, src, dst, hidden, dry_run, progress)
    return out
