"""The agent runtime layer (ravi's agents contracts): messages per agent and session tagged with
the run that wrote them, retention when a run ends, and the prompt window before each call.

Contracts and in-memory versions live here; the SQLite provider is
:class:`axio_context_sqlite.agents.SQLiteHistoryProvider`. See docs/agents.md.
"""

from .agent import AgentContext, AgentRun
from .compaction import (
    CompactionPipeline,
    CompactionStrategy,
    SelectiveToolCallCompactionStrategy,
    SlidingWindowCompaction,
    SummarizationCompaction,
    TokenBudgetComposedStrategy,
    ToolResultCompactionStrategy,
    TruncationStrategy,
)
from .config import ContextConfig, Pipeline
from .errors import AgentRuntimeError, RunSessionError
from .history import HistoryProvider, InMemoryHistoryProvider
from .retention import HistoryRetention
from .variables import (
    DEFAULT_THREAD_ID,
    current_agent_id,
    current_agent_label,
    current_parent_agent_id,
    current_run_id,
    current_session_id,
    current_thread_id,
)

__all__ = [
    "DEFAULT_THREAD_ID",
    "AgentContext",
    "AgentRun",
    "AgentRuntimeError",
    "CompactionPipeline",
    "CompactionStrategy",
    "ContextConfig",
    "HistoryProvider",
    "HistoryRetention",
    "InMemoryHistoryProvider",
    "Pipeline",
    "RunSessionError",
    "SelectiveToolCallCompactionStrategy",
    "SlidingWindowCompaction",
    "SummarizationCompaction",
    "TokenBudgetComposedStrategy",
    "ToolResultCompactionStrategy",
    "TruncationStrategy",
    "current_agent_id",
    "current_agent_label",
    "current_parent_agent_id",
    "current_run_id",
    "current_session_id",
    "current_thread_id",
]
