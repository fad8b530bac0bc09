"""The ``--agent`` and ``--run`` options of list-sessions, show, search and export (the agent
runtime layer: see docs/agents.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["agent_options", "tag_filters"]

F = TypeVar("F", bound=Callable[..., Any])


def agent_options(what: str) -> Callable[[F], F]:
    """``--agent ID`` and ``--run ID``, their help naming ``what`` they keep."""

    def decorate(f: F) -> F:
        f = click.option("--run", "run_id", metavar="ID", help=f"Only {what} of this agent run.")(f)
        return click.option("--agent", "agent_id", metavar="ID", help=f"Only {what} of this agent.")(f)

    return decorate


def tag_filters(db: object, agent_id: str | None, run_id: str | None) -> dict[str, Any]:
    """The keyword arguments for the library call. Both backends (SQLite, PostgreSQL) keep agent
    tags; an object without them (no ``agent_session``) refuses the filters."""
    given = {k: v for k, v in (("agent_id", agent_id), ("run_id", run_id)) if v is not None}
    if given and not hasattr(db, "agent_session"):
        raise click.UsageError("--agent and --run need a database that keeps agent tags")
    return given
