"""The peer: axio-context-sqlite 0.12.2 (axio 0.12.2), run by the peer venv's Python 3.12.

Imports nothing of this project but the stdlib-only ``bench.harness``: messages arrive as
axio-shaped dicts and become axio's own dataclasses through ``axio.messages.Message.from_dict``.
Prefills write the peer's exact table layout in one transaction (its ``append`` counts the
session's rows on every call, so 50,000 of them one by one would take minutes); the rows are
the ones its ``append`` and ``set_context_tokens`` write, through its own SQL functions.
Run: ``.bench-venv-peer/bin/python -m bench.worker_peer SPEC.json`` (see ``bench.harness``).
"""

from __future__ import annotations

import json
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness import PROJECT, ROOT, HopCounter, worker_main


def _peer_modules() -> tuple[Any, Any, Any]:
    """Import the peer from the venv's site-packages, never this project's same-named package.

    ``python -m`` puts the working directory (the repository root) first on ``sys.path``, and
    the root's ``axio_context_sqlite`` would shadow the peer's; move the root to the end.
    """
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT] + [str(ROOT)]
    from axio.messages import Message

    import axio_context_sqlite
    from axio_context_sqlite import SQLiteContextStore, connect

    where = Path(axio_context_sqlite.__file__).resolve()
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    if site not in where.parents:
        raise RuntimeError(f"imported axio_context_sqlite from {where}, not the peer's venv ({site})")
    return Message, SQLiteContextStore, connect


class PeerDriver:
    """The peer target for ``bench.harness``."""

    name = "peer"
    paginates = False
    searches = False

    def __init__(self) -> None:
        self._message, self._store_cls, self._connect = _peer_modules()
        self.hops: HopCounter | None = HopCounter()
        self._conn: Any = None

    def convert(self, data: dict[str, Any]) -> Any:
        return self._message.from_dict(data)

    def to_dict(self, message: Any) -> dict[str, Any]:
        return dict(message.to_dict())

    async def open(self, path: Path) -> None:
        self._conn = await self._connect(path)
        assert self.hops is not None
        self.hops.attach(self._conn)

    async def close(self) -> None:
        await self._conn.close()
        self._conn = None

    def store(self, session_id: str) -> Any:
        return self._store_cls(self._conn, session_id, PROJECT)

    async def fill(self, sessions: Sequence[tuple[str, Sequence[Any], tuple[int, int]]]) -> None:
        # The statements of the peer's append and set_context_tokens, batched in one transaction.
        messages = [
            (sid, PROJECT, pos, m.role, json.dumps(m.to_dict()["content"]))
            for sid, msgs, _ in sessions
            for pos, m in enumerate(msgs)
        ]
        await self._conn.executemany(
            "INSERT INTO axio_context_messages (session_id, project, position, role, content)"
            " VALUES (?, ?, ?, ?, compress_payload(?))",
            messages,
        )
        await self._conn.executemany(
            "INSERT INTO axio_context_tokens (session_id, project, input_tokens, output_tokens)"
            " VALUES (?, ?, ?, ?)",
            [(sid, PROJECT, i, o) for sid, _, (i, o) in sessions],
        )
        await self._conn.commit()

    async def page(self, limit: int, cursor: str | None) -> tuple[list[Any], str | None]:
        raise NotImplementedError("axio-context-sqlite 0.12.2 has no paginated listing")

    async def checkpoint(self) -> None:
        busy, _, _ = next(iter(await self._conn.execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")))
        if busy:
            raise RuntimeError("the WAL could not be truncated")

    async def search(self, words: str) -> int:
        raise NotImplementedError("axio-context-sqlite 0.12.2 has no keyword search")

    async def hop(self) -> None:
        await self._conn._execute(_nothing)

    async def sqlite_version(self) -> str:
        rows = await self._conn.execute_fetchall("SELECT sqlite_version()")
        return str(next(iter(rows))[0])


def _nothing() -> None:
    return None


if __name__ == "__main__":
    worker_main(PeerDriver)
