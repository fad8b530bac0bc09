"""How an agent's conversation sits among sessions, the same on every backend: the id of the
session holding it (so a copy between backends keeps the names), and which positions a page of
its visible messages spans when ``clear_run`` hid some."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["hashed_session_id", "readable_session_id", "visible_window"]


def readable_session_id(agent_id: str, thread_id: str) -> str:
    """``<thread>:<agent>``, or the thread id alone for the agent ``""``."""
    return f"{thread_id}:{agent_id}" if agent_id else thread_id


def hashed_session_id(agent_id: str, thread_id: str) -> str:
    """The id used when the readable one is another agent's or too long."""
    digest = hashlib.sha256(f"{agent_id}\0{thread_id}".encode()).hexdigest()[:32]
    return f"agent-{digest}"


def visible_window(hidden: Sequence[int], offset: int, limit: int | None, length: int) -> tuple[int, int]:
    """Positions ``[start, end)`` holding visible messages ``offset .. offset + limit``, given the
    sorted hidden positions and the transcript's ``length``."""
    start, i = offset, 0
    while i < len(hidden) and hidden[i] <= start:
        start += 1
        i += 1
    if limit is None:
        return start, length
    end = start + limit
    while i < len(hidden) and hidden[i] < end:
        end += 1
        i += 1
    return start, min(end, length)
