"""``axio-context browse``: a terminal browser of a database (Textual, the ``tui`` extra).

Sessions newest first with forks under their parent, transcripts with tool calls folded, search
as you type, fork/rename/delete/export, and live updates as other processes append. Only the
command line imports this package, and only when ``browse`` runs: the rest of the package works
without Textual installed.
"""

from __future__ import annotations

from .app import BrowserApp

__all__ = ["BrowserApp"]
