"""The session catalog written once for every SQL backend: how sessions hang together (the
lineage tree of subagent sessions and forks), as plans (:mod:`.tree_sql`) and the database
calls over them (:mod:`.calls`)."""

from .calls import LineageCalls, TreeOptions, descendants, session_tree

__all__ = ["LineageCalls", "TreeOptions", "descendants", "session_tree"]
