"""An agent's resumable state persisted with its session (:func:`save_state`, :func:`load_state`),
subagent histories as sessions owned by it, and the session tree the CLI lists."""

from .saving import StoredState, load_state, load_stored, save_state, subagent_session_id
from .tree import SessionNode, descendants, session_tree

__all__ = [
    "SessionNode",
    "StoredState",
    "descendants",
    "load_state",
    "load_stored",
    "save_state",
    "session_tree",
    "subagent_session_id",
]
