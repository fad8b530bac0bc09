"""Persisted usage on PostgreSQL: per-request rows and their rollups beside the sessions."""

from __future__ import annotations

from .recorder import PostgresUsageRecorder

__all__ = ["PostgresUsageRecorder"]
