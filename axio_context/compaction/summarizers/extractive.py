"""The offline summarizer: selects lines (goals, decisions, facts, tool calls, errors) without a model."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import msgspec

from ...blocks import (
    AudioBlock,
    ImageBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from ...messages import Message, input_text
from ..pairs import is_synthetic_result, result_id
from .protocol import split_previous_summary
from .rendering import result_text

__all__ = ["ExtractiveSummarizer"]

# --- the offline summarizer -------------------------------------------------------------------

_HEADER: Final = "Summary of the earlier conversation (extractive: lines selected without a model)"
_EARLIER: Final = "Earlier summary"
_SECTIONS: Final = (_EARLIER, "Goals", "Decisions", "Facts", "Tool calls", "Errors")
#: Share of the budget each section may claim before leftovers are shared out, in priority order.
_QUOTAS: Final = (
    (_EARLIER, 0.20),
    ("Goals", 0.25),
    ("Errors", 0.15),
    ("Decisions", 0.15),
    ("Tool calls", 0.15),
    ("Facts", 0.10),
)
_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION: Final = re.compile(
    r"\b(decid\w*|plan\w*|will|going to|let's|let us|instead|chose|choose|should|must|"
    r"next step|i'll|we'll|switch\w* to|agreed?)\b",
    re.IGNORECASE,
)
_ERROR: Final = re.compile(r"\b(error|exception|traceback|fail\w*|crash\w*|denied|timed? ?out)\b", re.I)
_SPECIFIC: Final = re.compile(r"\d|/|`|=|\.\w{1,5}\b|[A-Z]\w*[A-Z]|_")


def _one_line(text: str) -> str:
    return " ".join(text.split())


class _Item(msgspec.Struct):
    section: str
    text: str
    seq: int
    pinned: bool = False


class ExtractiveSummarizer:
    """An offline summarizer: keeps the user's goals, decisions, key facts, tool calls with their
    outcomes, and errors, selected from the text itself, within ``max_chars``.

    No model, no network, deterministic. Given an earlier summary (its own, or a model's), it
    merges the new lines into it and trims the oldest of the least important kind first, so a
    summary stays within its budget however often the conversation is compacted. The first
    goal (the task that started the conversation) is always kept.
    """

    name = "extractive"

    def __init__(self, *, max_chars: int = 4_000, item_chars: int = 240) -> None:
        if max_chars < 200:
            raise ValueError(f"max_chars must be at least 200, got {max_chars}")
        if item_chars < 20:
            raise ValueError(f"item_chars must be at least 20, got {item_chars}")
        self.max_chars = max_chars
        self.item_chars = item_chars

    async def __call__(self, messages: list[Message], system_prompt: str = "", /) -> str:
        return self.summarize(messages)

    def summarize(self, messages: Sequence[Message]) -> str:
        """The summary text of ``messages`` (synchronously; the work is pure computation)."""
        previous, rest = split_previous_summary(messages)
        items = self._parse_previous(previous) if previous is not None else []
        items += self._extract(rest)
        if not any(i.pinned and i.section == "Goals" for i in items):
            for item in items:
                if item.section == "Goals":
                    item.pinned = True
                    break
        return self._render(self._select(self._dedupe(items)))

    # -- extraction ----------------------------------------------------------------------------

    def _clip(self, text: str) -> str:
        text = _one_line(text)
        return text if len(text) <= self.item_chars else text[: self.item_chars - 3] + "..."

    def _parse_previous(self, text: str) -> list[_Item]:
        lines = text.splitlines()
        if not lines or lines[0].strip() != _HEADER:
            # A model's prose: keep it, clipped, as the oldest and most important context.
            limit = self.max_chars // 4
            prose = _one_line(text)
            prose = prose if len(prose) <= limit else prose[: limit - 3] + "..."
            return [_Item(_EARLIER, prose, -1_000_000, pinned=True)] if prose else []
        items: list[_Item] = []
        section = ""
        for line in lines[1:]:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.startswith("- ") and section in _SECTIONS:
                pinned = section == _EARLIER or line.startswith("- (first) ")
                body = line[10:] if line.startswith("- (first) ") else line[2:]
                items.append(_Item(section, body, -1_000_000 + len(items), pinned=pinned))
        return items

    def _extract(self, messages: Sequence[Message]) -> list[_Item]:
        items: list[_Item] = []
        results: dict[str, ToolResultBlock | UnknownBlock] = {}
        for msg in messages:
            for block in msg.content:
                rid = result_id(block)
                if rid is not None and isinstance(block, ToolResultBlock | UnknownBlock):
                    results.setdefault(rid, block)
        seq = 0
        for msg in messages:
            for block in msg.content:
                seq += 1
                if isinstance(block, TextBlock) and block.text.strip():
                    if msg.role == "user":
                        items.append(_Item("Goals", self._clip(block.text), seq))
                    elif msg.role == "assistant":
                        items += self._sentences(block.text, seq)
                elif isinstance(block, ToolUseBlock):
                    items += self._tool_call(block, results.get(block.id), seq)
                elif isinstance(block, ImageBlock | AudioBlock | VideoBlock) and msg.role == "user":
                    items.append(_Item("Facts", f"the user attached {block.media_type}", seq))
        return items

    def _sentences(self, text: str, seq: int) -> list[_Item]:
        out: list[_Item] = []
        for sentence in _SENTENCE.split(text):
            sentence = sentence.strip()
            if len(sentence) < 8:
                continue
            if _ERROR.search(sentence):
                out.append(_Item("Errors", self._clip(sentence), seq))
            elif _DECISION.search(sentence):
                out.append(_Item("Decisions", self._clip(sentence), seq))
            elif _SPECIFIC.search(sentence):
                out.append(_Item("Facts", self._clip(sentence), seq))
        return out

    def _tool_call(
        self, use: ToolUseBlock, result: ToolResultBlock | UnknownBlock | None, seq: int
    ) -> list[_Item]:
        args = _one_line(input_text(use.input))
        if len(args) > 80:
            args = args[:77] + "..."
        call = f"{use.name}({args})"
        if result is None or is_synthetic_result(result):
            return [_Item("Tool calls", self._clip(f"{call} -> interrupted, no result recorded"), seq)]
        if isinstance(result, UnknownBlock):  # written by a newer version: answered, unreadable here
            outcome = "error" if result.data.get("is_error") is True else "ok"
            return [
                _Item(
                    "Tool calls", self._clip(f"{call} -> {outcome}, in a form this version cannot read"), seq
                )
            ]
        body = result_text(result).strip()
        first = _one_line(body.splitlines()[0]) if body else ""
        if result.is_error:
            return [
                _Item("Tool calls", self._clip(f"{call} -> error"), seq),
                _Item("Errors", self._clip(f"{use.name}: {first or 'failed with no message'}"), seq),
            ]
        outcome = f"ok, {len(body)} chars" + (f": {first}" if first else "")
        return [_Item("Tool calls", self._clip(f"{call} -> {outcome}"), seq)]

    # -- selection and rendering ---------------------------------------------------------------

    @staticmethod
    def _dedupe(items: list[_Item]) -> list[_Item]:
        latest: dict[tuple[str, str], _Item] = {}
        for item in items:
            key = (item.section, item.text)
            old = latest.get(key)
            if old is not None:
                item.pinned = item.pinned or old.pinned
                item.seq = old.seq if old.pinned else item.seq
            latest[key] = item
        return sorted(latest.values(), key=lambda i: i.seq)

    @staticmethod
    def _cost(item: _Item) -> int:
        # "- " + text + newline, and "(first) " on the pinned goal.
        return len(item.text) + 3 + (8 if item.pinned and item.section == "Goals" else 0)

    def _select(self, items: list[_Item]) -> list[_Item]:
        budget = self.max_chars - len(_HEADER) - sum(len(s) + 5 for s in _SECTIONS)
        chosen: dict[int, _Item] = {}
        used = 0
        for item in items:  # pinned lines first: the earlier prose and the first goal
            if item.pinned and used + self._cost(item) <= budget:
                chosen[id(item)] = item
                used += self._cost(item)
        by_section: dict[str, list[_Item]] = {s: [] for s in _SECTIONS}
        for item in items:
            if not item.pinned:
                by_section[item.section].append(item)
        # Each section gets its quota, newest lines first; leftovers go out in priority order.
        for pass_quota in (True, False):
            for section, share in _QUOTAS:
                quota = int(budget * share)
                taken = sum(self._cost(i) for i in chosen.values() if i.section == section)
                for item in reversed(by_section[section]):
                    cost = self._cost(item)
                    if id(item) in chosen or used + cost > budget:
                        continue
                    if pass_quota and taken + cost > quota:
                        break
                    chosen[id(item)] = item
                    used += cost
                    taken += cost
        return sorted(chosen.values(), key=lambda i: i.seq)

    def _render(self, items: list[_Item]) -> str:
        lines = [_HEADER]
        for section in _SECTIONS:
            picked = [i for i in items if i.section == section]
            if not picked:
                continue
            lines.append(f"## {section}")
            for item in picked:
                first = item.pinned and section == "Goals"
                lines.append(f"- (first) {item.text}" if first else f"- {item.text}")
        if len(lines) == 1:
            lines.append("(nothing to keep)")
        return "\n".join(lines)
