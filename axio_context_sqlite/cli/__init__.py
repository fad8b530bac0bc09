"""The ``axio-context`` command line: a click skin over :class:`~axio_context_sqlite.Database`."""

from .commands import cli, default_db_path, main

__all__ = ["cli", "default_db_path", "main"]
