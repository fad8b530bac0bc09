"""Fill a small file system until SQLite reports it full, then free space and carry on.

Run inside a private mount namespace on a tiny tmpfs (see ``test_sqlite_failures.py``).
Usage: ``disk_full.py FOLDER``. Prints one JSON object describing what happened.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect
from tests.support.sqlite_checks import check_storage


def _batch(n: int) -> list[Message]:
    return [
        Message(role="user", content=[TextBlock(text=f"m{n}.{j} " + os.urandom(150).hex())]) for j in range(3)
    ]


async def main(folder: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    filler = folder / "filler"
    filler.write_bytes(b"\0" * 96 * 1024)  # space to give back later
    db = folder / "full.db"
    async with connect(db) as conn:
        store = SQLiteContextStore(conn, "s", project="p")
        n = 0
        try:
            while n < 10_000:
                await store.append_many(_batch(n))
                n += 1
        except Exception as exc:
            out["error"] = f"{type(exc).__name__}: {exc}"
        out["batches"] = n
        history = await store.get_history()
        out["stored"] = [m.text.split(" ")[0] for m in history]
        filler.unlink()
        await store.append_many(_batch(n))  # space is back: writes work again
        out["after"] = len(await store.get_history())
    check_storage(db)
    out["checked"] = True
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(Path(sys.argv[1])))))
