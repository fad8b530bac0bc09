"""A process that writes until it is killed, logging what it does, for the SIGKILL tests.

Usage: ``crash_worker.py MODE DB LOG ROUND SEED``

Every operation is logged twice to LOG (one ``os.write`` of one line each, so a kill never
leaves half a record that looks whole): ``I <json>`` before it starts and ``A <json>`` after its
``await`` returned. The parent replays the acknowledged operations on a model and accepts the
database only if it equals that model, or that model plus the single operation in flight.

- ``lineage``: random appends (some with a shared image, stored as a blob), ``append_many``
  batches, forks, pops and token additions over every session of project "crash".
- ``compact``: appends a user and an assistant message, then reports token usage to an
  ``AutoCompactStore(SQLiteContextStore(...), ExtractiveSummarizer(), max_tokens=1)``, which
  compacts on every report; the acknowledgement carries the checkpoint count afterwards.

Prints "ready" once connected and about to write.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from typing import Any

from axio_context import ImageBlock, Message, TextBlock
from axio_context.compaction import AutoCompactStore, ExtractiveSummarizer
from axio_context_sqlite import SQLiteContextStore, connect
from tests.procs import apply_test_sealing
from tests.support.words import prose

PROJECT = "crash"
#: Images big enough to live in the blobs table; shared by every message that shows one.
IMAGES = [bytes([i + 1]) * 2000 for i in range(3)]
MAX_SESSIONS = 10


def _filler(rng: random.Random) -> str:
    """Often nothing; else ~1 KB of words, so payloads get compressed during the rounds."""
    return "" if rng.random() < 0.6 else " " + prose(rng, 130)


def make_message(text: str, image: int) -> Message:
    """The message a log record describes: its text, and image ``image`` unless it is -1."""
    content: list[Any] = [TextBlock(text=text)]
    if image >= 0:
        content.append(ImageBlock(media_type="image/png", data=IMAGES[image]))
    return Message(role="user" if len(text) % 2 else "assistant", content=content)


class Log:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, kind: str, record: dict[str, Any]) -> None:
        os.write(self.fd, f"{kind} {json.dumps(record)}\n".encode())


async def lineage(db: str, log: Log, round_no: int, rng: random.Random) -> None:
    async with connect(db) as conn:
        stores = {"root": SQLiteContextStore(conn, "root", project=PROJECT)}
        for info in await stores["root"].list_sessions():
            stores[info.session_id] = SQLiteContextStore(conn, info.session_id, project=PROJECT)
        print("ready", flush=True)
        k = 0
        while True:
            sid = rng.choice(sorted(stores))
            store = stores[sid]
            roll = rng.random()
            if roll < 0.45:
                k += 1
                msgs = [[f"r{round_no}-{k}{_filler(rng)}", rng.choice([-1, -1, -1, 0, 1, 2])]]
                log.write("I", {"op": "append", "s": sid, "msgs": msgs})
                await store.append(make_message(*msgs[0]))
                log.write("A", {})
            elif roll < 0.75:
                k += 1
                n = rng.randint(2, 6)
                msgs = [
                    [f"r{round_no}-{k}.{j}/{n}{_filler(rng)}", rng.choice([-1, -1, 0, 1])] for j in range(n)
                ]
                log.write("I", {"op": "append", "s": sid, "msgs": msgs})
                await store.append_many([make_message(*m) for m in msgs])
                log.write("A", {})
            elif roll < 0.83:
                if len(stores) >= MAX_SESSIONS:
                    continue
                log.write("I", {"op": "fork", "s": sid})
                child = await store.fork()
                log.write("A", {"new": child.session_id})
                stores[child.session_id] = child
            elif roll < 0.90:
                log.write("I", {"op": "pop", "s": sid})
                await store.pop()
                log.write("A", {})
            else:
                log.write("I", {"op": "tokens", "s": sid})
                await store.add_context_tokens(1, 2)
                log.write("A", {})


async def compact(db: str, log: Log, round_no: int, rng: random.Random) -> None:
    async with connect(db) as conn:
        inner = SQLiteContextStore(conn, "c", project=PROJECT)
        store = AutoCompactStore(inner, ExtractiveSummarizer(), max_tokens=1, keep_recent=2)
        print("ready", flush=True)
        k = 0
        while True:
            k += 1
            for role in ("u", "a"):
                text = f"{role}{round_no}-{k} " + "words " * rng.randint(1, 40)
                log.write("I", {"op": "append", "text": text})
                await store.append(
                    Message(role="user" if role == "u" else "assistant", content=[TextBlock(text=text)])
                )
                log.write("A", {})
            log.write("I", {"op": "compact"})
            await store.add_context_tokens(10, 1)  # above max_tokens: compacts before returning
            log.write("A", {"checkpoints": len(await inner.list_checkpoints())})


if __name__ == "__main__":
    apply_test_sealing()
    mode, db, log_path, round_arg, seed = sys.argv[1:6]
    worker = lineage if mode == "lineage" else compact
    asyncio.run(worker(db, Log(log_path), int(round_arg), random.Random(int(seed))))
