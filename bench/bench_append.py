"""Where the time of ``append`` goes: the store bench's 2,000 appends, split by part.

Each trial appends the bench transcript one message at a time to a new file, as ``bench.run``
does, with the parts timed where the store calls them: encoding (MessagePack and compression),
the one statement whose trigger stores the message (``appending._append_one``), the keyword
index's fold (FTS5 and sealing, ``indexing.flush_pending``). "Other" is the rest: Python
between the parts, appends of messages with media (a transaction of several statements),
SQLite's own WAL checkpoints (in the commit crossing 1,000 pages). Totals are per trial,
divided by the number of appends, so the parts add up to the mean the bench reports.

The last two columns split the mean the other way, by how long each append took: ``>2 ms`` is
the part of the mean that the few appends over 2 ms make up (the fold, the checkpoints: rare
events), ``n>2 ms`` how many there were. What is left,
the mean minus ``>2 ms``, is what the appends without such an event cost.

``--parts`` adds two measurements of what the statement and the fold are made of. The
trigger's statement alone (no Python around it, each variant on a new file, SQLite's own
checkpoints at 1,000 pages) with each of its steps taken out in turn: the keyword-index queue
row, the session-row upsert (the session made beforehand). And FTS5
indexing the same 1,024 messages' text with this package's tokenizer (Porter stemming) and
without stemming.

Run: ``taskset -c 0 python -m bench.bench_append [--trials N] [--parts]`` (pinned, as the
bench's goals).
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
from typing import Any, Final

import sqlean

from axio_context.messages import text_columns
from axio_context_sqlite import SQLiteContextStore, connect
from axio_context_sqlite.search.fts import FTS_TOKENIZE
from axio_context_sqlite.store import appending, indexing
from axio_context_sqlite.store import context_store as store_module
from axio_context_sqlite.store.message_rows import encode_message

from .workload import transcript

APPENDS = 2000
PARTS = ("encode", "statement", "fold")
SLOW_S: Final = 0.002  # an append over this had a rare event in it (see the module docstring)


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
    slow = [t for t in times if t > SLOW_S]
    out[">2 ms"] = sum(slow) / n * 1e6
    out["n>2 ms"] = len(slow)
    return out


#: The trigger's steps that ``--parts`` takes out one at a time, as the text each one is.
_STEPS: Final = {
    "queue row": "INSERT INTO fts_pending (id) SELECT (sid << 32) | next_position FROM sessions"
    " WHERE id = NEW.session_id;",
    "session upsert": "INSERT INTO sessions (id, project, created_at, updated_at)\n"
    "        VALUES (NEW.session_id, NEW.project, NEW.created_at, NEW.created_at)\n"
    "        ON CONFLICT (id) DO NOTHING;",
}


async def statement_trial(path: Path, messages: list[Any], without: str | None) -> tuple[float, float]:
    """Mean and median us of the trigger's statement alone, with step ``without`` taken out."""
    async with connect(path):
        pass  # the schema
    trigger = appending._APPEND_TRIGGER
    if without is not None:
        assert _STEPS[without] in trigger, without
        trigger = trigger.replace(_STEPS[without], "")
    encoded = [encode_message(m) for m in messages]
    db = sqlean.connect(str(path), isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA wal_autocheckpoint = 1000")
        db.execute(appending._APPEND_VIEW)
        db.execute(trigger)
        db.execute("INSERT INTO sessions (id, project, created_at, updated_at) VALUES ('s', 'p', 0, 0)")
        times = []
        for i, e in enumerate(encoded):
            if e.blobs:
                continue  # those take the transaction path, not the statement
            row = ("s", "p", e.role, e.flags, 1_700_000_000_000 + i, 10, e.payload, None)
            t0 = time.perf_counter()
            db.execute("INSERT INTO temp.axio_append VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
            times.append(time.perf_counter() - t0)
    finally:
        db.close()
    return statistics.fmean(times) * 1e6, statistics.median(times) * 1e6


def tokenizer_ms(rows: list[tuple[int, str, str]], tokenize: str) -> float:
    """Best of three: ms for FTS5 (in memory) to index ``rows`` in one transaction."""
    best = float("inf")
    for _ in range(3):
        db = sqlean.connect(":memory:")
        db.execute(f"CREATE VIRTUAL TABLE f USING fts5(body, tool, content = '', tokenize = '{tokenize}')")
        t0 = time.perf_counter()
        db.executemany("INSERT INTO f (rowid, body, tool) VALUES (?, ?, ?)", rows)
        db.commit()
        best = min(best, time.perf_counter() - t0)
        db.close()
    return best * 1e3


async def parts(messages: list[Any], trials: int, tmp: Path) -> None:
    print(f"\nthe trigger's statement alone, us (mean / median, {trials} trials, alternating):")
    variants: list[str | None] = [None, *_STEPS]
    runs: dict[str | None, list[tuple[float, float]]] = {v: [] for v in variants}
    for i in range(trials):
        for v in variants:
            runs[v].append(await statement_trial(tmp / f"s{i}-{variants.index(v)}.db", messages, v))
    for v, got in runs.items():
        label = "as it is" if v is None else f"without the {v}"
        print(f"  {label:30s} " + "  ".join(f"{a:6.1f} / {b:5.1f}" for a, b in got))
    fold = [(i, *text_columns(m)) for i, m in enumerate(messages[: indexing.FLUSH_AT], 1)]
    chars = sum(len(b) + len(t) for _, b, t in fold)
    print(f"\nFTS5 indexing the fold's {len(fold):,} messages ({chars:,} characters), ms, best of 3:")
    plain = FTS_TOKENIZE.replace("porter ", "")
    for tokenize in (FTS_TOKENIZE, plain):
        print(f"  {tokenize:40s} {tokenizer_ms(fold, tokenize):6.1f}")


async def main(trials: int, with_parts: bool) -> None:
    messages = transcript(APPENDS)
    columns = ("mean", "median", *PARTS, "other", ">2 ms", "n>2 ms")
    print(f"{APPENDS:,} appends per trial, us per append; the parts add up to the mean")
    print(" ".join(f"{c:>15s}" for c in columns))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(trials):
            row = await trial(Path(tmp) / f"t{i}.db", messages)
            rows.append(row)
            print(" ".join(f"{row[c]:15.1f}" for c in columns))
        print(" ".join(f"{statistics.median(r[c] for r in rows):15.1f}" for c in columns), "(median)")
        if with_parts:
            await parts(messages, trials, Path(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--parts", action="store_true", help="also time the statement's steps and the tokenizer"
    )
    args = parser.parse_args()
    asyncio.run(main(args.trials, args.parts))
