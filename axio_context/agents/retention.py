"""What happens to an agent's messages when its run ends (ravi's ``HistoryRetention``)."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["HistoryRetention"]


class HistoryRetention(StrEnum):
    """``PERMANENT`` keeps a run's messages, ``RUN`` clears them when the run ends (however it
    ends), ``NONE`` never writes them."""

    PERMANENT = "permanent"
    RUN = "run"
    NONE = "none"
