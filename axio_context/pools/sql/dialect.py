"""What one backend says differently about queues and pools: :class:`PoolSQL`.

Everything else (the log, branches, the catch-up of a stale copy, copying) is written once in
:mod:`.plans`; a backend gives the few statements only it can run well: how a new log position
is taken, how a queue's many items go in at once, how ``select`` finds descriptions (FTS5 or a
``tsvector``) and near embeddings (sqlite-vec or pgvector), and how a copy moves the log on.
"""

from __future__ import annotations

from typing import Any

from axio_context.sql import Dialect, Plan, Rows

from .rows import Packed

__all__ = ["PoolSQL", "insert_entry"]


def insert_entry(new_seq: str, *, expiring: bool = False) -> str:
    """The insert of one entry at a new log position (``new_seq``); a new key's ``ord`` is its
    seq. Binds (owner, key, ord or None, description, content, extra), and ``expiring`` its
    ttl_ms and expires_at; returns the seq."""
    more, marks = (", ttl_ms, expires_at", ", ?, ?") if expiring else ("", "")
    return (
        f"INSERT INTO context_pool_entries (seq, owner, key, ord, description, content, extra{more})"
        f" SELECT s, ?, ?, COALESCE(?, s), ?, ?, ?{marks} FROM (SELECT {new_seq} AS s) n RETURNING seq"
    )


class PoolSQL:
    """The statements of queues and pools that differ by backend (subclassed by each)."""

    #: An SQL expression taking a new log position, larger than every one taken before.
    new_seq: str
    #: An SQL expression for a log point every entry so far is at or before and every later
    #: entry comes after (a branch's ``fork_seq``, a clear's ``base_seq``).
    log_top: str
    #: A query whose value says whether the database ranks embeddings itself (sqlite-vec,
    #: pgvector); without, ``select`` ranks them exactly in Python.
    vectors_probe: str
    #: The placeholder of a stored embedding (as :meth:`vector_param` gives it).
    vector_placeholder: str = "?"

    def insert_entries(self, d: Dialect, owner: int, items: list[Packed]) -> Plan[list[int]]:
        """Insert a queue's new entries in order (each a new key's), returning their seqs."""
        sql = insert_entry(self.new_seq)
        seqs = []
        for key, desc, content, extra in items:
            # Every row fetched: SQLite moves sqlite_sequence on only when the statement ends.
            seqs.append(int((yield Rows(sql, (owner, key, None, desc, content, extra)))[0][0]))
        return seqs

    def sealed(self, value: Any) -> Any:
        """An entry's description, content or extra as its argument (a backend that encrypts on
        the client marks it to be sealed, as :meth:`~axio_context.sql.Dialect.sealed` does)."""
        return value

    def vector_param(self, blob: bytes) -> Any:
        """A float32 embedding as the backend stores it."""
        return blob

    def vector_blob(self, stored: Any) -> bytes:
        """A stored embedding as float32 bytes."""
        return bytes(stored)

    def keyword_ranking(self, d: Dialect, query: str, visible: dict[int, str], depth: int) -> Plan[list[str]]:
        """Keys of visible entries (``visible``: seq -> key) whose description shares a word
        with ``query``, best first, at most ``depth``."""
        raise NotImplementedError

    def nearest(
        self, d: Dialect, model: str, query: bytes, cid: int, visible: dict[int, str], depth: int
    ) -> Plan[list[str]]:
        """Keys of visible entries of container ``cid`` by cosine distance of their stored
        ``model`` embedding to ``query`` (float32), nearest first; zero vectors left out."""
        raise NotImplementedError

    def lock_log(self) -> Plan[None]:
        """Before a copy sets log positions itself: keep other writers from taking any."""
        return
        yield

    def advance_log(self, top: int) -> Plan[None]:
        """After a copy: every later entry comes after ``top``."""
        raise NotImplementedError

    def log_start(self) -> Plan[int]:
        """The log point a copy's positions are shifted past (every position taken so far)."""
        raise NotImplementedError
