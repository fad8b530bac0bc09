"""``compact_context``: axio's one-shot compaction, with a split that never breaks a tool pair."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..context import ContextStore
from ..errors import SummarizerResponseError
from ..messages import Message
from .aliases import UNSET, Unset, resolve_alias
from .pairs import repair_tool_pairs, safe_split
from .summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    is_summary_pair,
    summary_messages,
)
from .summarizers.clients import CompletionTransport

__all__ = ["compact_context", "leading_system_count", "one_line", "plan_split", "run_summarizer"]

logger = logging.getLogger("axio_context.compaction")


def leading_system_count(messages: Sequence[Message]) -> int:
    """How many messages at the start are ``system`` messages: the head every compaction keeps
    verbatim, because the system prompt is an instruction, not history to summarize."""
    i = 0
    while i < len(messages) and messages[i].role == "system":
        i += 1
    return i


def plan_split(history: Sequence[Message], keep_recent: int, *, lower: int = 0) -> int:
    """Where to cut ``history`` so about ``keep_recent`` messages stay verbatim; ``lower`` or less
    means there is nothing to compact.

    The cut never separates a call from its result (see :func:`safe_split`), and a history that
    opens with a summary pair and nothing else before the cut has nothing new to summarize.
    """
    if keep_recent < 0:
        raise ValueError(f"keep_recent must be >= 0, got {keep_recent}")
    split = safe_split(history, len(history) - keep_recent, lower=lower)
    if split - lower == 2 and is_summary_pair(history, lower):
        return lower
    return split


def one_line(exc: BaseException) -> str:
    """``exc`` as one line for a log: its type and the first line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


async def run_summarizer(
    summarizer: Summarizer,
    messages: list[Message],
    system_prompt: str,
    *,
    on_error: Callable[[BaseException], None] | None = None,
) -> str | None:
    """The summary text, or ``None`` when the summarizer fails.

    A failure is logged as ONE line at WARNING (a chat app that never configured logging must
    not get a traceback on every try) and with its traceback at DEBUG; ``on_error`` receives
    the exception (a reply that is no summary becomes a :class:`SummarizerResponseError`).
    """
    try:
        text = await summarizer(messages, system_prompt)
    except Exception as exc:
        logger.warning("Context compaction failed, keeping original history: %s", one_line(exc))
        logger.debug("Context compaction failure", exc_info=True)
        if on_error is not None:
            on_error(exc)
        return None
    if not isinstance(text, str) or not text.strip():
        error = SummarizerResponseError(f"the summarizer returned {text!r:.200}, not a summary")
        logger.warning("Context compaction failed, keeping original history: %s", one_line(error))
        if on_error is not None:
            on_error(error)
        return None
    return text


async def compact_context(
    store: ContextStore | Unset = UNSET,
    summarizer: Summarizer | CompletionTransport | Unset | None = UNSET,
    *,
    keep_recent: int = 6,
    system_prompt: str = DEFAULT_COMPACTION_PROMPT,
    context: ContextStore | Unset = UNSET,
    transport: Summarizer | CompletionTransport | Unset | None = UNSET,
) -> list[Message] | None:
    """Summarize the older part of ``store``'s history and keep the recent messages verbatim.

    Returns ``[summary (user), acknowledgement (assistant), *recent]``, ready to populate a
    fresh store, or ``None`` when there is nothing to compact or the summarizer failed (logged,
    not raised). The store is only read. ``summarizer=None`` uses the offline
    :class:`ExtractiveSummarizer`; an axio transport summarizes through the transport, as in
    axio (see :func:`check_summarizer`). When the history already opens with a summary, the
    summarizer sees it and updates it. Leading ``system`` messages are kept verbatim before the
    summary (``[*system, summary, acknowledgement, *recent]``) and never summarized: a summary
    may drop or paraphrase an instruction, and the view strategies keep them the same way.
    A call in the kept part whose result never arrived gets a synthetic ``is_error`` result
    (see :func:`repair_tool_pairs`), so the list is a valid request as it is.

    axio's names are accepted too: ``context=`` for ``store`` and ``transport=`` for
    ``summarizer``.
    """
    store = resolve_alias("compact_context", "store", store, "context", context)
    chosen = resolve_alias("compact_context", "summarizer", summarizer, "transport", transport)
    summarizer = ExtractiveSummarizer() if chosen is None else check_summarizer(chosen, "compact_context")
    history = await store.get_history()
    system = leading_system_count(history)
    split = plan_split(history, keep_recent, lower=system)
    if split <= system:
        return None
    text = await run_summarizer(summarizer, history[system:split], system_prompt)
    if text is None:
        return None
    # Repaired like AutoCompactStore's view: a call interrupted in the kept part gets its
    # synthetic error result; nothing stored is dropped, since the list may repopulate a store.
    return repair_tool_pairs(
        [*history[:system], *summary_messages(text), *history[split:]], drop_orphans=False
    )
