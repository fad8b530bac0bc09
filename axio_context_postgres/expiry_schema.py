"""The PostgreSQL step that gives memory items a time to live (SQLite's ``expiry`` step of
``schema.sql``; see :mod:`axio_context.expiry`). Kept apart from :mod:`.migrations`, the list of
steps, which names it as one of them."""

from __future__ import annotations

from typing import Final

__all__ = ["EXPIRY", "POOL_ITEM_EXPIRY", "SESSION_EXPIRY"]

# A time to live on blob keys, task boards and vector documents (axio_context/expiry.py):
# ``ttl_ms`` is the item's TTL (NULL: never expires), ``expires_at`` when it expires (ms since the
# epoch). Reads leave expired rows out; a sweep deletes them through the partial index. Documents
# exist once the vector store made them (with these columns): a table made before gets them here.
EXPIRY: Final = """
ALTER TABLE memory_blob_keys ADD COLUMN ttl_ms bigint, ADD COLUMN expires_at bigint;
CREATE INDEX memory_blob_keys_expiry ON memory_blob_keys (expires_at) WHERE expires_at IS NOT NULL;
ALTER TABLE task_lists ADD COLUMN ttl_ms bigint, ADD COLUMN expires_at bigint;
CREATE INDEX task_lists_expiry ON task_lists (expires_at) WHERE expires_at IS NOT NULL;
DO $$ BEGIN
    IF to_regclass('memory_documents') IS NOT NULL THEN
        ALTER TABLE memory_documents ADD COLUMN IF NOT EXISTS ttl_ms bigint,
            ADD COLUMN IF NOT EXISTS expires_at bigint;
        CREATE INDEX IF NOT EXISTS memory_documents_expiry ON memory_documents (expires_at)
            WHERE expires_at IS NOT NULL;
    END IF;
END $$;
"""

# A time to live on sessions (SQLite's ``session_expiry`` step): reads leave a session past
# ``expires_at`` out, a store that meets one deletes it, a sweep deletes them through the index.
SESSION_EXPIRY: Final = """
ALTER TABLE sessions ADD COLUMN ttl_ms bigint, ADD COLUMN expires_at bigint;
CREATE INDEX sessions_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL;
"""

# A time to live on context pool items (SQLite's ``pool_item_expiry`` step; see
# :mod:`axio_context.pools.sql.expiry`): a read treats a key whose latest entry has expired as
# removed; a sweep turns expired entries into removals through the partial index.
POOL_ITEM_EXPIRY: Final = """
ALTER TABLE context_pool_entries ADD COLUMN ttl_ms bigint, ADD COLUMN expires_at bigint;
CREATE INDEX context_pool_entries_expiry ON context_pool_entries (expires_at) WHERE expires_at IS NOT NULL;
"""
