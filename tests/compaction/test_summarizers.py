"""The summarizer protocol helpers and the offline extractive summarizer."""

from __future__ import annotations

import pytest

from axio_context import Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.compaction import (
    DEFAULT_COMPACTION_PROMPT,
    ExtractiveSummarizer,
    OpenAICompatibleSummarizer,
    Summarizer,
    clip_middle,
    context_window_of,
    render_transcript,
    repair_tool_pairs,
    split_previous_summary,
    summarizer_name,
    summary_messages,
)
from axio_context.testing import text
from tests.compaction.test_strategies import session


def agent_session() -> list[Message]:
    return [
        text("user", "Fix the failing parser tests in src/parser.py, keep the public API unchanged."),
        Message(
            role="assistant",
            content=[
                TextBlock(text="Let me look at the tests first."),
                ToolUseBlock(id="a", name="run_tests", input={"path": "tests/test_parser.py"}),
                ToolUseBlock(id="b", name="read_file", input={"path": "src/parser.py"}),
            ],
        ),
        Message(
            role="user",
            content=[
                ToolResultBlock(
                    tool_use_id="a",
                    content="FAILED test_nested - IndexError: list index out of range",
                    is_error=True,
                ),
                ToolResultBlock(tool_use_id="b", content="def parse(text):\n    ...\n" * 50),
            ],
        ),
        text(
            "assistant",
            "The tokenizer drops the closing bracket at depth 3. I decided to rewrite the bracket "
            "stack instead of patching the loop. Thanks for waiting!",
        ),
        Message(
            role="assistant",
            content=[ToolUseBlock(id="c", name="edit_file", input={"path": "src/parser.py"})],
        ),
        text("user", "Also add a regression test please."),
    ]


async def test_plain_async_callables_are_summarizers() -> None:
    async def mine(messages: list[Message], system_prompt: str) -> str:
        return "s"

    assert isinstance(mine, Summarizer)
    assert isinstance(ExtractiveSummarizer(), Summarizer)
    assert summarizer_name(mine).endswith("mine")
    assert summarizer_name(ExtractiveSummarizer()) == "extractive"
    assert (
        summarizer_name(OpenAICompatibleSummarizer("qwen2.5:7b", base_url="http://127.0.0.1:1"))
        == "qwen2.5:7b"
    )


def test_context_window_is_read_where_offered() -> None:
    class Model:
        context_window = 32_000
        id = "local-model"

    class Transport:  # axio's shape: transport.model.context_window
        model = Model()

    class Direct:
        context_window = 9_000

    assert context_window_of(Transport()) == 32_000
    assert summarizer_name(Transport()) == "local-model"
    assert context_window_of(Direct()) == 9_000
    assert context_window_of(object()) == 128_000
    assert OpenAICompatibleSummarizer("gpt-4", base_url="http://x").context_window == 8_192
    assert OpenAICompatibleSummarizer("m", base_url="http://x", context_window=777).context_window == 777


async def test_extractive_keeps_goals_decisions_facts_tools_and_errors() -> None:
    summary = await ExtractiveSummarizer()(agent_session(), DEFAULT_COMPACTION_PROMPT)
    lines = summary.splitlines()
    assert lines[0].startswith("Summary of the earlier conversation")
    assert "- (first) Fix the failing parser tests in src/parser.py, keep the public API unchanged." in lines
    assert "- Also add a regression test please." in lines
    assert any("decided to rewrite the bracket stack" in ln for ln in lines)
    assert any("closing bracket at depth 3" in ln for ln in lines)
    assert any(ln.startswith('- run_tests({"path":"tests/test_parser.py"}) -> error') for ln in lines)
    assert any(
        ln.startswith('- read_file({"path":"src/parser.py"}) -> ok, 1249 chars: def parse(text):')
        for ln in lines
    )
    assert any(ln.startswith("- edit_file(") and "interrupted" in ln for ln in lines)
    assert "- run_tests: FAILED test_nested - IndexError: list index out of range" in lines
    assert not any("Thanks for waiting" in ln for ln in lines)
    errors = lines.index("## Errors")
    assert lines[errors + 1].startswith("- run_tests: FAILED")


async def test_synthetic_results_count_as_interrupted() -> None:
    repaired = repair_tool_pairs([*agent_session()[:4], agent_session()[4], text("assistant", "restarting")])
    summary = ExtractiveSummarizer().summarize(repaired)
    assert "edit_file" in summary and "interrupted, no result recorded" in summary


async def test_extractive_respects_its_budget_and_keeps_the_first_goal() -> None:
    summarizer = ExtractiveSummarizer(max_chars=1_000, item_chars=120)
    history = [text("user", "The original task: migrate the database"), *session(200, result_chars=50)]
    summary = summarizer.summarize(history)
    assert len(summary) <= 1_000
    assert "- (first) The original task: migrate the database" in summary
    assert "question 199" in summary  # the newest goals are kept over older ones
    assert "question 5\n" not in summary


async def test_extractive_updates_its_previous_summary_without_stacking() -> None:
    summarizer = ExtractiveSummarizer(max_chars=1_500)
    history = [text("user", "Build the export command"), *session(30)]
    summary = summarizer.summarize(history[:20])
    for end in range(40, len(history) + 1, 20):
        summary = summarizer.summarize([*summary_messages(summary), *history[end - 20 : end]])
        assert summary.count("Summary of the earlier conversation") == 1
        assert summary.count("## Goals") == 1
        assert len(summary) <= 1_500
    assert "- (first) Build the export command" in summary
    assert "question 29" in summary


async def test_extractive_keeps_a_model_summary_as_earlier_context() -> None:
    prose = "The user is porting an app to Rust.\nThey chose tokio and want no unsafe code."
    summary = ExtractiveSummarizer().summarize([*summary_messages(prose), text("user", "next: add logging")])
    assert summary.splitlines()[1:3] == ["## Earlier summary", f"- {' '.join(prose.split())}"]
    again = ExtractiveSummarizer().summarize([*summary_messages(summary), text("user", "then tests")])
    assert again.count("The user is porting an app to Rust") == 1
    assert "next: add logging" in again and "then tests" in again


def test_extractive_rejects_silly_budgets() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        ExtractiveSummarizer(max_chars=10)


def test_render_transcript_for_models() -> None:
    rendered = render_transcript([*summary_messages("before"), *agent_session()], max_result_chars=40)
    assert rendered.startswith("Earlier summary:\nbefore\n\nConversation since then:\nUser: Fix the failing")
    assert 'Assistant called tool run_tests({"path":"tests/test_parser.py"})' in rendered
    assert "Tool error (run_tests): FAILED test_nested" in rendered
    assert "chars truncated]" in rendered
    previous, rest = split_previous_summary([*summary_messages("s"), text("user", "x")])
    assert previous == "s" and rest == [text("user", "x")]


def test_clip_middle_keeps_both_ends_within_the_limit() -> None:
    body = "a" * 500 + "b" * 500
    for limit in (0, 10, 31, 40, 100, 999):
        clipped = clip_middle(body, limit)
        assert len(clipped) <= limit
        if limit >= 40:
            assert clipped.startswith("a") and clipped.endswith("b")
            cut = int(clipped.split("[... ")[1].split(" ")[0])
            assert len(clipped) - len(f"\n[... {cut} characters cut ...]\n") + cut == len(body)
    assert clip_middle(body, 1_000) is body
