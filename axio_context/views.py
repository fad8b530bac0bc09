"""What reading a database gives, the same on every backend: a session shown, a page of a
listing, a page of the session tree a browser shows, a session tree with subagents and forks,
and a project's totals."""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from .messages import Message, SessionInfo
from .transcript import MessageRecord, SessionHeader

__all__ = [
    "MAX_DEPTH",
    "MAX_PAGE",
    "NodeKind",
    "ProjectStats",
    "SessionNode",
    "SessionPage",
    "SessionSort",
    "SessionTreePage",
    "SessionView",
    "TreeRow",
    "sort_column",
]


class SessionView(msgspec.Struct, frozen=True):
    """What ``show`` prints: the session's fields, then either the model's view or every message.

    In the view, ``summary`` is the latest checkpoint's summary (None when there is none) and
    ``messages`` start at position ``start``; with ``full`` they start at 0 and summary is None.
    """

    header: SessionHeader
    summary: list[Message] | None
    start: int
    messages: list[MessageRecord]
    #: The position of each message (``start + i`` unless ``clear_run`` hid some, or ``run_id``
    #: kept one run's), the run that wrote it (``""``: none), and whose session it is.
    positions: list[int] = msgspec.field(default_factory=list)
    runs: list[str] = msgspec.field(default_factory=list)
    agent_id: str | None = None
    thread_id: str | None = None
    #: How many of the session's messages ``clear_run`` hid (left out of every listing and count).
    hidden: int = 0


class SessionPage(msgspec.Struct, frozen=True):
    """One page of a session listing; pass ``next_cursor`` back for the next page (None at the end)."""

    sessions: list[SessionInfo]
    next_cursor: str | None


#: How a listing goes newest first: by the time a session was created, or by its last activity
#: (``updated_at``: an append, a token update, a title). The command line and the browser list by
#: ``"updated"``; the library's default stays ``"created"`` (a page cursor then never moves under
#: a writer). A cursor is only good for the order that made it.
SessionSort = Literal["created", "updated"]


def sort_column(sort: str) -> str:
    """The sessions column a :data:`SessionSort` orders by (``created_at`` or ``updated_at``)."""
    if sort == "created":
        return "created_at"
    if sort == "updated":
        return "updated_at"
    raise ValueError(f"sort must be 'created' or 'updated', not {sort!r}")


#: The most sessions (tree heads) or messages one page reads.
MAX_PAGE: Final = 10_000
#: How deep forks of forks are followed under one head (a guard against a parent_id cycle).
MAX_DEPTH: Final = 64


class TreeRow(msgspec.Struct, frozen=True):
    """One session in a tree listing: ``depth`` 0 heads a tree, a fork is one deeper than its parent."""

    info: SessionInfo
    depth: int


class SessionTreePage(msgspec.Struct, frozen=True):
    """One page of heads with their forks under them (depth first); ``next_cursor`` is None at the end."""

    rows: list[TreeRow]
    next_cursor: str | None


NodeKind = Literal["session", "fork", "subagent"]


class SessionNode(msgspec.Struct):
    """One session of the tree: its listing entry, how it hangs under its parent node (``kind``:
    ``"session"`` for a root), the subagent's name, and the sessions under it."""

    info: SessionInfo
    kind: NodeKind = "session"
    agent_name: str | None = None
    children: list[SessionNode] = []


class ProjectStats(msgspec.Struct, frozen=True):
    """Totals of one project."""

    project: str | None
    sessions: int
    messages: int
    input_tokens: int
    output_tokens: int
