"""Issue 20's resumable-state benchmark: save_state / load_state at a realistic size.

The state: ``--subagents`` (4) subagent histories of ``--messages`` (100) pydantic-ai message
dicts each (about 1 KB of text apiece: a prompt, or a reply with a tool call), 50 user prompts,
100 extra usage records, 10 deferred tool calls. Measured, each the median of ``--repeat`` runs:

- **first save**: every subagent session written (the whole state new);
- **turn save**: the same state after one more turn (two messages more per subagent): only the
  new messages are written;
- **load**: ``load_state`` rebuilding ``subagent_history`` from the subagent sessions.

Against, in the same run (same file system, same durability: WAL, ``synchronous=NORMAL``):

- **raw rows**: plain ``sqlite3``, one transaction inserting the same messages as JSON rows (the
  first save) / the new ones (a turn) plus one state row; loading them back and decoding: the
  floor of a layout that keeps each message a row, as ours does;
- **raw blob**: plain ``sqlite3``, the whole state as one JSON blob replaced per save (what
  storing it opaquely would cost; nothing searchable, every save rewrites everything);
- **file**: pai-agent-sdk's documented way, the state's JSON written to a file (atomic replace,
  no fsync: pai's example does not either), read back and decoded.

Run: ``python -m bench.bench_state`` (``--quick`` for a smoke run). Prints a table of
milliseconds and ratios ours / raw; ``--json FILE`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec

from axio_context.state import ExtraUsageRecord, ResumableState, RunUsage
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.state import load_state, save_state

WORDS = ("the", "agent", "looked", "at", "the", "repository", "and", "found", "a", "config", "file")


def _text(i: int, size: int = 900) -> str:
    words, n = [], i
    while sum(map(len, words)) + len(words) < size:
        words.append(WORDS[n % len(WORDS)])
        n = n * 7 + 3
    return " ".join(words)


def turn(name: str, i: int) -> list[dict[str, Any]]:
    return [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": f"{name} {i}: {_text(i)}"}]},
        {
            "kind": "response",
            "parts": [
                {"part_kind": "text", "content": _text(i + 1)},
                {
                    "part_kind": "tool-call",
                    "tool_name": "grep",
                    "args": {"q": f"q{i}"},
                    "tool_call_id": f"c{i}",
                },
            ],
            "model_name": "openai:gpt-4o",
        },
    ]


def make_state(subagents: int, messages: int, turns_more: int = 0) -> ResumableState:
    history = {
        f"agent-{a}": [m for i in range(messages // 2 + turns_more) for m in turn(f"agent-{a}", i)]
        for a in range(subagents)
    }
    return ResumableState(
        subagent_history=history,
        extra_usages=[
            ExtraUsageRecord(uuid=f"u{i}", agent="search", model_id="m", usage=RunUsage(input_tokens=i))
            for i in range(100)
        ],
        user_prompts=[_text(i, 200) for i in range(50)],
        deferred_tool_metadata={f"call-{i}": {"tool": "shell", "args": {"cmd": "ls"}} for i in range(10)},
        need_user_approve_tools=["shell", "issue_refund"],
        handoff_message=_text(7, 400),
    )


async def _median(
    runs: int, prepare: Callable[[int], Awaitable[Any]], call: Callable[[Any], Awaitable[Any]]
) -> float:
    times = []
    for r in range(runs):
        arg = await prepare(r)
        start = time.perf_counter()
        await call(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _raw_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute(
        "CREATE TABLE IF NOT EXISTS msgs (id INTEGER PRIMARY KEY, session TEXT, pos INTEGER, body TEXT)"
    )
    db.execute("CREATE TABLE IF NOT EXISTS st (session TEXT PRIMARY KEY, body TEXT)")
    return db


def _raw_rows_save(db: sqlite3.Connection, session: str, state: ResumableState, start: int) -> None:
    fields = state.to_dict(subagents=False)
    db.execute("BEGIN IMMEDIATE")
    for name, items in state.subagent_history.items():
        db.executemany(
            "INSERT INTO msgs (session, pos, body) VALUES (?, ?, ?)",
            [(f"{name}@{session}", i, json.dumps(m)) for i, m in enumerate(items) if i >= start],
        )
    db.execute("INSERT OR REPLACE INTO st VALUES (?, ?)", (session, json.dumps(fields)))
    db.execute("COMMIT")


def _raw_rows_load(db: sqlite3.Connection, session: str) -> dict[str, Any]:
    state = json.loads(db.execute("SELECT body FROM st WHERE session = ?", (session,)).fetchone()[0])
    history: dict[str, list[Any]] = {}
    for name, body in db.execute(
        "SELECT session, body FROM msgs WHERE session LIKE ? ORDER BY id", (f"%@{session}",)
    ):
        history.setdefault(name, []).append(json.loads(body))
    state["subagent_history"] = history
    return state


def _raw_blob_save(db: sqlite3.Connection, session: str, state: ResumableState) -> None:
    db.execute("INSERT OR REPLACE INTO st VALUES (?, ?)", (session, state.to_json()))


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _file_save(path: Path, state: ResumableState) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)


async def bench(subagents: int, messages: int, runs: int) -> dict[str, Any]:
    base, grown = make_state(subagents, messages), make_state(subagents, messages, turns_more=1)
    size = len(base.to_json())
    out: dict[str, Any] = {"subagents": subagents, "messages_each": messages, "state_json_bytes": size}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with connect(root / "ours.db") as conn:

            async def fresh(r: int) -> SQLiteContextStore:
                return SQLiteContextStore(conn, f"first-{r}", project="bench")

            async def saved(r: int) -> SQLiteContextStore:
                store = SQLiteContextStore(conn, f"turn-{r}", project="bench")
                await save_state(store, base)
                return store

            async def save_base(store: SQLiteContextStore) -> None:
                await save_state(store, base)

            async def save_grown(store: SQLiteContextStore) -> None:
                await save_state(store, grown)

            async def load(store: SQLiteContextStore) -> None:
                assert await load_state(store) is not None

            async def ready(r: int) -> SQLiteContextStore:
                return SQLiteContextStore(conn, "first-0", project="bench")

            out["ours_first_save_ms"] = await _median(runs, fresh, save_base)
            out["ours_turn_save_ms"] = await _median(runs, saved, save_grown)
            out["ours_load_ms"] = await _median(runs, ready, load)
            loaded = await load_state(SQLiteContextStore(conn, "turn-0", project="bench"))
            assert loaded == grown, "the benchmark's state did not round-trip"

        db = _raw_db(root / "raw.db")
        try:

            async def raw_fresh(r: int) -> str:
                return f"first-{r}"

            async def raw_saved(r: int) -> str:
                _raw_rows_save(db, f"turn-{r}", base, 0)
                return f"turn-{r}"

            async def rows_first(s: str) -> None:
                _raw_rows_save(db, s, base, 0)

            async def rows_turn(s: str) -> None:
                _raw_rows_save(db, s, grown, messages)

            async def rows_load(s: str) -> None:
                _raw_rows_load(db, s)

            async def blob_save(s: str) -> None:
                _raw_blob_save(db, s, grown)

            async def blob_load(s: str) -> None:
                ResumableState.from_json(
                    db.execute("SELECT body FROM st WHERE session = ?", (s,)).fetchone()[0]
                )

            async def first0(r: int) -> str:
                return "first-0"

            async def blob0(r: int) -> str:
                return "blob-0"

            out["raw_rows_first_save_ms"] = await _median(runs, raw_fresh, rows_first)
            out["raw_rows_turn_save_ms"] = await _median(runs, raw_saved, rows_turn)
            out["raw_rows_load_ms"] = await _median(runs, first0, rows_load)
            out["raw_blob_save_ms"] = await _median(runs, blob0, blob_save)
            out["raw_blob_load_ms"] = await _median(runs, blob0, blob_load)
        finally:
            db.close()

        path = root / "session.json"

        async def file_at(r: int) -> Path:
            return path

        async def file_save(p: Path) -> None:
            _file_save(p, grown)

        async def file_load(p: Path) -> None:
            ResumableState.model_validate_json(_read(p))

        out["file_save_ms"] = await _median(runs, file_at, file_save)
        out["file_load_ms"] = await _median(runs, file_at, file_load)
    for key in list(out):
        if key.endswith("_ms"):
            out[key] = round(out[key], 2)
    out["ratio_first_save_vs_raw_rows"] = round(out["ours_first_save_ms"] / out["raw_rows_first_save_ms"], 2)
    out["ratio_turn_save_vs_raw_rows"] = round(out["ours_turn_save_ms"] / out["raw_rows_turn_save_ms"], 2)
    out["ratio_load_vs_raw_rows"] = round(out["ours_load_ms"] / out["raw_rows_load_ms"], 2)
    out["ratio_turn_save_vs_raw_blob"] = round(out["ours_turn_save_ms"] / out["raw_blob_save_ms"], 2)
    out["ratio_turn_save_vs_file"] = round(out["ours_turn_save_ms"] / out["file_save_ms"], 2)
    out["ratio_load_vs_file"] = round(out["ours_load_ms"] / out["file_load_ms"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--subagents", type=int, default=4)
    parser.add_argument("--messages", type=int, default=100, help="messages per subagent (even)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 2 subagents x 10 messages, 2 runs")
    parser.add_argument("--json", type=Path, help="also write the figures to FILE")
    args = parser.parse_args()
    if args.quick:
        args.subagents, args.messages, args.repeat = 2, 10, 2
    figures = asyncio.run(bench(args.subagents, args.messages - args.messages % 2, args.repeat))
    width = max(map(len, figures))
    for key, value in figures.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        args.json.write_bytes(msgspec.json.format(msgspec.json.encode(figures), indent=2) + b"\n")


if __name__ == "__main__":
    main()
