"""Where the time of ``append`` goes: the store bench's 2,000 appends, split by part.

Each trial appends the bench transcript one message at a time to a new file, as ``bench.run``
does, with the parts timed where the store calls them: encoding (MessagePack and compression),
the one statement whose trigger stores the message (``appending._append_one``), the keyword
index's fold (FTS5 and sealing, ``indexing.flush_pending``) and the writing connection's own WAL
checkpoints (``_Checkpointer.own``). "Other" is the rest: Python between the parts, appends of
messages with media (a transaction of several statements), the checkpoint thread competing for
the core. Totals are per trial, divided by the number of appends, so the parts add up to the
mean the bench reports.

Run: ``taskset -c 0 python -m bench.bench_append [--trials N]`` (pinned, as the bench's goals).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from axio_context_sqlite import SQLiteContextStore, appending, connect, connection, indexing
from axio_context_sqlite import store as store_module

from .workload import transcript

APPENDS = 2000
PARTS = ("encode", "statement", "fold", "own checkpoint")


@contextmanager
def timed(owner: Any, name: str, spent: dict[str, float], part: str) -> Iterator[None]:
    """While inside, ``owner.name`` adds the seconds each call takes to ``spent[part]``."""
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[part] += time.perf_counter() - t0

    setattr(owner, name, wrapper)
    try:
        yield
    finally:
        setattr(owner, name, original)


async def trial(path: Path, messages: list[Any]) -> dict[str, float]:
    """Microseconds per append: the mean, the median, and each part's share of the mean."""
    spent = dict.fromkeys(PARTS, 0.0)
    times = []
    with (
        timed(store_module, "encode_message", spent, "encode"),
        timed(appending, "_append_one", spent, "statement"),
        timed(indexing, "flush_pending", spent, "fold"),
        timed(connection._Checkpointer, "own", spent, "own checkpoint"),
    ):
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "s", project="bench")
            for m in messages:
                t0 = time.perf_counter()
                await store.append(m)
                times.append(time.perf_counter() - t0)
    n = len(messages)
    out = {"mean": statistics.fmean(times) * 1e6, "median": statistics.median(times) * 1e6}
    out.update({part: spent[part] / n * 1e6 for part in PARTS})
    out["other"] = out["mean"] - sum(out[part] for part in PARTS)
    return out


async def main(trials: int) -> None:
    messages = transcript(APPENDS)
    columns = ("mean", "median", *PARTS, "other")
    print(f"{APPENDS:,} appends per trial, us per append; the parts add up to the mean")
    print(" ".join(f"{c:>15s}" for c in columns))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            row = await trial(Path(tmp) / f"t{i}.db", messages)
            rows.append(row)
            print(" ".join(f"{row[c]:15.1f}" for c in columns))
    print(" ".join(f"{statistics.median(r[c] for r in rows):15.1f}" for c in columns), "(median)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    asyncio.run(main(parser.parse_args().trials))
