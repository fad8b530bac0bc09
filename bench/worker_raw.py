"""The raw-SQLite limit: stdlib ``sqlite3`` in-process, no thread, the plainest fast statements.

What a careful hand-written store could not beat: WAL with ``synchronous=NORMAL``, autocommit,
one ``INSERT`` per append whose position comes from the session row (a trigger bumps it), one
query per load decoded with this project's msgspec codec (the whole message as MessagePack),
lineage forks as one ``INSERT`` of a session row, keyset pagination over an index.
Run: ``python -m bench.worker_raw SPEC.json`` (see ``bench.harness``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import uuid4

from axio_context import Message, TextBlock, codec

from .harness import PROJECT, HopCounter, worker_main

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    parent INTEGER REFERENCES sessions(id),
    fork_position INTEGER,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0,
    preview TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_listing ON sessions (project, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    position INTEGER NOT NULL,
    payload BLOB NOT NULL,
    UNIQUE (session, position)
);
CREATE TRIGGER IF NOT EXISTS messages_counter AFTER INSERT ON messages BEGIN
    UPDATE sessions
    SET message_count = NEW.position + 1, updated_at = (julianday('now') - 2440587.5) * 86400.0
    WHERE id = NEW.session;
END;
"""

_APPEND = (
    "INSERT INTO messages (session, position, payload) SELECT id, message_count, ? FROM sessions WHERE id = ?"
)
_LIST = (
    "SELECT name, message_count, preview, created_at, input_tokens, output_tokens, id "
    "FROM sessions WHERE project = ?"
)


def _preview(messages: Sequence[Message]) -> str:
    for m in messages:
        if m.role == "user":
            for b in m.content:
                if isinstance(b, TextBlock):
                    return b.text[:80] + ("..." if len(b.text) > 80 else "")
    return ""


class RawStore:
    """One session, the ContextStore method names over plain ``sqlite3``."""

    def __init__(self, db: sqlite3.Connection, name: str) -> None:
        self._db = db
        now = time.time()
        db.execute(
            "INSERT OR IGNORE INTO sessions (name, project, created_at, updated_at) VALUES (?, ?, ?, ?)",
            (name, PROJECT, now, now),
        )
        self._id: int = db.execute("SELECT id FROM sessions WHERE name = ?", (name,)).fetchone()[0]

    async def append(self, message: Message) -> None:
        self._db.execute(_APPEND, (codec.encode_message_msgpack(message), self._id))

    async def get_history(self) -> list[Message]:
        # The lineage: this session's own rows, after its ancestors' prefixes.
        chain: list[tuple[int, int | None]] = []
        sid: int | None = self._id
        upto: int | None = None
        while sid is not None:
            chain.append((sid, upto))
            sid, upto = self._db.execute(
                "SELECT parent, fork_position FROM sessions WHERE id = ?", (sid,)
            ).fetchone()
        decode = codec.decode_message_msgpack
        out: list[Message] = []
        for sid, upto in reversed(chain):
            rows = self._db.execute(
                "SELECT payload FROM messages WHERE session = ? AND position < ? ORDER BY position",
                (sid, upto if upto is not None else 1 << 62),
            ).fetchall()
            out.extend(decode(p) for (p,) in rows)
        return out

    async def fork(self) -> RawStore:
        now = time.time()
        name = uuid4().hex
        self._db.execute(
            "INSERT INTO sessions (name, project, parent, fork_position, created_at, updated_at,"
            " message_count, preview, input_tokens, output_tokens)"
            " SELECT ?, project, id, message_count, ?, ?, message_count, preview, input_tokens,"
            " output_tokens FROM sessions WHERE id = ?",
            (name, now, now, self._id),
        )
        return RawStore(self._db, name)

    async def clear(self) -> None:
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM messages WHERE session = ?", (self._id,))
            self._db.execute(
                "UPDATE sessions SET parent = NULL, fork_position = NULL, message_count = 0,"
                " input_tokens = 0, output_tokens = 0 WHERE id = ?",
                (self._id,),
            )

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self._db.execute(
            "UPDATE sessions SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?"
            " WHERE id = ?",
            (input_tokens, output_tokens, self._id),
        )

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        self._db.execute(
            "UPDATE sessions SET input_tokens = ?, output_tokens = ? WHERE id = ?",
            (input_tokens, output_tokens, self._id),
        )

    async def get_context_tokens(self) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT input_tokens, output_tokens FROM sessions WHERE id = ?", (self._id,)
        ).fetchone()
        return int(row[0]), int(row[1])

    async def list_sessions(self) -> list[tuple[Any, ...]]:
        return self._db.execute(_LIST + " ORDER BY created_at DESC, id DESC", (PROJECT,)).fetchall()


class RawDriver:
    """The raw-SQLite target for ``bench.harness``."""

    name = "raw"
    hops: HopCounter | None = None
    paginates = True
    searches = False

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None

    def convert(self, data: dict[str, Any]) -> Message:
        return Message.from_dict(data)

    def to_dict(self, message: Message) -> dict[str, Any]:
        return message.to_dict()

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "not open"
        return self._db

    async def open(self, path: Path) -> None:
        db = sqlite3.connect(path, isolation_level=None, cached_statements=256)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(SCHEMA)
        self._db = db

    async def close(self) -> None:
        self.db.close()
        self._db = None

    def store(self, session_id: str) -> RawStore:
        return RawStore(self.db, session_id)

    async def fill(self, sessions: Sequence[tuple[str, Sequence[Message], tuple[int, int]]]) -> None:
        db = self.db
        encode = codec.encode_message_msgpack
        with db:
            db.execute("BEGIN IMMEDIATE")
            for i, (name, messages, (tok_in, tok_out)) in enumerate(sessions):
                now = time.time() + i * 1e-3  # distinct, increasing times: the newest is the last
                sid = db.execute(
                    "INSERT INTO sessions (name, project, created_at, updated_at, preview,"
                    " input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (name, PROJECT, now, now, _preview(messages), tok_in, tok_out),
                ).fetchone()[0]
                db.executemany(
                    "INSERT INTO messages (session, position, payload) VALUES (?, ?, ?)",
                    ((sid, pos, encode(m)) for pos, m in enumerate(messages)),
                )

    async def page(self, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
        if cursor is None:
            rows = self.db.execute(
                _LIST + " ORDER BY created_at DESC, id DESC LIMIT ?", (PROJECT, limit)
            ).fetchall()
        else:
            at, sid = cursor.split(":")
            rows = self.db.execute(
                _LIST + " AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?",
                (PROJECT, float(at), int(sid), limit),
            ).fetchall()
        nxt = f"{rows[-1][3]!r}:{rows[-1][6]}" if len(rows) == limit else None
        return rows, nxt

    async def checkpoint(self) -> None:
        busy, _, _ = self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError("the WAL could not be truncated")

    async def search(self, words: str) -> int:
        raise NotImplementedError("the raw-SQLite limit has no keyword search")

    async def hop(self) -> None:
        return None

    async def sqlite_version(self) -> str:
        return str(self.db.execute("SELECT sqlite_version()").fetchone()[0])


if __name__ == "__main__":
    worker_main(RawDriver)
