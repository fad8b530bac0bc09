"""The ContextStore contract as a reusable pytest suite (needs pytest and pytest-asyncio).

Subclass :class:`ContextStoreContract` in a test module and provide a ``factory`` fixture that
returns a :class:`StoreFactory`; every test below then runs against that store, unchanged.
Every backend (memory, SQLite, a third party's) is done when it passes this suite::

    class TestMyStore(ContextStoreContract):
        @pytest.fixture
        async def factory(self, tmp_path):
            return MyFactory(tmp_path)

The package: :mod:`.samples` (the factory protocol, sample messages), :mod:`.contract` and
:mod:`.checkpoints` (the suites), :mod:`.transports` (axio's ``StubTransport``).
"""

from __future__ import annotations

from .checkpoints import CheckpointStoreContract, PopCheckpointContract
from .contract import ContextStoreContract
from .samples import StoreFactory, every_block_message, sample_blocks, text
from .transports import StubTransport, TextDelta, make_stub_transport, make_text_response

__all__ = [
    "CheckpointStoreContract",
    "ContextStoreContract",
    "PopCheckpointContract",
    "StoreFactory",
    "StubTransport",
    "TextDelta",
    "every_block_message",
    "make_stub_transport",
    "make_text_response",
    "sample_blocks",
    "text",
]
