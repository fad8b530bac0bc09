"""Realistic agent transcripts for the benchmarks, deterministic for a given seed.

A turn is a user question, an assistant reply with one or two tool calls, their results
(0.5-6 KB, a few 4 KB), and a final assistant answer; an 8 KB image appears now and then.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

_WORDS = (  # noqa: SIM905
    "the parser fails on nested brackets so we refactor tokenizer state machine and add tests for "
    "edge cases like empty input unicode escapes trailing commas database migration index query "
    "latency cache invalidation retry backoff config file path permission denied timeout socket"
).split()


def _prose(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n_words))


def transcript(
    n_messages: int, *, seed: int = 7, image_every: int = 97, result_sizes: tuple[int, int] = (500, 6000)
) -> list[Message]:
    """``n_messages`` messages of a tool-using agent conversation."""
    return list(iter_transcript(n_messages, seed=seed, image_every=image_every, result_sizes=result_sizes))


def iter_transcript(
    n_messages: int, *, seed: int = 7, image_every: int = 97, result_sizes: tuple[int, int] = (500, 6000)
) -> Iterator[Message]:
    rng = random.Random(seed)
    image = bytes(rng.getrandbits(8) for _ in range(8192))
    produced = 0
    call = 0
    while produced < n_messages:
        turn: list[Message] = []
        user_content: list = [TextBlock(text=_prose(rng, rng.randint(8, 40)))]
        if image_every and rng.randrange(image_every // 4 or 1) == 0:
            user_content.append(ImageBlock(media_type="image/png", data=image))
        turn.append(Message(role="user", content=user_content))
        calls = []
        for _ in range(rng.choice((1, 1, 2))):
            call += 1
            calls.append(
                ToolUseBlock(
                    id=f"call_{call:06d}",
                    name=rng.choice(("read_file", "grep", "run_tests", "edit_file")),
                    input={"path": f"src/mod_{rng.randint(1, 99)}.py", "pattern": _prose(rng, 3)},
                )
            )
        turn.append(
            Message(role="assistant", content=[TextBlock(text=_prose(rng, rng.randint(5, 30))), *calls])
        )
        results = []
        for c in calls:
            size = rng.randint(*result_sizes)
            results.append(ToolResultBlock(tool_use_id=c.id, content=(_prose(rng, size // 6))[:size]))
        turn.append(Message(role="user", content=results))
        turn.append(Message(role="assistant", content=[TextBlock(text=_prose(rng, rng.randint(20, 120)))]))
        for msg in turn:
            if produced >= n_messages:
                return
            produced += 1
            yield msg
