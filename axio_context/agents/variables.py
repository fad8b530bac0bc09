"""Context variables set by a run scope, so code deep in a tool can read who it works for.

ravi's names (``current_thread_id``, ``current_agent_id``, ``current_agent_label``,
``current_parent_agent_id``) plus ``current_session_id`` (the same value as the thread id) and
``current_run_id``. Each is a :class:`contextvars.ContextVar`: read it with ``.get()``; outside a
run it gives its default: ravi's ``"default"`` thread (:data:`DEFAULT_THREAD_ID`), an empty
label, and ``None`` for the agent, its parent and the run (there is none). Tasks started inside a
run inherit the values.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Final

__all__ = [
    "DEFAULT_THREAD_ID",
    "current_agent_id",
    "current_agent_label",
    "current_parent_agent_id",
    "current_run_id",
    "current_session_id",
    "current_thread_id",
]

#: The thread code outside any run works in, as in ravi.
DEFAULT_THREAD_ID: Final = "default"

#: The session (ravi: thread) the current run works in; :data:`DEFAULT_THREAD_ID` outside a run.
current_thread_id: Final[ContextVar[str]] = ContextVar("axio_current_thread_id", default=DEFAULT_THREAD_ID)
#: The same value as :data:`current_thread_id`, by this package's word for it.
current_session_id: Final = current_thread_id
#: The agent of the innermost run.
current_agent_id: Final[ContextVar[str | None]] = ContextVar("axio_current_agent_id", default=None)
#: The innermost run's agent label (a display name; ``""`` when it has none or outside a run).
current_agent_label: Final[ContextVar[str]] = ContextVar("axio_current_agent_label", default="")
#: The agent that started the innermost run's agent (a subagent's parent), if any.
current_parent_agent_id: Final[ContextVar[str | None]] = ContextVar(
    "axio_current_parent_agent_id", default=None
)
#: The innermost run's id.
current_run_id: Final[ContextVar[str | None]] = ContextVar("axio_current_run_id", default=None)
