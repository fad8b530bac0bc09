"""The agent runtime layer on PostgreSQL: :class:`PostgresHistoryProvider` (see
:mod:`axio_context.agents` for the contract and docs/postgres.md)."""

from .provider import PostgresHistoryProvider

__all__ = ["PostgresHistoryProvider"]
