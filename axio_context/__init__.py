"""axio-context: typed conversation blocks, messages and the ContextStore contract.

The vocabulary and contracts, with no disk I/O; ``axio_context_sqlite`` is the SQLite backend.
Names and signatures follow axio 0.12, so code written against axio ports by changing imports;
pygents' ``ContextQueue``, ``ContextPool`` and ``ContextItem`` are here too, as in pygents.
"""

import logging

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
from .checkpoints import Checkpoint, CheckpointStore
from .compaction import (
    DEFAULT_COMPACTION_PROMPT,
    AutoCompactStore,
    CompactionPipeline,
    ExtractiveSummarizer,
    Summarizer,
    compact_context,
)
from .context import ContextStore, MemoryContextStore
from .errors import AxioContextError, DecodeError, SessionNotFoundError, StoreClosedError
from .messages import Message, Role, SessionInfo
from .pools import ContextItem, ContextPool, ContextQueue  # pygents' top-level names

__version__ = "0.1.0"

# The library convention: silent unless the application configures logging (no "last resort"
# output of warnings and tracebacks into a terminal app's screen).
logging.getLogger("axio_context").addHandler(logging.NullHandler())

__all__ = [
    "DEFAULT_COMPACTION_PROMPT",
    "AudioBlock",
    "AutoCompactStore",
    "AxioContextError",
    "Block",
    "Checkpoint",
    "CheckpointStore",
    "CompactionPipeline",
    "ContentBlock",
    "ContextItem",
    "ContextPool",
    "ContextQueue",
    "ContextStore",
    "DecodeError",
    "ExtractiveSummarizer",
    "ImageBlock",
    "MemoryContextStore",
    "Message",
    "ProviderBlock",
    "ReasoningBlock",
    "Role",
    "SessionInfo",
    "SessionNotFoundError",
    "StoreClosedError",
    "Summarizer",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "UnknownBlock",
    "VideoBlock",
    "__version__",
    "compact_context",
    "from_dict",
    "to_dict",
]
