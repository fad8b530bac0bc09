"""pydantic-ai bridge benchmark: the ConversationStore and the message_history helpers against
the raw limit (plain sqlite3 storing pydantic-ai's JSON, one row per message) in one run.

Figures (median of repeated runs, warm):

- ``save`` of a 20-message turn (10 requests, 10 responses with tool calls and returns):
  ``AxioConversationStore.save`` of a loaded conversation, and ``save_messages``; the raw limit
  inserts the 20 JSON rows and updates a record row in one transaction;
- ``load(limit=10)`` of a conversation of 1,000 and of N (default 100,000) messages: flat in the
  length if only the tail is read; the raw limit selects the last 10 rows and validates them;
- ``load`` of a whole 1,000-message conversation, against the raw limit reading and validating
  the same JSON.

Run: ``python -m bench.bench_pydantic_ai`` (``--n 20000`` for a shorter run).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic_ai import messages as pm
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationEntry, ConversationRecord

from axio_context_pydantic_ai import AxioConversationStore, save_messages
from axio_context_sqlite import SQLiteContextStore, connect

ADAPTER = pm.ModelMessagesTypeAdapter


def turn(t: int) -> list[pm.ModelMessage]:
    """A 20-message agent turn: a prompt, then tool calls and returns, then the answer."""
    out: list[pm.ModelMessage] = [pm.ModelRequest(parts=[pm.UserPromptPart(f"turn {t}: check the logs")])]
    for i in range(9):
        call = f"call-{t}-{i}"
        out.append(
            pm.ModelResponse(
                parts=[pm.ToolCallPart("grep", {"pattern": f"error {i}", "path": "/var/log"}, call)],
                usage=pm.RequestUsage(input_tokens=900 + i, output_tokens=30),
                model_name="bench-model",
            )
        )
        if i < 8:
            found = pm.ToolReturnPart("grep", f"line {i}: error found " * 8, call)
            out.append(pm.ModelRequest(parts=[found]))
    out.append(pm.ModelResponse(parts=[pm.TextPart(f"Turn {t}: three errors, all fixed.")]))
    assert len(out) == 19
    out.insert(1, pm.ModelResponse(parts=[pm.TextPart("Looking.")]))
    return out


def median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


async def timed(fn: Callable[[], Awaitable[Any]], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return median_us(samples)


def timed_sync(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return median_us(samples)


class Raw:
    """The raw limit: plain sqlite3, a record row and one JSON row per message."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("CREATE TABLE rec (id TEXT PRIMARY KEY, revision TEXT, n INTEGER)")
        self.db.execute("CREATE TABLE msg (conv TEXT, pos INTEGER, json BLOB, PRIMARY KEY (conv, pos))")

    def save(self, conv: str, messages: list[pm.ModelMessage], revision: str) -> None:
        rows = [ADAPTER.dump_json([m])[1:-1] for m in messages]
        self.db.execute("BEGIN IMMEDIATE")
        r = self.db.execute("SELECT n FROM rec WHERE id = ?", (conv,)).fetchone()
        n = 0 if r is None else r[0]
        self.db.executemany(
            "INSERT INTO msg VALUES (?, ?, ?)", [(conv, n + i, row) for i, row in enumerate(rows)]
        )
        self.db.execute("INSERT OR REPLACE INTO rec VALUES (?, ?, ?)", (conv, revision, n + len(rows)))
        self.db.execute("COMMIT")

    def load(self, conv: str, limit: int | None) -> list[pm.ModelMessage]:
        n = self.db.execute("SELECT n FROM rec WHERE id = ?", (conv,)).fetchone()[0]
        start = 0 if limit is None else max(0, n - limit)
        rows = self.db.execute("SELECT json FROM msg WHERE conv = ? AND pos >= ? ORDER BY pos", (conv, start))
        return ADAPTER.validate_json(b"[" + b",".join(r[0] for r in rows) + b"]")


async def fill(store: AxioConversationStore, conv: str, n: int) -> None:
    """A conversation of ``n`` messages, written in batches through ``write_record``."""
    record = await store.read_record(conv)
    head = record.head_id if record else None
    revision = record.revision if record else None
    messages = turn(0)
    done = 0
    while done < n:
        batch: list[ConversationEntry] = []
        for i in range(min(1000, n - done)):
            entry = ConversationEntry(parent_id=head, message=messages[(done + i) % len(messages)])
            batch.append(entry)
            head = entry.id
        new = ConversationRecord(conversation_id=conv, head_id=head)
        await store.write_record(new, new_entries=batch, expected_revision=revision)
        revision = new.revision
        done += len(batch)


async def main(n: int, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-pydai-"))
    raw = Raw(work / "raw.db")
    figures: list[tuple[str, float, float]] = []
    async with connect(work / "ours.db") as conn:
        store = AxioConversationStore(conn, project="bench")
        # save of a 20-message turn
        conversation = Conversation(conversation_id="saves", messages=turn(0))
        await store.save(conversation)
        t = [0]

        async def save_turn() -> None:
            t[0] += 1
            conversation.messages.extend(turn(t[0]))
            await store.save(conversation)

        ours = await timed(save_turn, repeat)
        raw_n = [0]

        def raw_save() -> None:
            raw_n[0] += 1
            raw.save("saves", turn(raw_n[0]), str(raw_n[0]))

        limit = timed_sync(raw_save, repeat)
        figures.append(("ConversationStore.save, 20-message turn", ours, limit))
        session = SQLiteContextStore(conn, "helpers", project="bench")
        helpers = await timed(lambda: save_messages(session, turn(1)), repeat)
        figures.append(("save_messages, 20-message turn", helpers, limit))

        # load(limit=10) at 1,000 and at n messages; whole load at 1,000
        for size in (1_000, n):
            conv = f"c{size}"
            await fill(store, conv, size)
            raw.save(conv, [turn(0)[i % 20] for i in range(size)], "r")
            ours = await timed(lambda c=conv: store.load(c, limit=10), repeat)  # type: ignore[misc]
            limit = timed_sync(lambda c=conv: raw.load(c, 10), repeat)  # type: ignore[misc]
            figures.append((f"load(limit=10), {size:,} messages", ours, limit))
        ours = await timed(lambda: store.load("c1000"), max(3, repeat // 4))
        limit = timed_sync(lambda: raw.load("c1000", None), max(3, repeat // 4))
        figures.append(("load, whole 1,000 messages", ours, limit))
    print(f"{'figure':44} {'ours us':>10} {'raw us':>10} {'ours/raw':>9}")
    for name, ours, limit in figures:
        print(f"{name:44} {ours:10.0f} {limit:10.0f} {ours / limit:9.2f}")
    tail = {name: ours for name, ours, _ in figures if name.startswith("load(limit=10)")}
    small, big = tail.values()
    print(f"load(limit=10) at {n:,} / at 1,000: {big / small:.2f} (flat = 1)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="messages of the long conversation")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.repeat))
