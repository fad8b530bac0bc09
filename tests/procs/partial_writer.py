"""A process killed mid-write, for the stale-partial tests.

Usage: ``partial_writer.py export|backup DB DEST``

``export``: a real export of every session to DEST through :func:`files.writing`; after the
first chunk is written it prints "ready" and waits to be killed. ``backup``: a real
``Database.backup`` to DEST whose final rename prints "ready" and waits instead, so the copy is
complete in its partial file but never put in place.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from axio_context_sqlite import open_database
from axio_context_sqlite.admin import files


def _wait_for_kill(*_: Any) -> None:
    print("ready", flush=True)
    time.sleep(600)
    os._exit(3)  # never reached when the parent kills us


async def _export(db_path: Path, dest: Path) -> None:
    async with open_database(db_path, create=False) as db:
        with files.writing(dest, db_path) as f:
            first = [True]

            def sink(chunk: bytes) -> None:
                f.write(chunk)
                if first[0]:
                    first[0] = False
                    _wait_for_kill()

            await db.export(sink, format="jsonl")


async def _backup(db_path: Path, dest: Path) -> None:
    os.replace = _wait_for_kill  # the backup is complete in its partial file; stop before the rename
    async with open_database(db_path, create=False) as db:
        await db.backup(dest, overwrite=True)


def main() -> None:
    mode, db_path, dest = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    asyncio.run(_export(db_path, dest) if mode == "export" else _backup(db_path, dest))


if __name__ == "__main__":
    main()
