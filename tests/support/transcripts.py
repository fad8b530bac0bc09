"""Hypothesis strategies for agent transcripts: parallel tool calls, errors, long results, and
the broken shapes real sessions end up with (interrupted calls, partial or reordered results,
orphan results, a final call still awaiting its results)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from axio_context import ImageBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.compaction import summary_messages

_WORDS = ["alpha", "parser", "error", "decided", "src/app.py", "42", "we", "will", "fix", "the", "bug"]

KINDS = [
    "user",
    "assistant",
    "tools",
    "tools",
    "tools_reordered",
    "tools_partial",
    "tools_list",
    "interrupted",
    "orphan",
    "system",
    "image",
]


def _words(draw: Any, low: int = 1, high: int = 12) -> str:
    return " ".join(draw(st.lists(st.sampled_from(_WORDS), min_size=low, max_size=high)))


@st.composite
def transcripts(draw: Any, max_steps: int = 14) -> list[Message]:
    """A list of messages shaped like an agent's session, broken in realistic ways."""
    msgs: list[Message] = []
    next_id = 0

    def uses(k: int) -> list[ToolUseBlock]:
        nonlocal next_id
        out = []
        for _ in range(k):
            next_id += 1
            out.append(
                ToolUseBlock(
                    id=f"t{next_id}",
                    name=draw(st.sampled_from(["read", "grep", "run"])),
                    input={"q": next_id},
                )
            )
        return out

    def result(use: ToolUseBlock) -> ToolResultBlock:
        size = draw(st.sampled_from([0, 10, 300, 2500, 6000]))
        body = ("line of output " * (size // 15 + 1))[:size]
        return ToolResultBlock(tool_use_id=use.id, content=body, is_error=draw(st.booleans()))

    if draw(st.booleans()):
        msgs.append(Message(role="system", content=[TextBlock(text="be brief")]))
    if draw(st.booleans()):
        msgs += summary_messages("an earlier summary")
    for kind in draw(st.lists(st.sampled_from(KINDS), max_size=max_steps)):
        if kind == "user":
            msgs.append(Message(role="user", content=[TextBlock(text=_words(draw))]))
        elif kind == "assistant":
            msgs.append(Message(role="assistant", content=[TextBlock(text=_words(draw))]))
        elif kind == "system":
            msgs.append(Message(role="system", content=[TextBlock(text=_words(draw))]))
        elif kind == "image":
            msgs.append(Message(role="user", content=[ImageBlock(media_type="image/png", data=b"\x89PNG")]))
        elif kind.startswith("tools") or kind == "interrupted":
            calls = uses(draw(st.integers(1, 3)))
            lead: list[Any] = [TextBlock(text=_words(draw))] if draw(st.booleans()) else []
            msgs.append(Message(role="assistant", content=[*lead, *calls]))
            if kind == "interrupted":
                continue
            results: list[Any] = [result(c) for c in calls]
            if kind == "tools_reordered":
                results = draw(st.permutations(results))
                if draw(st.booleans()):
                    results.append(TextBlock(text="and a note"))
            elif kind == "tools_partial":
                results = results[: draw(st.integers(0, len(results) - 1))]
                if not results:
                    results = [TextBlock(text="never mind")]
            elif kind == "tools_list":
                results = [
                    ToolResultBlock(
                        tool_use_id=c.id,
                        content=[
                            TextBlock(text="x" * draw(st.sampled_from([5, 3000]))),
                            ImageBlock("image/png", b"1"),
                        ],
                    )
                    for c in calls
                ]
            msgs.append(Message(role="user", content=results))
        elif kind == "orphan":
            next_id += 1
            msgs.append(
                Message(role="user", content=[ToolResultBlock(tool_use_id=f"gone{next_id}", content="stale")])
            )
    if draw(st.booleans()):
        msgs.append(Message(role="assistant", content=uses(draw(st.integers(1, 2)))))  # awaiting results
    return msgs


@st.composite
def valid_transcripts(draw: Any, max_steps: int = 14) -> list[Message]:
    """Transcripts in canonical shape only (every call answered in the next message)."""
    from axio_context.compaction import repair_tool_pairs

    return repair_tool_pairs(draw(transcripts(max_steps)))
