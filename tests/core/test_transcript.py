"""Transcript formats: writers and validating readers, without any database."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import ImageBlock, ProviderBlock, TextBlock, ToolResultBlock, ToolUseBlock, UnknownBlock
from axio_context.errors import DecodeError, TranscriptError
from axio_context.testing import every_block_message, text
from axio_context.transcript import (
    CheckpointRecord,
    JsonlWriter,
    JsonWriter,
    MarkdownWriter,
    MessageRecord,
    SessionHeader,
    TranscriptWriter,
    format_time,
    iter_jsonl,
    parse_time,
    read_json,
    render_blocks,
    render_header,
    sniff_format,
    writer_for,
)

T0 = 1_700_000_000_123


def _records(n: int = 0) -> list[MessageRecord]:
    messages = every_block_message() if n == 0 else [text("user", f"m{i}") for i in range(n)]
    return [
        MessageRecord(role=m.role, content=m.content, created_at=format_time(T0 + i))
        for i, m in enumerate(messages)
    ]


def _header(sid: str, count: int, **kw: object) -> SessionHeader:
    return SessionHeader(
        id=sid,
        created_at=format_time(T0),
        updated_at=format_time(T0 + 5),
        message_count=count,
        **kw,  # type: ignore[arg-type]
    )


def _write(writer: TranscriptWriter, sessions: list[tuple[SessionHeader, list[MessageRecord]]]) -> bytes:
    out = [writer.begin()]
    for header, records in sessions:
        out.append(writer.session(header))
        first = header.inherited
        for i in range(0, len(records), 2):  # several batches per session
            out.append(writer.messages(header, first + i, records[i : i + 2]))
        out.append(writer.end_session(header))
    out.append(writer.end())
    return b"".join(out)


def _sample() -> list[tuple[SessionHeader, list[MessageRecord]]]:
    cp = CheckpointRecord(id=1, position=2, summary=[text("user", "sum")], created_at=format_time(T0 + 9))
    parent = _header("parent", 6, project="/p", metadata={"k": [1, 2.5]}, checkpoints=[cp], input_tokens=3)
    child = _header("child", 8, parent_id="parent", fork_position=6, inherited=6, checkpoints=[cp])
    return [(parent, _records()), (child, _records(2)), (_header("empty", 0), [])]


def test_times_round_trip_exactly() -> None:
    for ms in (0, 1, 999, T0, -1, -86_400_001, 253_402_300_799_999):
        assert parse_time(format_time(ms)) == ms
    assert format_time(T0) == "2023-11-14T22:13:20.123+00:00"
    assert parse_time("2023-11-14T23:13:20.123+01:00") == T0
    assert parse_time("2023-11-14T22:13:20.123Z") == T0
    with pytest.raises(DecodeError, match="no UTC offset"):
        parse_time("2023-11-14T22:13:20")
    with pytest.raises(DecodeError, match="not an ISO-8601 time"):
        parse_time("soon")


@pytest.mark.parametrize("writer", [JsonWriter, JsonlWriter])
def test_lossless_writers_read_back(writer: type[TranscriptWriter]) -> None:
    sample = _sample()
    data = _write(writer(), sample)
    records = read_json(data) if writer is JsonWriter else list(iter_jsonl(data.splitlines()))
    assert [r.header() for r in records] == [h for h, _ in sample]
    assert [r.messages for r in records] == [m for _, m in sample]
    assert records[0].messages[4].content[1] == UnknownBlock(
        {"type": "hologram", "frames": [1, 2, 3], "meta": {"fps": 24.0, "ok": True}}
    )


def test_streamed_json_is_the_document_msgspec_would_write() -> None:
    sample = _sample()
    streamed = msgspec.json.decode(_write(JsonWriter(), sample))
    whole = {
        "format": "axio-context",
        "version": 1,
        "embeddings": False,  # exports carry none; reindex rebuilds them
        "sessions": [
            {
                **msgspec.to_builtins(h, enc_hook=lambda o: o.data),
                "messages": msgspec.to_builtins(m, enc_hook=lambda o: o.data),
            }
            for h, m in sample
        ],
    }
    assert streamed == whole
    assert read_json(_write(JsonWriter(), [])) == []


def test_jsonl_reader_streams() -> None:
    lines = _write(JsonlWriter(), _sample()).splitlines()
    consumed: list[int] = []

    def source() -> Iterator[bytes]:
        for i, line in enumerate(lines):
            consumed.append(i)
            yield line

    sessions = iter_jsonl(source())
    first = next(sessions)
    assert first.id == "parent"
    assert len(consumed) == 1 + 6 + 1  # its lines, and the next session line that ended it
    assert [s.id for s in sessions] == ["child", "empty"]


def test_sniff_format() -> None:
    assert sniff_format(_write(JsonWriter(), _sample())) == "json"
    assert sniff_format(_write(JsonlWriter(), _sample())) == "jsonl"
    assert sniff_format(b'{"format":"axio-context","version":1,"sessions":[]}') == "json"
    assert sniff_format(b"") == "json"
    assert sniff_format(b"\n\r\n  \n") == "json"
    assert sniff_format(b"[]") == "json"


def _long_first_line() -> bytes:
    """A jsonl export whose session line (17 checkpoints of ~4 KB summaries) passes 64 KiB."""
    checkpoints = [
        CheckpointRecord(
            id=i + 1, position=i + 1, summary=[text("user", "s" * 4000)], created_at=format_time(T0)
        )
        for i in range(17)
    ]
    return _write(JsonlWriter(), [(_header("s", 20, checkpoints=checkpoints), _records(20))])


def test_sniff_format_needs_only_a_prefix_of_a_long_first_line() -> None:
    data = _long_first_line()
    assert len(data.split(b"\n", 1)[0]) > 1 << 16
    head = data[: 1 << 16]  # what the importer passes
    assert sniff_format(head) == "jsonl"
    assert [r.id for r in iter_jsonl(data.splitlines())] == ["s"]


@pytest.mark.parametrize("blank", [b"\n", b"\r\n", b"\n \t\n\n"])
@pytest.mark.parametrize("writer", [JsonWriter, JsonlWriter])
def test_sniff_format_skips_blank_leading_lines(blank: bytes, writer: type[TranscriptWriter]) -> None:
    data = blank + _write(writer(), _sample())
    assert sniff_format(data) == writer.name
    records = read_json(data) if writer is JsonWriter else list(iter_jsonl(data.splitlines()))
    assert [r.id for r in records] == ["parent", "child", "empty"]


def test_sniff_format_finds_kind_after_other_keys_and_nested_values() -> None:
    line = (
        b'{"format":"axio-context","version":1,"metadata":{"kind":"x","sessions":[{"kind":1}]},'
        b'"kind":"session"'
    )
    assert sniff_format(line) == "jsonl"
    assert sniff_format(b'{"id":"a, \\"kind\\": 1","sessions":[') == "json"  # a key's look-alike in a string


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([JsonWriter, JsonlWriter]),
    st.text(max_size=300),
    st.integers(min_value=0, max_value=3),
    st.integers(min_value=60, max_value=10_000),
)
def test_property_any_prefix_past_the_first_keys_names_the_format(
    writer: type[TranscriptWriter], title: str, blank_lines: int, cut: int
) -> None:
    data = b"\n" * blank_lines + _write(writer(), [(_header("s", 2, title=title), _records(2))])
    assert sniff_format(data[: blank_lines + cut]) == writer.name


def test_reader_rules() -> None:
    parent, child, _ = _sample()
    good = _write(JsonWriter(), [parent, child])
    assert len(read_json(good)) == 2
    # a child whose parent is missing from the file
    with pytest.raises(TranscriptError, match=r"\$\.sessions\[0\]\.inherited: .* does not come earlier"):
        read_json(_write(JsonWriter(), [child]))
    short_parent = (msgspec.structs.replace(parent[0], message_count=5), parent[1][:5])
    with pytest.raises(TranscriptError, match="but its parent 'parent' has only 5"):
        read_json(_write(JsonWriter(), [short_parent, child]))
    bad_cp = msgspec.structs.replace(
        parent[0], checkpoints=[CheckpointRecord(id=1, position=7, created_at=format_time(T0))]
    )
    with pytest.raises(
        TranscriptError, match=r"checkpoints\[0\]\.position: 7 is outside the transcript \(0\.\.6\)"
    ):
        read_json(_write(JsonWriter(), [(bad_cp, parent[1])]))
    cps = [
        CheckpointRecord(id=2, position=1, created_at=format_time(T0)),
        CheckpointRecord(id=2, position=1, created_at=format_time(T0)),
    ]
    with pytest.raises(TranscriptError, match=r"checkpoints\[1\]\.id: checkpoint ids must increase"):
        read_json(_write(JsonWriter(), [(msgspec.structs.replace(parent[0], checkpoints=cps), parent[1])]))
    with pytest.raises(TranscriptError, match=r"\$\.sessions\[0\]\.id: a session id must not be empty"):
        read_json(_write(JsonWriter(), [(msgspec.structs.replace(parent[0], id=""), parent[1])]))
    with pytest.raises(TranscriptError, match="must not be negative"):
        read_json(_write(JsonWriter(), [(msgspec.structs.replace(parent[0], input_tokens=-1), parent[1])]))


def test_checkpoint_summary_errors_name_the_field() -> None:
    data = _write(JsonWriter(), [_sample()[0]]).replace(b'"text":"sum"', b'"text":7')
    with pytest.raises(
        TranscriptError, match=r"at `\$\.sessions\[0\]\.checkpoints\[0\]\.summary\[0\]\.content\[0\]\.text`"
    ):
        read_json(data)


def test_empty_and_foreign_jsonl() -> None:
    with pytest.raises(TranscriptError, match="line 1: no session line in the file"):
        list(iter_jsonl([]))
    with pytest.raises(TranscriptError, match="line 2: "):
        list(iter_jsonl([b"", b'{"kind":"chapter"}']))
    # version 2 (memory blocks) reads; the next one does not
    newer = _write(JsonlWriter(), [_sample()[2]]).replace(b'"version":1', b'"version":3')
    with pytest.raises(TranscriptError, match="line 1: export format version 3 is newer"):
        list(iter_jsonl(newer.splitlines()))


def test_markdown_for_people() -> None:
    md = _write(MarkdownWriter(), _sample()[:1]).decode()
    assert md.startswith("# Session parent\n\n- project: `/p`\n")
    assert "- compacted 1 time(s); the model sees a summary in place of messages 0-1" in md
    assert '- metadata: `{"k":[1,2.5]}`' in md
    assert "[image: image/png, 1,024 bytes]" in md
    assert "**tool error** for `call_2`" in md
    assert "> *reasoning (redacted)*" in md
    assert "[openai web_search_call]" in md
    assert "## 5 · user · 2023-11-14 22:13:20.128 UTC\n\n*(no content)*" in md
    fenced = render_blocks([ToolResultBlock(tool_use_id="t", content="```python\nx\n```")])
    assert "````\n```python\nx\n```\n````" in fenced
    folded = render_blocks([ToolResultBlock(tool_use_id="t", content="a" * 50)], fold=10)
    assert "aaaaaaaaaa\n… (40 more characters)" in folded
    assert render_blocks([TextBlock(text="just text")]) == "just text\n"


def test_writer_for() -> None:
    assert isinstance(writer_for("jsonl"), JsonlWriter)
    assert writer_for("markdown").self_contained
    with pytest.raises(ValueError, match="unknown transcript format 'xml'"):
        writer_for("xml")


# --- Markdown: stored text cannot break the document's structure -------------------------------


def _top_level_fence_state(md: str) -> list[tuple[int, str]]:
    """(line number, line) of every ``## `` heading outside a fence at column 0 (a simple oracle
    for documents whose fences all start at column 0)."""
    fence = ""
    out = []
    for i, line in enumerate(md.split("\n")):
        if fence:
            if line.rstrip() and set(line.rstrip()) == {fence[0]} and len(line.rstrip()) >= len(fence):
                fence = ""
        elif line.startswith(("```", "~~~")):
            fence = line[: len(line) - len(line.lstrip(line[0]))]
        elif line.startswith("## "):
            out.append((i, line))
    return out


def test_markdown_closes_a_fence_a_cut_off_reply_leaves_open() -> None:
    records = [
        MessageRecord(role="user", content=[TextBlock(text="write a script")], created_at=format_time(T0)),
        MessageRecord(
            role="assistant",
            content=[TextBlock(text="Sure:\n```python\nimport os\nfor f in os.listdir(")],
            created_at=format_time(T0),
        ),
        MessageRecord(role="user", content=[TextBlock(text="you got cut off")], created_at=format_time(T0)),
    ]
    md = _write(MarkdownWriter(), [(_header("s", 3), records)]).decode()
    assert "for f in os.listdir(\n```\n\n## 2 · user" in md
    assert [h for _, h in _top_level_fence_state(md)] == [
        "## 0 · user · 2023-11-14 22:13:20.123 UTC",
        "## 1 · assistant · 2023-11-14 22:13:20.123 UTC",
        "## 2 · user · 2023-11-14 22:13:20.123 UTC",
    ]


@pytest.mark.parametrize(
    ("text", "closing"),
    [
        ("```", "```"),
        ("~~~~ sh\nls\n~~~", "~~~~"),  # a shorter run does not close it
        ("````md\n```py\nx\n```", "````"),
        ("  ```\nx", "  ```"),
        ("1. Run:\n   ```bash\n   make", "   ```"),  # inside a list item: closed inside it
        ("- a\n\n  - b\n\n    ```\n    x", "    ```"),
        ("- ```\n  x", "  ```"),  # the item's first line opens it
        ("> quote\n\n```\n\n\nlater", "```"),
        ("text\n<!-- a comment", "-->"),
        ("<pre>\ncode", "</pre>"),
        ("<SCRIPT type=x>\nf()", "</script>"),
        ("<?php\necho 1;", "?>"),
        ("<![CDATA[\nraw", "]]>"),
        ("<!DOCTYPE html", ">"),
        ("\t```\nx", ""),  # a tab is four columns: indented code, not a fence
    ],
)
def test_markdown_closes_what_message_text_leaves_open(text: str, closing: str) -> None:
    rendered = render_blocks([TextBlock(text=text)])
    assert rendered == (f"{text}\n{closing}\n" if closing else f"{text}\n")


@pytest.mark.parametrize(
    "text",
    [
        "```py\nx = 1\n```",
        "~~~\n```\n~~~",
        "    ```\n    indented code",
        "- ```\n  x\nnot in the item any more",  # the item, and its fence, ended
        "* * *\n```\nx\n```",
        "<!-- closed -->\n<pre>x</pre>",
        "inline ``` is not a fence ```",
        "```\nx\n```   ",
    ],
)
def test_markdown_leaves_complete_text_as_it_is(text: str) -> None:
    assert render_blocks([TextBlock(text=text)]) == text + "\n"


@pytest.mark.parametrize(
    ("value", "span"),
    [
        ("c1", "`c1`"),
        ("a`b", "``a`b``"),
        ("`x", "`` `x ``"),
        ("x``", "``` x`` ```"),
        (" a ", "`  a  `"),
        ("   ", "`   `"),
        ("", "` `"),
        ("a\nb\r\nc", "`a\\nb\\r\\nc`"),
    ],
)
def test_markdown_names_and_ids_are_code_spans_nothing_inside_ends(value: str, span: str) -> None:
    rendered = render_blocks([ToolUseBlock(id=value, name=value, input={})])
    assert rendered.startswith(f"**tool call** {span} (id {span})\n")
    assert render_blocks([ToolResultBlock(tool_use_id=value, content="x")]).startswith(
        f"**tool result** for {span}\n"
    )


def test_markdown_header_fields_stay_on_their_line() -> None:
    header = _header(
        "s\n# forged",
        0,
        title="fix\n## 0 · user · forged\r\nend #",
        project="/p`q\n- forged",
        parent_id="p\nq",
        metadata={"note": "use `ls`\n# x"},
    )
    md = render_header(header)
    lines = md.split("\n")
    assert lines[0] == "# fix ## 0 · user · forged end \\#"
    assert "- id: `s\\n# forged`" in lines
    assert "- project: ``/p`q\\n- forged``" in lines
    assert "- forked from `p\\nq`" in lines
    assert '- metadata: ``{"note":"use `ls`\\n# x"}``' in lines  # JSON writes the break as \n
    assert [line for line in lines if line.startswith("#")] == [lines[0]]
    untitled = render_header(_header("s\n## 9 · user", 0))
    assert untitled.split("\n")[0] == "# Session s\\n## 9 · user"


def test_markdown_media_types_and_provider_names_stay_on_their_line() -> None:
    rendered = render_blocks(
        [
            ImageBlock(media_type="image/png\n## 9 · user · forged", data=b"12"),
            ProviderBlock(provider="open\nai", kind="web\n# x", data={}),
        ]
    )
    assert rendered == "[image: image/png\\n## 9 · user · forged, 2 bytes]\n\n[open\\nai web\\n# x]\n"


_markdownish = st.text(alphabet="`~ \t\n-*1.>#<!?[]pre", max_size=60)


@settings(max_examples=400, deadline=None)
@given(_markdownish)
def test_property_contained_text_is_the_text_plus_at_most_one_closing_line(text: str) -> None:
    from axio_context.transcript import _contained, _left_open

    once = _contained(text)
    assert _left_open(once) == ""
    assert once == text or (
        once.startswith(text.rstrip("\n") + "\n") and once.count("\n") == text.rstrip("\n").count("\n") + 1
    )
    assert _contained(once) == once
