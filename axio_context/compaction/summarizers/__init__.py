"""Summarizers: what turns old messages into the text a compacted view starts with.

A summarizer is any async callable ``(messages, system_prompt) -> str``: a plain ``async def``,
the offline :class:`ExtractiveSummarizer`, or the OpenAI-compatible adapter in
``axio_context.compaction.openai``. When ``messages`` opens with an earlier summary (a user
message followed by :data:`SUMMARY_ACK`, the pair every compaction writes), the summarizer
is expected to update that summary rather than summarize it again; both built-in ones do, which
is why repeated compactions never stack summaries.

The package: :mod:`.protocol` (the protocol, its checks, the summary pair), :mod:`.rendering`
(messages as text for a summarizer) and :mod:`.extractive` (the offline summarizer).
"""

from __future__ import annotations

from .clients import check_summarizer
from .extractive import ExtractiveSummarizer
from .protocol import (
    DEFAULT_COMPACTION_PROMPT,
    SUMMARY_ACK,
    Summarizer,
    context_window_of,
    is_summary_pair,
    split_previous_summary,
    summarizer_name,
    summary_messages,
)
from .rendering import clip_middle, frame_transcript, render_messages, render_transcript

__all__ = [
    "DEFAULT_COMPACTION_PROMPT",
    "SUMMARY_ACK",
    "ExtractiveSummarizer",
    "Summarizer",
    "check_summarizer",
    "clip_middle",
    "context_window_of",
    "frame_transcript",
    "is_summary_pair",
    "render_messages",
    "render_transcript",
    "split_previous_summary",
    "summarizer_name",
    "summary_messages",
]
