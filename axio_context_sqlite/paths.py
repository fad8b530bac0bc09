"""Where the database lives when nobody names one: one answer for the library and the CLI.

``$AXIO_CONTEXT_DB`` wins; without it the file is ``context.db`` in the user data directory
(platformdirs: ``~/.local/share/axio-context`` on Linux). ``connect()``, ``open_database()``
and ``axio-context`` without ``--db`` all use :func:`default_db_path`, so an agent writing
through the library and a person reading with the command line meet in the same file.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path

import platformdirs

__all__ = ["ENV_VAR", "PathSource", "db_path", "default_db_path"]

#: The environment variable naming the database used when no path is given.
ENV_VAR = "AXIO_CONTEXT_DB"


class PathSource(StrEnum):
    """Where the database path in use came from."""

    ARGUMENT = "argument"  # given by the caller (the CLI's --db)
    ENVIRONMENT = "environment"  # $AXIO_CONTEXT_DB
    DEFAULT = "default"  # context.db in the user data directory


def _user_data_file() -> Path:
    return platformdirs.user_data_path("axio-context") / "context.db"


def db_path(path: str | Path | None = None) -> tuple[Path, PathSource]:
    """The database file for ``path`` (None: :func:`default_db_path`), ``~`` expanded, and
    where it came from."""
    if path is not None:
        return Path(path).expanduser(), PathSource.ARGUMENT
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser(), PathSource.ENVIRONMENT
    return _user_data_file(), PathSource.DEFAULT


def default_db_path() -> Path:
    """The database used when no path is given: ``$AXIO_CONTEXT_DB`` if set, else ``context.db``
    in the user data directory."""
    return db_path()[0]
