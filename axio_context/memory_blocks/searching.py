"""Memory blocks in the main ``search``: the blocks whose current value, label or description
holds every word of a person's query, as :class:`~axio_context.search.results.BlockHit` s with a
snippet of the value and its words highlighted, written once for every backend over
:meth:`~.store.BlockStore.search`.

Blocks are matched by their words only (they have no embeddings): a query's words are its runs of
letters and digits, as the keyword index splits them, each found anywhere in the block, in any
case (a phrase's words need not be side by side, and ``pars*`` matches as ``pars``). A block's
score counts how often the words occur in its value, a word in its label counting 3 and one in
its description 2, so a block named for the words ranks above one that mentions them.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final, Protocol

from axio_context.search.query import query_words
from axio_context.search.results import BlockHit

from .model import StoredBlock

__all__ = ["SNIPPET_CHARS", "BlockSearcher", "block_hit", "find_blocks"]

#: The longest snippet of a block's value, in characters (without the ``…`` marks).
SNIPPET_CHARS: Final = 160
#: How much of the value before the first match a cut snippet keeps.
_LEAD: Final = 40


class BlockSearcher(Protocol):
    """What :func:`find_blocks` needs of a block store (its :meth:`~.store.BlockStore.search`)."""

    async def search(
        self, text: str, *, agent_id: str | None = None, since: datetime | None = None
    ) -> list[StoredBlock]: ...


def _spans(text: str, words: list[str]) -> list[tuple[int, int]]:
    """Where any of ``words`` occurs in ``text`` (any case), merged, in order."""
    found = sorted(
        (m.start(), m.end()) for w in words for m in re.finditer(re.escape(w), text, re.IGNORECASE)
    )
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _count(text: str, words: list[str]) -> int:
    return sum(len(re.findall(re.escape(w), text, re.IGNORECASE)) for w in words)


def block_hit(block: StoredBlock, words: list[str]) -> BlockHit:
    """``block`` as a hit for ``words``: its value with whitespace collapsed, cut to
    :data:`SNIPPET_CHARS` around the first match (``…`` where it was cut), the words highlighted."""
    text = " ".join(block.value.split())
    spans = _spans(text, words)
    snippet = text
    if len(text) > SNIPPET_CHARS:
        start = max(0, spans[0][0] - _LEAD) if spans else 0
        end = min(len(text), start + SNIPPET_CHARS)
        start = max(0, end - SNIPPET_CHARS)
        lead = "…" if start else ""
        snippet = lead + text[start:end] + ("…" if end < len(text) else "")
        shift = len(lead) - start
        spans = [(a + shift, b + shift) for a, b in spans if a >= start and b <= end]
    score = _count(text, words) + 3 * _count(block.label, words) + 2 * _count(block.description, words)
    return BlockHit(
        label=block.label,
        agent_id=block.agent_id,
        snippet=snippet,
        highlights=spans,
        score=float(score),
        version=block.version,
        updated_at=block.updated_at,
        description=block.description,
        attached=block.attached,
    )


async def find_blocks(
    store: BlockSearcher,
    query: str,
    *,
    k: int,
    agent_id: str | None = None,
    since: datetime | None = None,
) -> list[BlockHit]:
    """The ``k`` blocks that best match ``query``'s words, best first (then by label and owner);
    ``agent_id``: only the blocks it sees; ``since``: only those changed since. A query without a
    word finds none."""
    words, _ = query_words(query, False)
    if not words:
        return []
    found = await store.search(" ".join(words), agent_id=agent_id, since=since)
    hits = [block_hit(b, words) for b in found]
    hits.sort(key=lambda h: (-h.score, h.label, h.agent_id))
    return hits[:k]
