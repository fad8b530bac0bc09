"""The PostgreSQL step of memory blocks (SQLite's ``memory_blocks`` step of ``schema.sql``; see
:mod:`axio_context.memory_blocks`). Kept apart from :mod:`.migrations`, the list of steps, which
names it as one of them."""

from __future__ import annotations

from typing import Final

__all__ = ["MEMORY_BLOCKS"]

# Memory blocks (axio_context/memory_blocks): a block's current fields and ``version``, owned by an
# agent (``agent_id``; '' is a shared block); every change is a ``memory_block_versions`` row (the
# fields after it, its action, who, when, which run; ``undo_to``/``redo_to`` for undo and redo);
# ``memory_block_agents`` shows a shared block to agents.
MEMORY_BLOCKS: Final = """
CREATE TABLE memory_blocks (
    id text PRIMARY KEY,
    agent_id text NOT NULL,
    label text NOT NULL,
    value text NOT NULL,
    char_limit integer NOT NULL,
    description text NOT NULL,
    read_only integer NOT NULL,
    version integer NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    UNIQUE (agent_id, label)
);
CREATE TABLE memory_block_versions (
    block_id text NOT NULL REFERENCES memory_blocks (id) ON DELETE CASCADE,
    version integer NOT NULL,
    action text NOT NULL,
    label text NOT NULL,
    value text NOT NULL,
    char_limit integer NOT NULL,
    description text NOT NULL,
    read_only integer NOT NULL,
    undo_to integer,
    redo_to integer,
    agent_id text NOT NULL,
    run_id text NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (block_id, version)
);
CREATE TABLE memory_block_agents (
    block_id text NOT NULL REFERENCES memory_blocks (id) ON DELETE CASCADE,
    agent_id text NOT NULL,
    PRIMARY KEY (block_id, agent_id)
);
CREATE INDEX memory_block_agents_by_agent ON memory_block_agents (agent_id, block_id);
"""
