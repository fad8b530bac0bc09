"""Compaction: keep an agent's context inside the model's window without losing the transcript.

- :func:`compact_context` and :class:`AutoCompactStore`: axio 0.12's names and signatures; on
  stores with checkpoints (memory, SQLite) compaction writes a checkpoint and deletes nothing.
- Strategies and :class:`CompactionPipeline`: the model's view, computed before each call.
- Summarizers: the :class:`Summarizer` protocol, the offline :class:`ExtractiveSummarizer`, and
  :class:`OpenAICompatibleSummarizer` for chat-completions endpoints.
- :func:`repair_tool_pairs` / :func:`safe_split`: the one rule on tool calls every view keeps.
"""

from ..checkpoints import Checkpoint, CheckpointStore
from .auto import AutoCompactStore
from .compact import compact_context, plan_split
from .guarded import add_checkpoint_if_view, supports_checkpoints
from .models import DEFAULT_CONTEXT_WINDOW, MODEL_CONTEXT_WINDOWS, context_window_for
from .openai import OpenAICompatibleSummarizer
from .pairs import (
    INTERRUPTED_RESULT_TEXT,
    is_synthetic_result,
    last_group_start,
    repair_tool_pairs,
    safe_split,
    tool_pair_problems,
)
from .strategies import (
    CompactionContext,
    CompactionPipeline,
    HardTruncation,
    MergeConsecutive,
    PruneToolCalls,
    RepairToolPairs,
    SlidingWindow,
    Step,
    Strategy,
    Summarization,
    TokenBudget,
    TruncateToolResults,
    as_strategy,
    head_length,
    message_chars,
)
from .summarizers import (
    DEFAULT_COMPACTION_PROMPT,
    SUMMARY_ACK,
    ExtractiveSummarizer,
    Summarizer,
    check_summarizer,
    clip_middle,
    context_window_of,
    frame_transcript,
    is_summary_pair,
    render_messages,
    render_transcript,
    split_previous_summary,
    summarizer_name,
    summary_messages,
)

__all__ = [
    "DEFAULT_COMPACTION_PROMPT",
    "DEFAULT_CONTEXT_WINDOW",
    "INTERRUPTED_RESULT_TEXT",
    "MODEL_CONTEXT_WINDOWS",
    "SUMMARY_ACK",
    "AutoCompactStore",
    "Checkpoint",
    "CheckpointStore",
    "CompactionContext",
    "CompactionPipeline",
    "ExtractiveSummarizer",
    "HardTruncation",
    "MergeConsecutive",
    "OpenAICompatibleSummarizer",
    "PruneToolCalls",
    "RepairToolPairs",
    "SlidingWindow",
    "Step",
    "Strategy",
    "Summarization",
    "Summarizer",
    "TokenBudget",
    "TruncateToolResults",
    "add_checkpoint_if_view",
    "as_strategy",
    "check_summarizer",
    "clip_middle",
    "compact_context",
    "context_window_for",
    "context_window_of",
    "frame_transcript",
    "head_length",
    "is_summary_pair",
    "is_synthetic_result",
    "last_group_start",
    "message_chars",
    "plan_split",
    "render_messages",
    "render_transcript",
    "repair_tool_pairs",
    "safe_split",
    "split_previous_summary",
    "summarizer_name",
    "summary_messages",
    "supports_checkpoints",
    "tool_pair_problems",
]
