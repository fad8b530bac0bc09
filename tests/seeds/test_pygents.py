"""Code written for pygents runs unchanged (issue 35, item 13, its second half): pygents users write
``from pygents import ContextQueue``; here it is ``from axio_context import ContextQueue``.

:func:`test_the_same_script_gives_what_real_pygents_gives` runs one pygents-style script against
the REAL pygents 0.7.0 and against ours (Python 3.12, which pygents needs) and compares.
(The synchronous ``branch()`` of the SQLite queue and pool, the first half of item 13, is not
covered here.)
"""

from __future__ import annotations

import json
from pathlib import Path

from axio_context import ContextItem, ContextPool, ContextQueue
from axio_context.pools import ContextQueue as LayerQueue

from .py312 import run


async def test_context_queue_is_importable_from_the_top_level() -> None:
    assert ContextQueue is LayerQueue
    queue = ContextQueue(limit=2)
    await queue.append(ContextItem(content="a"), ContextItem(content="b"), ContextItem(content="c"))
    assert queue.history() == "b\nc"
    pool = ContextPool(limit=1)
    await pool.add(ContextItem(id="x", description="x", content=1))
    assert pool.get("x").content == 1


def test_the_same_script_gives_what_real_pygents_gives() -> None:
    done = run(Path(__file__).with_name("pygents_real.py"), "pygents", "axio_context")
    assert done.returncode == 0, done.stdout + done.stderr
    theirs, ours = (json.loads(line) for line in done.stdout.splitlines())
    assert theirs.pop("package") == "pygents" and ours.pop("package") == "axio_context"
    assert ours == theirs
