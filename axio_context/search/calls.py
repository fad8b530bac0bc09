"""What every backend's ``search`` takes, checked once: the arguments of a search across every
session, as one :class:`SearchRequest` handed to the backend's own engine; and the memory blocks
a search finds beside the messages (:mod:`axio_context.memory_blocks.searching`), the same on
every backend."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple, Protocol

from ..embeddings import Embedder
from ..memory_blocks.searching import BlockSearcher, find_blocks
from ..transcript.times import epoch_ms
from .query import MAX_K, MODES, Mode, check_bounds
from .results import SearchResults

__all__ = [
    "ROLES",
    "HasBlocks",
    "MessageSearch",
    "SearchRequest",
    "check_k",
    "searches_blocks",
    "why_no_blocks",
]

#: The roles a search may keep.
ROLES = ("user", "assistant", "system")


class HasBlocks(Protocol):
    """What ``search`` needs of a database's memory stores: its memory blocks."""

    def blocks(self) -> BlockSearcher: ...


def check_k(k: int) -> None:
    """ValueError naming ``k`` unless it is a whole number of hits from 1 to :data:`MAX_K`."""
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, not {k!r}")


class SearchRequest(NamedTuple):
    """A search's arguments once checked (``since`` as epoch milliseconds)."""

    query: str
    k: int
    mode: Mode
    project: str | None
    session_id: str | None
    role: str | None
    since_ms: int | None
    raw: bool
    embedder: Embedder | None
    model: str | None
    agent_id: str | None
    run_id: str | None


def why_no_blocks(
    mode: Mode,
    raw: bool,
    project: str | None,
    session_id: str | None,
    role: str | None,
    run_id: str | None,
) -> str | None:
    """Why a search cannot take memory blocks in (semantic mode, a raw query, a filter only
    messages have: project, session, role, run), in words for people; None when it can."""
    if mode == "semantic":
        return "memory blocks have no embeddings: search them in keyword or hybrid mode"
    if raw:
        return "a raw query is FTS5 syntax, which memory blocks do not take"
    for name, value in (("project", project), ("session", session_id), ("role", role), ("run", run_id)):
        if value is not None:
            return f"a {name} filter is for messages only; memory blocks have none"
    return None


def searches_blocks(
    blocks: bool | None,
    mode: Mode,
    raw: bool,
    project: str | None,
    session_id: str | None,
    role: str | None,
    run_id: str | None,
) -> bool:
    """Whether a search takes memory blocks in: ``blocks=None`` does unless :func:`why_no_blocks`
    says why not; ``blocks=True`` then is a ValueError saying it."""
    if blocks is not None and not isinstance(blocks, bool):
        raise ValueError(f"blocks must be True, False or None, not {blocks!r}")
    if blocks is False:
        return False
    why = why_no_blocks(mode, raw, project, session_id, role, run_id)
    if why is not None and blocks:
        raise ValueError(f"blocks=True: {why}")
    return why is None


class MessageSearch:
    """``search`` as every backend takes it; the backend runs the checked :class:`SearchRequest`,
    and its ``memory_stores().blocks()`` gives the memory blocks a search takes in."""

    async def _search(self, r: SearchRequest) -> SearchResults:
        raise NotImplementedError(f"{type(self).__name__} cannot search")

    def memory_stores(self) -> HasBlocks:
        raise NotImplementedError(f"{type(self).__name__} has no memory stores")

    async def search(
        self,
        query: str,
        *,
        k: int = 10,
        mode: Mode = "hybrid",
        project: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        raw: bool = False,
        embedder: Embedder | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        blocks: bool | None = None,
    ) -> SearchResults:
        """The ``k`` messages across every session that best match ``query``, best first, and
        beside them (in the result's ``blocks``) the ``k`` memory blocks that best match its words.

        ``mode``: ``keyword`` (FTS5 bm25 over the words; ``raw`` takes FTS5 query syntax),
        ``semantic`` (nearest embeddings; needs the database's embedder, by default the one its
        model name says), or ``hybrid`` (both, fused by reciprocal rank). Filters: ``project``
        (of the session owning the message), ``session_id`` (that session's whole transcript,
        inherited messages included), ``role``, ``since`` (message time), ``agent_id`` and
        ``run_id`` (see the backend's search; ``clear_run``'s messages are never hits). A person's words never
        raise a syntax error; a raw query FTS5 rejects raises SearchQueryError. Messages the
        keyword index has not taken in yet (the database is read-only here, or another process
        held the write lock) are counted in the result's ``unindexed``, with ``why``.

        A ``raw`` expression is a filter in every mode: each hit satisfies it (its ``NOT``,
        ``NEAR`` and column filters included), and the semantic ranking orders only the messages
        it matches, by the meaning of the words it asks for (the raw query's words: operators,
        column names and what ``NOT`` excludes are not embedded). So ``raw`` semantic and hybrid
        searches cannot see messages the keyword index has not taken in yet.

        Messages with a cosine similarity of zero or less to the query are not semantic hits.
        The embedder is ``embedder``, else the one named ``model`` (see :meth:`embedder`), else
        the database's own. A hybrid search runs as a keyword search, saying why in the result's
        ``fallback``, when no message is embedded yet, or when (no embedder or model given) the
        database's model cannot be loaded here; a semantic one raises EmbedderUnavailableError.
        A hybrid search whose words no message contains shows nothing (``withheld`` counts what
        meaning alone found; see the backend's engine); a semantic one counts the messages it
        could not see in ``not_embedded``. A query past a limit of :mod:`axio_context.search.query` (length,
        words, repeats of a word, prefixes) raises SearchQueryError, in every mode. An embedder
        whose dimension is not positive raises EmbedderDimensionError; one returning anything but
        one finite vector of its declared dimension raises EmbeddingMismatchError.

        Memory blocks (see :mod:`axio_context.memory_blocks.searching`) are matched by their
        current value's, label's and description's words, in keyword and hybrid modes; with
        ``agent_id``, only the blocks that agent sees; with ``since``, only those changed since.
        ``blocks``: None searches them unless the search is semantic or raw or has a filter
        only messages have (``project``, ``session_id``, ``role``, ``run_id``); False never;
        True always, and such a search is then a ValueError.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        check_k(k)
        if role is not None and role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        check_bounds(query, raw)
        with_blocks = searches_blocks(blocks, mode, raw, project, session_id, role, run_id)
        results = await self._search(
            SearchRequest(
                query,
                k,
                mode,
                project,
                session_id,
                role,
                epoch_ms(since),
                raw,
                embedder,
                model,
                agent_id,
                run_id,
            )
        )
        if with_blocks:
            results.blocks = await find_blocks(
                self.memory_stores().blocks(), query, k=k, agent_id=agent_id, since=since
            )
        return results
