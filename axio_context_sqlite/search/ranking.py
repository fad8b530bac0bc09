"""Reciprocal rank fusion: the core's (:mod:`axio_context.search.ranking`), re-exported."""

from axio_context.search.ranking import RRF_K, Fused, reciprocal_rank_fusion

__all__ = ["RRF_K", "Fused", "reciprocal_rank_fusion"]
