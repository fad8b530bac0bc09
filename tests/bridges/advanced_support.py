"""What the advanced session's tests share: a turn's items and a run result carrying usage."""

from __future__ import annotations

from agents.items import TResponseInputItem
from agents.usage import Usage


def turn(i: int) -> list[TResponseInputItem]:
    """Turn ``i``: a user question and the assistant's answer."""
    return [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": f"answer {i}"}]


class Result:
    """A run result as ``store_run_usage`` reads it: ``n`` input tokens, 2 output tokens."""

    def __init__(self, n: int) -> None:
        self.context_wrapper = self
        self.usage = Usage(requests=1, input_tokens=n, output_tokens=2, total_tokens=n + 2)
