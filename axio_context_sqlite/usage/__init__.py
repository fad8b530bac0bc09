"""Persisted usage: per-request rows and their rollups in the sessions' database."""

from __future__ import annotations

from .recorder import SQLiteUsageRecorder

__all__ = ["SQLiteUsageRecorder"]
