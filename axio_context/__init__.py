"""axio-context: typed conversation blocks, messages and the ContextStore contract.

The vocabulary and contracts, with no disk I/O; ``axio_context_sqlite`` is the SQLite backend.
Names and signatures follow axio 0.12, so code written against axio ports by changing imports.
"""

from .blocks import (
    AudioBlock,
    Block,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
    from_dict,
    to_dict,
)
from .context import ContextStore, MemoryContextStore
from .errors import AxioContextError, DecodeError, SessionNotFoundError, StoreClosedError
from .messages import Message, Role, SessionInfo

__version__ = "0.1.0"

__all__ = [
    "AudioBlock",
    "AxioContextError",
    "Block",
    "ContentBlock",
    "ContextStore",
    "DecodeError",
    "ImageBlock",
    "MemoryContextStore",
    "Message",
    "ProviderBlock",
    "ReasoningBlock",
    "Role",
    "SessionInfo",
    "SessionNotFoundError",
    "StoreClosedError",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownBlock",
    "VideoBlock",
    "__version__",
    "from_dict",
    "to_dict",
]
