"""Compaction benchmark: the cost of computing a view, and of the below-threshold token check.

1. The model's view of a 10,000-message agent session through a pipeline of tool-result
   truncation, a sliding window and a token budget (the work done before every model call).
2. ``AutoCompactStore.add_context_tokens`` below the threshold on a 100- and a 10,000-message
   session: it must not read the transcript (reads are counted) and cost the same for both.
3. For scale: ``estimated_view_tokens()`` (cached running sums) and one full compaction with
   the offline summarizer, each on both sizes.

Run: ``python -m bench.bench_compaction``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from axio_context import MemoryContextStore, Message
from axio_context.compaction import (
    AutoCompactStore,
    CompactionContext,
    CompactionPipeline,
    ExtractiveSummarizer,
    HardTruncation,
    SlidingWindow,
    TokenBudget,
    TruncateToolResults,
    repair_tool_pairs,
)
from axio_context.tokens import estimate_tokens

from .workload import transcript


class CountingStore(MemoryContextStore):
    """Counts reads of the transcript, to show the token check does none."""

    reads = 0

    async def get_history(self) -> list[Message]:
        self.reads += 1
        return await super().get_history()

    async def get_full_history(self) -> list[Message]:
        self.reads += 1
        return await super().get_full_history()


async def timed(fn: Callable[[], Awaitable[object]], repeat: int) -> float:
    """Median seconds of one call over ``repeat`` runs."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f} ms"


def us(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f} us"


async def view_benchmark(history: list[Message]) -> None:
    ctx = CompactionContext()
    pipeline = CompactionPipeline(
        [
            TruncateToolResults(1_000),
            SlidingWindow(2_000),
            TokenBudget.from_model("gpt-4o", [SlidingWindow(300), HardTruncation(max_messages=100)]),
        ]
    )
    view = await pipeline(history, ctx)
    print(f"view of {len(history):,} messages ({estimate_tokens(history):,} est. tokens)")
    print(
        f"  -> {len(view):,} messages, {estimate_tokens(view):,} est. tokens (budget {int(128_000 * 0.8):,})"
    )
    rows: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("pipeline: truncate + window + token budget", lambda: pipeline(history, ctx)),
        ("  TruncateToolResults(1000) alone", lambda: TruncateToolResults(1_000)(history, ctx)),
        ("  SlidingWindow(2000) alone", lambda: SlidingWindow(2_000)(history, ctx)),
        ("  repair_tool_pairs alone", lambda: asyncio.sleep(0, repair_tool_pairs(history))),
        ("  estimate_tokens over the session", lambda: asyncio.sleep(0, estimate_tokens(history))),
    ]
    for label, fn in rows:
        print(f"  {label:<44} {ms(await timed(fn, 15))}")


async def threshold_benchmark(sizes: tuple[int, ...], calls: int = 20_000) -> None:
    print(f"\nAutoCompactStore.add_context_tokens below the threshold ({calls:,} calls)")
    for n in sizes:
        inner = CountingStore()
        await inner.append_many(transcript(n))
        store = AutoCompactStore(inner, ExtractiveSummarizer(), max_tokens=100_000)
        start = time.perf_counter()
        for _ in range(calls):
            await store.add_context_tokens(50_000, 500)
        per_call = (time.perf_counter() - start) / calls
        print(f"  {n:>6,} messages: {us(per_call)} per call, transcript reads: {inner.reads}")


async def estimate_and_compaction(sizes: tuple[int, ...]) -> None:
    print("\nestimated_view_tokens (cached running sums) and one compaction (offline summarizer)")
    for n in sizes:
        history = transcript(n)
        store = MemoryContextStore(history)
        est = await timed(store.estimated_view_tokens, 2_000)
        auto = AutoCompactStore(MemoryContextStore(history), ExtractiveSummarizer(), keep_recent=20)
        start = time.perf_counter()
        await auto.compact()
        took = time.perf_counter() - start
        [cp] = await auto.list_checkpoints()
        print(
            f"  {n:>6,} messages: estimate {us(est)}, compaction {ms(took)} "
            f"({cp.tokens_before:,} -> {cp.tokens_after:,} est. tokens)"
        )


async def main() -> None:
    await view_benchmark(transcript(10_000))
    await threshold_benchmark((100, 10_000))
    await estimate_and_compaction((100, 10_000))


if __name__ == "__main__":
    asyncio.run(main())
