"""The ``axio-context`` command line: a click skin over :class:`~axio_context_sqlite.Database`.

Each command opens the database, makes one library call and formats the result: a table or
Markdown for people, ``--json`` (an array) or ``--nl`` (one object per line) for programs. The
library's named errors become one-line messages and exit code 1; usage errors are click's (2).
:mod:`.app` holds the group; importing the command modules registers their commands on it.
"""

from . import (
    blocks,
    browsing,
    copying,
    encrypting,
    info,
    maintenance,
    mcp_server,
    memory,
    pools,
    searching,
    sessions,
    state,
    transfer,
    usage,
)
from .app import cli, default_db_path, main

__all__ = [
    "blocks",
    "browsing",
    "cli",
    "copying",
    "default_db_path",
    "encrypting",
    "info",
    "main",
    "maintenance",
    "mcp_server",
    "memory",
    "pools",
    "searching",
    "sessions",
    "state",
    "transfer",
    "usage",
]
