"""Store a short tool-using conversation, fork it, and print both branches.

Run: ``python examples/quickstart.py``.
"""

from __future__ import annotations

import asyncio

from axio_context import MemoryContextStore, Message, TextBlock, ToolResultBlock, ToolUseBlock


async def main() -> None:
    store = MemoryContextStore()
    await store.append_many(
        [
            Message(role="user", content=[TextBlock(text="What is in README.md?")]),
            Message(
                role="assistant",
                content=[ToolUseBlock(id="c1", name="read_file", input={"path": "README.md"})],
            ),
            Message(role="user", content=[ToolResultBlock(tool_use_id="c1", content="# axio-context ...")]),
            Message(role="assistant", content=[TextBlock(text="It describes axio-context.")]),
        ]
    )
    await store.add_context_tokens(1200, 40)
    branch = await store.fork()
    await branch.append(Message(role="user", content=[TextBlock(text="Summarise it in one line.")]))
    for name, s in (("main", store), ("branch", branch)):
        print(f"== {name} ({s.session_id[:8]}) tokens={await s.get_context_tokens()}")
        for msg in await s.get_history():
            print(f"  {msg.role:9} {msg.to_dict()['content']}")


if __name__ == "__main__":
    asyncio.run(main())
