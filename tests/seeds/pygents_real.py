"""Run by tests/seeds/test_pygents.py under Python 3.12 (pygents 0.7.0 needs it), in the venv that
holds the REAL pygents: the same pygents-style script runs with ``from pygents import ...`` and
with ``from axio_context import ...`` (the one line a port changes), and prints one JSON object
per package; the test compares them."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any


async def scenario(package: str) -> dict[str, Any]:
    top = importlib.import_module(package)
    ContextItem, ContextPool, ContextQueue = top.ContextItem, top.ContextPool, top.ContextQueue
    seen: dict[str, Any] = {}

    queue = ContextQueue(limit=3)
    await queue.append(ContextItem(content="one"), ContextItem(content="two"))
    await queue.append(ContextItem(content="three"), ContextItem(content="four"))
    seen["queue"] = [item.content for item in queue]
    seen["history"] = queue.history()
    seen["last_two"] = queue.history(last=2)
    child = queue.branch(limit=2)
    await child.append(ContextItem(content="five"))
    seen["child"] = [item.content for item in child]
    seen["parent_after_branch"] = [item.content for item in queue]
    seen["len_bool"] = [len(queue), bool(queue), bool(ContextQueue(limit=1))]
    await queue.clear()
    seen["cleared"] = len(queue)
    try:
        await queue.append("not an item")
    except TypeError:
        seen["refused"] = "TypeError"

    pool = ContextPool(limit=2)
    await pool.add(ContextItem(id="a", description="alpha doc", content="A"))
    await pool.add(ContextItem(id="b", description="beta doc", content="B"))
    await pool.add(ContextItem(id="c", description="gamma doc", content="C"))  # evicts the oldest
    seen["pool"] = sorted(item.id for item in pool)
    seen["get"] = pool.get("c").content
    await pool.remove("b")
    seen["after_remove"] = sorted(item.id for item in pool)
    try:
        pool.get("zzz")
    except KeyError:
        seen["missing"] = "KeyError"
    return seen


async def main() -> None:
    for package in sys.argv[1:]:
        print(json.dumps({"package": package, **await scenario(package)}))


if __name__ == "__main__":
    asyncio.run(main())
