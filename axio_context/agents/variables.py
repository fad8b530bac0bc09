"""Context variables set by a run scope, so code deep in a tool can read who it works for.

ravi's names (``current_thread_id``, ``current_agent_id``, ``current_agent_label``,
``current_parent_agent_id``) plus ``current_session_id`` (the same value as the thread id) and
``current_run_id``. Each is a :class:`contextvars.ContextVar`: read it with ``.get()``; outside a
run it gives its default (``None``). Tasks started inside a run inherit the values.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final

__all__ = [
    "current_agent_id",
    "current_agent_label",
    "current_parent_agent_id",
    "current_run_id",
    "current_session_id",
    "current_thread_id",
]

#: The session (ravi: thread) the current run works in.
current_thread_id: Final[ContextVar[str | None]] = ContextVar("axio_current_thread_id", default=None)
#: The same value as :data:`current_thread_id`, by this package's word for it.
current_session_id: Final = current_thread_id
#: The agent of the innermost run.
current_agent_id: Final[ContextVar[str | None]] = ContextVar("axio_current_agent_id", default=None)
#: The innermost run's agent label (a display name; ``""`` when it has none).
current_agent_label: Final[ContextVar[str | None]] = ContextVar("axio_current_agent_label", default=None)
#: The agent that started the innermost run's agent (a subagent's parent), if any.
current_parent_agent_id: Final[ContextVar[str | None]] = ContextVar(
    "axio_current_parent_agent_id", default=None
)
#: The innermost run's id.
current_run_id: Final[ContextVar[str | None]] = ContextVar("axio_current_run_id", default=None)
