"""A save_state writer process for the multi-process and SIGKILL tests.

Usage: ``state_worker.py URL SESSION NAME COUNT``

Opens its own pool, prints "ready", waits for a line on stdin, then for n in 1..COUNT saves
:func:`state_of` (NAME, n) with SESSION, printing ``saved n`` once each save has committed.
Any exception ends the process with status 1 and its traceback on stderr.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from axio_context.state import ResumableState
from axio_context_postgres import PostgresContextStore, connect
from axio_context_postgres.state import save_state


def history_of(name: str, n: int) -> list[dict[str, Any]]:
    """``n`` turns of subagent history, every message naming the writer and the save; a save
    with an odd ``n`` keeps the even one's messages and adds its own (appended), an even one
    changes them all (rewritten)."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        tag = f"{name}/{n - n % 2}"
        out.append({"kind": "request", "parts": [{"part_kind": "user-prompt", "content": f"{tag} ask {i}"}]})
        out.append({"kind": "response", "parts": [{"part_kind": "text", "content": f"{tag} answer {i}"}]})
    return out


def state_of(name: str, n: int) -> ResumableState:
    """Save ``n`` of writer ``name``: its prompt names the save, its histories must match it."""
    return ResumableState(
        user_prompts=[f"{name}:{n}"],
        subagent_history={"explorer": history_of(name, n), "coder": history_of(name, n)[:2]},
    )


async def main(url: str, session: str, name: str, count: int) -> None:
    pool = await connect(url, min_size=1, max_size=1)
    try:
        store = PostgresContextStore(pool, session, project="p")
        print("ready", flush=True)
        sys.stdin.readline()
        for n in range(1, count + 1):
            await save_state(store, state_of(name, n))
            print(f"saved {n}", flush=True)
    finally:
        await pool.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
