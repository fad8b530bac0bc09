"""View strategies: what the model sees, computed before each call, never deleting anything.

A strategy takes the messages a store returns and gives back a (usually smaller) list for the
next model call; the store is not touched. ``CompactionPipeline([...])`` feeds each step's
output to the next. Steps are :class:`Strategy` objects, objects with ravi's
``async compact(raw)``, or plain callables ``list[Message] -> list[Message]`` (sync or async,
optionally taking a :class:`CompactionContext` as second argument, or first, as pydantic-ai's
history processors take theirs: ``def proc(ctx, messages)``). Every strategy also has
``await strategy.compact(raw)``.

Every strategy ends with :func:`~axio_context.compaction.pairs.repair_tool_pairs`, so no view
starts with a tool_result or holds a call without its result (except calls in the final
assistant message, still awaiting results); a call whose result never arrived gets a synthetic
error result in the view. Plain-callable steps are repaired the same way.

Strategies that cut history keep the *head* of a view: leading system messages and a summary
pair written by an earlier compaction.

The package: :mod:`.base` (the protocol, the pipeline, the token budget), :mod:`.windows`,
:mod:`.tools` and :mod:`.summarization`.
"""

from __future__ import annotations

from .base import (
    CompactionContext,
    CompactionPipeline,
    Compacts,
    Step,
    Strategy,
    TokenBudget,
    as_strategy,
    head_length,
    message_chars,
)
from .summarization import Summarization
from .tools import PruneToolCalls, TruncateToolResults
from .windows import HardTruncation, MergeConsecutive, RepairToolPairs, SlidingWindow

__all__ = [
    "CompactionContext",
    "CompactionPipeline",
    "Compacts",
    "HardTruncation",
    "MergeConsecutive",
    "PruneToolCalls",
    "RepairToolPairs",
    "SlidingWindow",
    "Step",
    "Strategy",
    "Summarization",
    "TokenBudget",
    "TruncateToolResults",
    "as_strategy",
    "head_length",
    "message_chars",
]
