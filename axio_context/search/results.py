"""What a search gives, the same on every backend: its hits, best first, with notes on what it
could not see; and what a reindex did."""

from __future__ import annotations

from collections.abc import Iterator
from typing import overload

import msgspec

__all__ = ["BlockHit", "ReindexReport", "SearchHit", "SearchResults"]


def _marked(snippet: str, highlights: list[tuple[int, int]], before: str, after: str) -> str:
    out: list[str] = []
    last = 0
    for start, end in highlights:
        out += [snippet[last:start], before, snippet[start:end], after]
        last = end
    out.append(snippet[last:])
    return "".join(out)


class SearchHit(msgspec.Struct, frozen=True):
    """One message found: where it is, why, and a snippet of it.

    ``snippet`` is plain text (whitespace collapsed, ``…`` where it was cut); ``highlights`` are
    ``(start, end)`` character ranges in it of the words that matched the query. ``score`` is
    higher for better hits: the bm25 relevance in keyword mode, the cosine similarity in semantic
    mode, the fused RRF score in hybrid mode. ``keyword_rank`` / ``semantic_rank`` are the hit's
    1-based place in each ranking (None where it was not in it). ``preview``, ``title`` and
    ``project`` are the session's; ``created_at`` is the message's time (ISO 8601, UTC).
    ``kind`` is always ``"message"`` (a memory block found is a :class:`BlockHit`).
    """

    session_id: str
    position: int
    role: str
    snippet: str
    highlights: list[tuple[int, int]]
    score: float
    keyword_rank: int | None
    semantic_rank: int | None
    preview: str
    project: str | None
    created_at: str
    title: str | None = None
    kind: str = "message"

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The snippet with every highlighted range wrapped in ``before`` ... ``after``."""
        return _marked(self.snippet, self.highlights, before, after)


class BlockHit(msgspec.Struct, frozen=True, kw_only=True):
    """One memory block found by its words, at its current version: its ``label``, its owner
    (``agent_id``; ``""``: a shared block, shown to the agents in ``attached``), a ``snippet`` of
    its value with ``highlights`` as in :class:`SearchHit`, and a ``score`` (higher is better: how
    often the words occur, a word in the label or the description counting more). ``kind`` is
    always ``"block"``."""

    label: str
    agent_id: str
    snippet: str
    highlights: list[tuple[int, int]]
    score: float
    version: int
    updated_at: str
    description: str = ""
    attached: tuple[str, ...] = ()
    kind: str = "block"

    def marked(self, before: str = "[", after: str = "]") -> str:
        """The snippet with every highlighted range wrapped in ``before`` ... ``after``."""
        return _marked(self.snippet, self.highlights, before, after)


class SearchResults(msgspec.Struct, kw_only=True):
    """The hits of a search, best first, and notes on what it could not see or chose not to show.

    ``unindexed``: messages still queued for the keyword index because the fold before the search
    could not write (``why``: a read-only database, or another connection's write lock); they
    were searched by meaning only. ``not_embedded`` (semantic mode): messages with text in the
    search's scope that have no embedding, so meaning could not find them (``reindex`` embeds
    them). ``fallback``: why a hybrid search ran by keyword alone. ``withheld`` (hybrid mode):
    messages found by meaning alone and not shown, because no message contains the query's words
    (see :mod:`.engine`). :meth:`notes` says all of it in sentences for people.

    ``blocks``: the memory blocks whose current value, label or description holds every word
    of the query (keyword and hybrid modes; blocks have no embeddings), best first, beside the
    messages rather than ranked among them.

    It reads like the list of its message hits (``len``, iteration, indexing, ``== []``).
    """

    hits: list[SearchHit] = msgspec.field(default_factory=list)
    blocks: list[BlockHit] = msgspec.field(default_factory=list)
    unindexed: int = 0
    why: str | None = None
    not_embedded: int = 0
    fallback: str | None = None
    withheld: int = 0

    def notes(self) -> list[str]:
        """One sentence per note, for people (the CLI prints them to stderr)."""
        out: list[str] = []
        if self.fallback is not None:
            out.append(self.fallback)
        if self.unindexed:
            out.append(
                f"{self.unindexed:,} recent message(s) could not be searched by keyword: {self.why}"
                " (taking them into the keyword index needs a write)"
            )
        if self.not_embedded:
            out.append(
                f"{self.not_embedded:,} message(s) have no embedding and were not searched by meaning;"
                " `reindex` embeds them"
            )
        if self.withheld:
            out.append(
                "no message contains these words; semantic mode shows the messages nearest in"
                " meaning (which may be unrelated)"
            )
        return out

    def __len__(self) -> int:
        return len(self.hits)

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    @overload
    def __getitem__(self, index: int) -> SearchHit: ...
    @overload
    def __getitem__(self, index: slice) -> list[SearchHit]: ...
    def __getitem__(self, index: int | slice) -> SearchHit | list[SearchHit]:
        return self.hits[index]

    def __bool__(self) -> bool:
        return bool(self.hits)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):  # compares as the list of its hits, as it once was one
            return self.hits == other
        if isinstance(other, SearchResults):
            return msgspec.structs.astuple(self) == msgspec.structs.astuple(other)
        return NotImplemented


class ReindexReport(msgspec.Struct, frozen=True):
    """What a reindex did: embeddings added (and messages without text, which get none), binary
    codes added and removed, whether it cleared the old embeddings first, and whether the codes
    are still stale (when sqlite-vec does not run on this connection). ``estimated_bytes``: the
    space the new embeddings and codes were estimated to add before it began
    (:func:`.status.vector_bytes` per message without one). ``quantized``: float32 embeddings of
    an older database stored again as int8 (``vacuum`` then gives the space back)."""

    model: str
    dimension: int
    embedded: int
    without_text: int
    codes_added: int
    codes_removed: int
    rebuilt: bool
    codes_stale: bool
    estimated_bytes: int = 0
    quantized: int = 0
