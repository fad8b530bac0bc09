"""The session catalog written once for every SQL backend: listing sessions (:mod:`.listing_sql`)
and how they hang together (the lineage tree of subagent sessions and forks, :mod:`.tree_sql`),
as plans, and the database and store calls over them (:mod:`.calls`)."""

from .calls import BrowseCalls, CatalogCalls, RunsPlans, StoreCalls, TreeOptions, descendants, session_tree

__all__ = [
    "BrowseCalls",
    "CatalogCalls",
    "RunsPlans",
    "StoreCalls",
    "TreeOptions",
    "descendants",
    "session_tree",
]
