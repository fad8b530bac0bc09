"""A writer process for the multi-process tests: opens its own connection, waits for "go", writes.

Usage: ``mp_worker.py DB ROLE SESSION NAME COUNT``

- ``append``: COUNT appends to SESSION, every fifth one an ``append_many`` of three messages;
  texts are ``NAME-i`` (``NAME-i.j`` inside a batch), in call order.
- ``append_long``: as ``append``, each text followed by ~1 KB of words (so it is compressed),
  with a 30 ms pause before and after every batch.
- ``tokens_forks``: COUNT ``add_context_tokens(1, 2)`` calls on SESSION, forking it every fifth.
- ``recompress``: COUNT ``Database.recompress()`` calls, 50 ms apart; the JSON line also has
  ``"removed"``, the dictionaries of earlier builds each call deleted, and ``"dangling"``, the
  rows found naming a deleted dictionary before each call (a count taken between the calls).

Prints "ready" once connected, waits for a line on stdin, and at the end prints one JSON line
``{"forks": [[fork_id, fork_position], ...]}``. Any exception ends the process with status 1 and
its traceback on stderr, so a "database is locked" reaching the caller fails the test.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys

from axio_context import Message, TextBlock
from axio_context_sqlite import Database, SQLiteContextStore, connect
from tests.procs import apply_test_sealing
from tests.support.words import prose


def _msg(text: str, long: bool = False) -> Message:
    if long:
        text += " " + prose(random.Random(text), 140)
    return Message(role="user", content=[TextBlock(text=text)])


async def main(db: str, role: str, session: str, name: str, count: int) -> None:
    async with connect(db) as conn:
        store = SQLiteContextStore(conn, session, project="mp")
        print("ready", flush=True)
        sys.stdin.readline()
        forks: list[tuple[str, int]] = []
        removed: list[int] = []
        dangling: list[int] = []
        long = role == "append_long"
        for i in range(count):
            if role in ("append", "append_long"):
                if i % 5 == 4:
                    await store.append_many([_msg(f"{name}-{i}.{j}", long) for j in range(3)])
                else:
                    await store.append(_msg(f"{name}-{i}", long))
                if long and i % 5 in (3, 4):
                    # Pauses, in which a recompress runs: the call after one is the batch, or a
                    # single append.
                    await asyncio.sleep(0.03)
            elif role == "recompress":
                await asyncio.sleep(0.05)
                rows = await conn.execute_fetchall(
                    "SELECT count(*) FROM messages WHERE flags >> 8"
                    " AND flags >> 8 NOT IN (SELECT id FROM zstd_dicts)"
                )
                dangling.append(next(iter(rows))[0])
                removed.append((await Database(conn, db).recompress()).dictionaries_removed)
            elif role == "tokens_forks":
                await store.add_context_tokens(1, 2)
                if i % 5 == 0:
                    child = await store.fork()
                    forks.append((child.session_id, (await child.info()).fork_position or 0))
            else:
                raise SystemExit(f"unknown role {role!r}")
        print(json.dumps({"forks": forks, "removed": removed, "dangling": dangling}), flush=True)


if __name__ == "__main__":
    apply_test_sealing()
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
