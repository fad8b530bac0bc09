"""Blocks with a history, an undo, hostile text and attachments, written into a database and read
back whole: what the export/import and transfer tests carry from one database to another."""

from __future__ import annotations

from axio_context import Message, TextBlock
from axio_context.backends.registry import open_database
from axio_context.memory_blocks import MemoryBlock
from axio_context.memory_blocks.transfer_sql import BlockRow


async def fill_blocks(where: str, *, with_session: bool = False) -> list[BlockRow]:
    """Write the sample blocks at ``where`` (and one session, if asked) and return their rows."""
    async with open_database(where) as db:
        if with_session:
            await db.store("s1", project="/p").append(Message(role="user", content=[TextBlock(text="hi")]))
        s = db.memory_stores().blocks()
        await s.create(MemoryBlock("human", "Ada", description="the user"), agent_id="a", run_id="r1")
        await s.append("human", "likes tea", agent_id="a", run_id="r2")
        await s.undo("human", agent_id="a")
        await s.create(MemoryBlock("team", "ship\x1b on friday \u202e", limit=80, read_only=True))
        await s.attach("team", "a")
        await s.attach("team", "b")
        return await s.dump()


async def dump_blocks(where: str) -> list[BlockRow]:
    """Every block row at ``where``, with its history."""
    async with open_database(where) as db:
        return await db.memory_stores().blocks().dump()
