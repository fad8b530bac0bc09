"""Probe a database through the public API and print what happened, as one JSON object.

The read-only tests run this as an unprivileged user when the suite runs as root (root ignores
file permissions). Usage: ``ro_probe.py ACTION DB``:

- ``make``: create DB with session "s" holding two messages and tokens (3, 4);
- ``unclosed``: append "late" to "s" and exit without closing, leaving it in DB's ``-wal``;
- ``probe``: open DB, read "s", try every kind of write; then the same through ``readonly=True``;
- ``after``: open DB, append "after" to "s", read it back.

Each step is reported as ``"ok"`` or ``"ErrorClass: message"``; values read are reported too.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from axio_context import Message, TextBlock
from axio_context_sqlite import SQLiteContextStore, connect


def _msg(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


async def _step(out: dict[str, Any], name: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    try:
        value = await fn()
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
        return None
    out[name] = "ok"
    return value


async def _writes(out: dict[str, Any], prefix: str, store: SQLiteContextStore) -> None:
    history = await _step(out, f"{prefix}read", store.get_history)
    if history is not None:
        out[f"{prefix}texts"] = [m.text for m in history]
    await _step(out, f"{prefix}append", lambda: store.append(_msg("new")))
    await _step(out, f"{prefix}tokens", lambda: store.add_context_tokens(1, 1))
    await _step(out, f"{prefix}fork", store.fork)
    await _step(out, f"{prefix}title", lambda: store.set_title("t"))


async def main(action: str, db: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if action == "make":
        async with connect(db) as conn:
            store = SQLiteContextStore(conn, "s", project="p")
            await store.append_many([_msg("one"), _msg("two")])
            await store.set_context_tokens(3, 4)
        out["make"] = "ok"
    elif action == "unclosed":
        conn = await connect(db)
        await SQLiteContextStore(conn, "s", project="p").append(_msg("late"))
        print(json.dumps({"unclosed": "ok"}), flush=True)
        os._exit(0)  # no close: nothing copies the WAL back into the file
    elif action == "probe":
        conn = await _step(out, "connect", lambda: connect(db))
        if conn is not None:
            try:
                await _writes(out, "", SQLiteContextStore(conn, "s", project="p"))
            finally:
                await conn.close()
        ro = await _step(out, "ro_connect", lambda: connect(db, readonly=True))
        if ro is not None:
            try:
                await _writes(out, "ro_", SQLiteContextStore(ro, "s", project="p"))
            finally:
                await ro.close()
    elif action == "after":
        async with connect(db) as conn:
            store = SQLiteContextStore(conn, "s", project="p")
            await _step(out, "append", lambda: store.append(_msg("after")))
            out["texts"] = [m.text for m in await store.get_history()]
            out["tokens"] = list(await store.get_context_tokens())
    else:
        raise SystemExit(f"unknown action {action!r}")
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
