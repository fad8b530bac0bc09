"""One contract suite per memory protocol, reusable with pytest and pytest-asyncio.

Subclass a contract in a test module and provide a ``memory`` fixture returning a
:class:`MemoryFactory` for your backend; every test of the contract then runs against it::

    class TestMyVectors(VectorStoreContract):
        @pytest.fixture
        async def memory(self, tmp_path):
            return MyFactory(tmp_path)

A backend is done when it passes all four (or the ones for the stores it has).
"""

from .blobs import BlobStoreContract
from .factory import MemoryFactory
from .graph import GraphStoreContract
from .tasks import TaskStoreContract
from .vectors import VectorStoreContract

__all__ = [
    "BlobStoreContract",
    "GraphStoreContract",
    "MemoryFactory",
    "TaskStoreContract",
    "VectorStoreContract",
]
