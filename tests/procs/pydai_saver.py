"""A writer process for the pydantic-ai conflict test: loads a conversation, waits, saves a turn.

Usage: ``pydai_saver.py DB CONVERSATION NAME`` (DB: a SQLite file or a ``postgresql://`` URL)

Prints "loaded REVISION" once it holds the conversation, waits for a line on stdin, appends a
turn to it and saves, then prints one JSON line: ``{"saved": true}`` or ``{"conflict": true}``.
Any other exception ends the process with status 1 and its traceback on stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys

from pydantic_ai import messages as pm
from pydantic_ai.conversation_store import ConversationConflict

from axio_context_pydantic_ai import AxioConversationStore
from tests.support.backends import Backend


async def main(db: str, conversation_id: str, name: str) -> None:
    backend = Backend("postgres" if db.startswith("postgresql://") else "sqlite", db)
    async with backend.open() as handle:
        store = AxioConversationStore(handle)
        conversation = await store.load(conversation_id)
        assert conversation is not None
        print("loaded", conversation.revision, flush=True)
        sys.stdin.readline()
        conversation.messages.extend(
            [
                pm.ModelRequest(parts=[pm.UserPromptPart(f"from {name}")]),
                pm.ModelResponse(parts=[pm.TextPart(f"answer to {name}")]),
            ]
        )
        try:
            await store.save(conversation)
        except ConversationConflict:
            print(json.dumps({"conflict": True}), flush=True)
            return
        print(json.dumps({"saved": True}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
