"""The contract suites every context queue and pool passes (in memory and persisted): pygents'
documented behaviours, one test each. Subclass a suite and provide a ``pools`` fixture
returning a :class:`PoolFactory`."""

from .factory import PoolFactory
from .pool import ContextPoolContract
from .queue import ContextQueueContract

__all__ = ["ContextPoolContract", "ContextQueueContract", "PoolFactory"]
