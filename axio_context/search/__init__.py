"""Search, the parts every backend shares: a person's query and its bounds (:mod:`.query`), the
fusion of a keyword and a semantic ranking (:mod:`.ranking`, :mod:`.fusion`), and what a search
gives (:mod:`.results`). Each backend runs the rankings in its own SQL."""

from .query import MAX_K, MODES, Mode
from .results import ReindexReport, SearchHit, SearchResults

__all__ = ["MAX_K", "MODES", "Mode", "ReindexReport", "SearchHit", "SearchResults"]
