"""Usage and limits with pydantic-ai's names, recorded per request and checked across restarts.

:class:`RequestUsage`, :class:`RunUsage`, :class:`UsageLimits` and :class:`UsageLimitExceeded`
are pydantic-ai 2.x's, field for field (``pydantic_bridge`` converts both ways). A
:class:`UsageRecorder` keeps per-request rows against session, agent, run and model
(:class:`MemoryUsageRecorder` here, ``axio_context_sqlite.usage.SQLiteUsageRecorder`` on disk);
a :class:`UsageGuard` checks limits against a scope's recorded usage before each request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import errors
from .counts import RequestUsage, RunUsage
from .errors import LimitExceeded, UsageError
from .guard import PromptCounter, UsageGuard
from .limits import UsageLimits
from .memory import MemoryUsageRecorder
from .records import GROUPS, GroupBy, UsageRecord, UsageRecorder, UsageTotals

__all__ = [
    "GROUPS",
    "GroupBy",
    "LimitExceeded",
    "MemoryUsageRecorder",
    "PromptCounter",
    "RequestUsage",
    "RunUsage",
    "UsageError",
    "UsageGuard",
    "UsageLimitExceeded",
    "UsageLimits",
    "UsageRecord",
    "UsageRecorder",
    "UsageTotals",
]

if TYPE_CHECKING:
    from .errors import UsageLimitExceeded
else:

    def __getattr__(name: str) -> Any:
        # UsageLimitExceeded is built on first use (see .errors): pydantic-ai stays unimported.
        if name == "UsageLimitExceeded":
            return errors.exceeded_class()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
