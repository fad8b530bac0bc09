"""UsageGuard: limits applied to persisted usage, so they hold across restarts.

pydantic-ai checks its limits against the usage of the run in memory; a guard checks them
against what the recorder holds for a scope (a session, agent, run or project, and since when),
so a budget for a project survives a crash and binds every process that records into the same
database. Before a request, with ``count_tokens_before_request`` on, it counts the prompt's
tokens (our estimator, or an async counter such as a provider's count-tokens call) and refuses a
request that would cross a limit.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from copy import copy
from datetime import datetime
from typing import TypeAlias

from ..messages import Message
from ..tokens import TokenCounter, estimate_tokens
from .counts import RunUsage, check_count
from .errors import LimitExceeded, UsageError
from .limits import UsageLimits
from .records import UsageRecorder

__all__ = ["PromptCounter", "UsageGuard"]

#: What counts a prompt's tokens: a TokenCounter (per message, like the default estimator) or an
#: async function of the whole prompt (a provider's count-tokens endpoint).
PromptCounter: TypeAlias = TokenCounter | Callable[[Sequence[Message]], Awaitable[int]]


class UsageGuard:
    """``limits`` checked against the recorder's persisted usage of one scope.

    The scope is every filter given (``session_id``, ``agent``, ``run``, ``project``,
    ``since``); at least one is required. ``counter`` counts prompts for the pre-flight check.
    """

    def __init__(
        self,
        recorder: UsageRecorder,
        limits: UsageLimits,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        run: str | None = None,
        project: str | None = None,
        since: datetime | None = None,
        counter: PromptCounter | None = None,
    ) -> None:
        if not isinstance(limits, UsageLimits):
            raise UsageError(f"limits must be a UsageLimits, not {type(limits).__name__}")
        scope = {"session": session_id, "agent": agent, "run": run, "project": project}
        if all(v is None for v in scope.values()):
            raise UsageError("a UsageGuard needs a scope: session_id, agent, run or project")
        self._recorder = recorder
        self.limits = limits
        self._filters = {
            "session_id": session_id,
            "agent": agent,
            "run": run,
            "project": project,
            "since": since,
        }
        self.scope = ", ".join(f"{k} {v!r}" for k, v in scope.items() if v is not None)
        self._counter = counter

    async def usage(self) -> RunUsage:
        """The scope's persisted usage (one indexed query)."""
        return await self._recorder.totals(**self._filters)  # type: ignore[arg-type]

    async def count_prompt(self, prompt: Sequence[Message]) -> int:
        """The prompt's tokens, by the guard's counter (the default estimator without one)."""
        counter = self._counter
        if counter is None or hasattr(counter, "count"):
            return estimate_tokens(prompt, counter)
        counted: object = counter(prompt)
        if inspect.isawaitable(counted):
            counted = await counted
        return check_count("prompt_tokens", counted)

    async def check_before_request(self, prompt: Sequence[Message] | None = None) -> RunUsage:
        """Raise :class:`UsageLimitExceeded` if the next request would cross a limit. When the
        limits' ``count_tokens_before_request`` is on (as in pydantic-ai, and only then),
        ``prompt`` (the window about to be sent) is counted first, and a request that would cross
        the per-request, input or total limit is refused. Returns the scope's usage."""
        usage = await self.usage()
        with self._scoped():
            self.limits.check_before_request(usage)
            if prompt is not None and self.limits.count_tokens_before_request:
                self.limits.check_prompt(usage, await self.count_prompt(prompt))
        return usage

    async def check_before_tool_call(self, tool_calls: int = 1) -> RunUsage:
        """Raise if ``tool_calls`` more calls would cross ``tool_calls_limit``."""
        usage = await self.usage()
        projected = copy(usage)
        projected.tool_calls += check_count("tool_calls", tool_calls)
        with self._scoped():
            self.limits.check_before_tool_call(projected)
        return usage

    async def check_after_response(self) -> RunUsage:
        """Raise if the usage recorded so far crosses a token or cost limit (pydantic-ai's
        ``check_tokens`` and ``check_cost`` after each response)."""
        usage = await self.usage()
        with self._scoped():
            self.limits.check_tokens(usage)
            self.limits.check_cost(usage, warn_if_cost_unavailable=False)
        return usage

    def _scoped(self) -> _Scoped:
        return _Scoped(self.scope)


class _Scoped:
    """Adds the guard's scope to a UsageLimitExceeded raised inside it."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, LimitExceeded):
            exc.add_scope(self.scope)
