"""AutoCompactStore: axio's auto-compacting wrapper, rebuilt so compaction never loses anything.

axio 0.12 clears the store and re-appends a compacted list: the transcript is destroyed, a crash
between the clear and the re-appends empties the session, and messages appended while the
summary was being written are dropped. Here, on a store that keeps checkpoints (memory and
SQLite), a compaction is:

1. read the latest checkpoint and the current view (``summary + messages after it``);
2. choose the split position ``p`` in the full transcript (never between a call and its result);
3. run the summarizer on the previous summary plus the messages up to ``p``, holding no store
   lock or transaction, so appends go on meanwhile;
4. write one checkpoint at ``p`` in one atomic step.

Leading ``system`` messages are never summarized: the checkpoint's summary starts with them
verbatim (``[*system, summary, acknowledgement]``), so the view after any number of compactions
still opens with the system prompt, as the view strategies keep it.

Messages appended during step 3 lie after ``p`` and stay in the view after the new summary; the
full transcript is untouched. One compaction runs at a time per wrapped store. A store without
checkpoints gets axio's behaviour (clear and re-append), which is lossy: the old messages are
gone from that store, and a crash between the clear and the re-append can lose the session.

The view this wrapper returns repairs interrupted tool calls: an assistant ``tool_use`` whose
result never arrived gets a synthetic ``is_error`` result saying the call was interrupted, so one
crashed turn does not break every later request. The stored transcript is not changed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Callable, Iterable, Sequence

from ..checkpoints import Checkpoint, CheckpointStore
from ..context import ContextStore, check_limit
from ..errors import CheckpointError, CheckpointsUnsupportedError
from ..messages import Message, SessionInfo
from ..tokens import estimate_tokens
from .aliases import UNSET, Unset, resolve_alias
from .compact import leading_system_count, one_line, plan_split, run_summarizer
from .forking import fork_with_checkpoint
from .guarded import add_checkpoint_if_view, starts_with, supports_checkpoints
from .pairs import repair_tool_pairs
from .summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    context_window_of,
    summarizer_name,
    summary_messages,
)
from .summarizers.clients import CompletionTransport

__all__ = ["AutoCompactStore", "add_checkpoint_if_view", "starts_with", "supports_checkpoints"]

logger = logging.getLogger("axio_context.compaction")

_locks: weakref.WeakKeyDictionary[object, asyncio.Lock] = weakref.WeakKeyDictionary()


class AutoCompactStore(ContextStore):
    """Wraps any ContextStore and compacts it when a model call's input passes the threshold.

    The trigger is axio's: :meth:`add_context_tokens` with ``input_tokens`` above
    ``max_tokens`` (default ``threshold`` times the summarizer's context window, read from
    ``summarizer.context_window`` or ``summarizer.model.context_window``, else 128,000). Below
    the threshold it reads nothing. ``summarizer=None`` uses the offline
    :class:`ExtractiveSummarizer`; an axio ``CompletionTransport`` (axio's call form) summarizes
    through the transport, and its ``model.context_window`` sizes the threshold; anything that
    is no summarizer is a :class:`TypeError` here, not a warning at every compaction. axio's name
    ``transport=`` is accepted for ``summarizer``. Checkpoint methods are forwarded to the
    wrapped store.

    A failed compaction never raises out of ``add_context_tokens``: it is logged as one line at
    WARNING (traceback at DEBUG), kept in :attr:`last_compaction_error`, and passed to
    ``on_error`` when given. ``into_fork=True`` compacts into a fork instead (see :mod:`.forking`):
    the wrapper follows it, :attr:`session_chain` lists it, ``on_fork(old_id, new_id)`` hears of it.
    """

    #: The exception of the latest failed compaction attempt; None until one fails and again
    #: after a compaction succeeds.
    last_compaction_error: BaseException | None

    def __init__(
        self,
        store: ContextStore,
        summarizer: Summarizer | CompletionTransport | Unset | None = UNSET,
        *,
        keep_recent: int = 6,
        max_tokens: int | None = None,
        threshold: float = 0.75,
        system_prompt: str = DEFAULT_COMPACTION_PROMPT,
        repair_view: bool = True,
        on_error: Callable[[BaseException], None] | None = None,
        transport: Summarizer | CompletionTransport | Unset | None = UNSET,
        into_fork: bool = False,
        on_fork: Callable[[str, str], None] | None = None,
    ) -> None:
        if keep_recent < 0:
            raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
        if not threshold > 0:
            raise ValueError(f"threshold must be positive, got {threshold}")
        if max_tokens is not None and max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        self._store = store
        chosen = resolve_alias("AutoCompactStore", "summarizer", summarizer, "transport", transport)
        self._summarizer: Summarizer = (
            ExtractiveSummarizer() if chosen is None else check_summarizer(chosen, "AutoCompactStore")
        )
        self._keep_recent = keep_recent
        self._threshold = threshold
        self._system_prompt = system_prompt
        self._repair_view = repair_view
        if max_tokens is not None:
            self._max_tokens = max_tokens
        else:
            self._max_tokens = int(context_window_of(self._summarizer) * threshold)
        self._own_lock = asyncio.Lock()
        self._on_error = on_error
        self.last_compaction_error = None
        if into_fork and not supports_checkpoints(store):
            raise CheckpointsUnsupportedError(f"into_fork needs checkpoints; {type(store).__name__} has none")
        self._into_fork, self._on_fork = into_fork, on_fork
        self._gate = asyncio.Lock()  # held while the wrapper swaps to a fork: appends wait
        self.session_chain: list[str] = [store.session_id]  # oldest first; each fork is added

    def _failed(self, exc: BaseException) -> None:
        self.last_compaction_error = exc
        if self._on_error is not None:
            self._on_error(exc)

    # -- settings ----------------------------------------------------------------------------

    @property
    def store(self) -> ContextStore:
        """The wrapped store."""
        return self._store

    @property
    def summarizer(self) -> Summarizer:
        """What writes the summaries."""
        return self._summarizer

    @property
    def max_tokens(self) -> int:
        """Compaction starts when a call's input tokens exceed this."""
        return self._max_tokens

    @property
    def supports_checkpoints(self) -> bool:
        """True when compaction writes checkpoints (lossless) rather than clearing (lossy)."""
        return supports_checkpoints(self._store)

    def _lock(self) -> asyncio.Lock:
        # One compaction at a time per wrapped store, even across several wrappers of it.
        try:
            lock = _locks.get(self._store)
            if lock is None:
                lock = _locks[self._store] = asyncio.Lock()
            return lock
        except TypeError:  # a store that cannot be weakly referenced or hashed
            return self._own_lock

    # -- the ContextStore contract, delegated ------------------------------------------------

    @property
    def session_id(self) -> str:
        return self._store.session_id

    async def append(self, message: Message) -> None:
        async with self._gate:
            await self._store.append(message)

    async def append_many(self, messages: Iterable[Message]) -> None:
        async with self._gate:
            await self._store.append_many(messages)

    async def get_history(self, limit: int | None = None) -> list[Message]:
        """The model's view: the latest summary and what follows it, interrupted calls repaired;
        with ``limit``, its last ``limit`` messages (from the wrapped store's tail read)."""
        if limit is None:
            view = await self._raw_view()
        else:
            view = await self._store.get_tail(check_limit(limit))
        return repair_tool_pairs(view, drop_orphans=False) if self._repair_view else view

    async def get_tail(self, limit: int) -> list[Message]:
        return await self.get_history(limit=check_limit(limit))

    async def _raw_view(self) -> list[Message]:
        # The stored view, without any wrapper's repair: compaction maps its indices to
        # positions in the transcript, which inserted synthetic messages would shift.
        if isinstance(self._store, AutoCompactStore):
            return await self._store._raw_view()
        return await self._store.get_history()

    async def clear(self) -> None:
        await self._store.clear()

    async def pop(self) -> Message | None:
        """The wrapped store's ``pop()``, where it has one."""
        pop = getattr(self._store, "pop", None)
        if pop is None:
            raise NotImplementedError(f"{type(self._store).__name__} does not support pop()")
        result: Message | None = await pop()
        return result

    async def fork(self) -> AutoCompactStore:
        """An AutoCompactStore, with the same settings, around a fork of the wrapped store."""
        return AutoCompactStore(
            await self._store.fork(),
            self._summarizer,
            keep_recent=self._keep_recent,
            max_tokens=self._max_tokens,
            threshold=self._threshold,
            system_prompt=self._system_prompt,
            repair_view=self._repair_view,
            on_error=self._on_error,
            into_fork=self._into_fork,
            on_fork=self._on_fork,
        )

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        await self._store.set_context_tokens(input_tokens, output_tokens)

    async def get_context_tokens(self) -> tuple[int, int]:
        return await self._store.get_context_tokens()

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        """Add to the totals; compact when this call's input exceeded ``max_tokens``."""
        await self._store.add_context_tokens(input_tokens, output_tokens)
        if input_tokens > self._max_tokens:
            await self._compact(wait=False)

    async def close(self) -> None:
        await self._store.close()

    async def list_sessions(self) -> list[SessionInfo]:
        return await self._store.list_sessions()

    # -- checkpoints, forwarded --------------------------------------------------------------

    async def get_full_history(self) -> list[Message]:
        """Every message of the transcript (the view itself on a store without checkpoints)."""
        if supports_checkpoints(self._store):
            return await self._checkpoints().get_full_history()
        return await self._store.get_history()

    async def add_checkpoint(
        self, checkpoint: Checkpoint, *, if_view_starts_with: Sequence[Message] | None = None
    ) -> Checkpoint:
        """The wrapped store's ``add_checkpoint``; :class:`CheckpointsUnsupportedError` without one.

        With ``if_view_starts_with``, :class:`CheckpointError` unless the (unrepaired) view still
        starts with those messages; see :func:`add_checkpoint_if_view`.
        """
        if not supports_checkpoints(self._store):
            raise CheckpointsUnsupportedError(f"{type(self._store).__name__} keeps no checkpoints")
        if if_view_starts_with is None:
            return await self._checkpoints().add_checkpoint(checkpoint)
        return await add_checkpoint_if_view(self._checkpoints(), checkpoint, if_view_starts_with)

    async def list_checkpoints(self) -> list[Checkpoint]:
        """The wrapped store's checkpoints, oldest first (none on a store without them)."""
        if not supports_checkpoints(self._store):
            return []
        return await self._checkpoints().list_checkpoints()

    async def estimated_view_tokens(self) -> int:
        """Estimated tokens of the view: from cached counts where the store keeps checkpoints,
        else by reading and estimating the history."""
        if supports_checkpoints(self._store):
            return await self._checkpoints().estimated_view_tokens()
        return estimate_tokens(await self._store.get_history())

    def _checkpoints(self) -> CheckpointStore:
        store = self._store
        assert isinstance(store, CheckpointStore)
        return store

    # -- compaction --------------------------------------------------------------------------

    async def compact(self) -> bool:
        """Compact now (waiting for a compaction already running); True when something changed."""
        return await self._compact(wait=True)

    async def maybe_compact(self) -> bool:
        """Compact when the estimated view is over ``max_tokens`` (for loops that get no usage
        figures from their provider); cheap on checkpoint stores, which cache the estimate."""
        if await self.estimated_view_tokens() > self._max_tokens:
            return await self._compact(wait=False)
        return False

    async def _compact(self, *, wait: bool) -> bool:
        lock = self._lock()
        if lock.locked() and not wait:
            logger.debug("compaction already running for session %s; not starting another", self.session_id)
            return False
        async with lock:
            if supports_checkpoints(self._store):
                return await self._compact_with_checkpoint(self._checkpoints())
            return await self._compact_lossy()

    async def _compact_with_checkpoint(self, store: CheckpointStore) -> bool:
        checkpoints = await store.list_checkpoints()
        previous = checkpoints[-1] if checkpoints else None
        view = await self._raw_view()
        head = len(previous.summary) if previous else 0
        base = previous.position if previous else 0
        if previous is not None and not starts_with(view, previous.summary):
            logger.warning("checkpoint changed while compaction started; skipping this compaction")
            return False
        # The system prompt (leading system messages of the view, carried in the previous
        # checkpoint's summary after the first compaction) stays verbatim ahead of the summary.
        system = leading_system_count(view)
        lower = max(head, system)
        split = plan_split(view, self._keep_recent, lower=lower)
        if split <= lower:
            return False
        before = estimate_tokens(view)
        text = await run_summarizer(
            self._summarizer, view[system:split], self._system_prompt, on_error=self._failed
        )
        if text is None:
            return False
        summary = [*view[:system], *summary_messages(text)]
        after = before - estimate_tokens(view[:split]) + estimate_tokens(summary)
        checkpoint = Checkpoint(
            position=base + split - head,
            summary=summary,
            tokens_before=before,
            tokens_after=max(after, 0),
            summarizer=summarizer_name(self._summarizer),
        )
        try:
            # Only if what was summarized is still the start of the view: a clear or a pop while
            # the summarizer ran, even followed by new appends, must not put an old summary over
            # new messages. Appends alone leave the prefix as it was.
            if not self._into_fork:
                await add_checkpoint_if_view(store, checkpoint, view[:split])
            else:
                write = functools.partial(add_checkpoint_if_view, checkpoint=checkpoint, prefix=view[:split])
                async with self._gate:
                    self._store = await fork_with_checkpoint(self._store, write)
                    self.session_chain.append(self._store.session_id)
                if self._on_fork is not None:
                    self._on_fork(*self.session_chain[-2:])
        except CheckpointError as exc:
            logger.warning("Context compaction abandoned, the history changed meanwhile: %s", one_line(exc))
            return False
        self.last_compaction_error = None
        return True

    async def _compact_lossy(self) -> bool:
        before = await self._store.get_history()
        system = leading_system_count(before)
        split = plan_split(before, self._keep_recent, lower=system)
        if split <= system:
            return False
        text = await run_summarizer(
            self._summarizer, before[system:split], self._system_prompt, on_error=self._failed
        )
        if text is None:
            return False
        now = await self._store.get_history()
        if not starts_with(now, before):
            logger.warning("Context compaction abandoned: the history changed (not only appends) meanwhile")
            return False
        tokens = await self._store.get_context_tokens()
        # Lossy by necessity: this store has no checkpoints, so the old messages are replaced.
        await self._store.clear()
        await self._store.append_many(
            [*before[:system], *summary_messages(text), *before[split:], *now[len(before) :]]
        )
        await self._store.set_context_tokens(*tokens)
        self.last_compaction_error = None
        return True
