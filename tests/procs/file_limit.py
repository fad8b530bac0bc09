"""Append until the process's file-size limit (RLIMIT_FSIZE) stops the database growing.

Usage: ``file_limit.py FOLDER LIMIT_BYTES``. SIGXFSZ is ignored, so a write past the limit fails
with EFBIG (which SQLite calls a disk I/O error) instead of killing the process. Prints one JSON
object: the error, the batches that returned, and what reads back afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect


def _batch(n: int) -> list[Message]:
    return [
        Message(role="user", content=[TextBlock(text=f"m{n}.{j} " + os.urandom(150).hex())]) for j in range(3)
    ]


async def main(folder: Path, limit: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    db = folder / "limited.db"
    async with connect(db) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        n = 0
        try:
            while n < 10_000:
                await store.append_many(_batch(n))
                n += 1
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        out["batches"] = n
        out["stored"] = [m.text.split(" ")[0] for m in await store.get_history()]
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))))
