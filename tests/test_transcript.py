"""Transcript formats: writers and validating readers, without any database."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axio_context import TextBlock, ToolResultBlock, UnknownBlock
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
    newer = _write(JsonlWriter(), [_sample()[2]]).replace(b'"version":1', b'"version":2')
    with pytest.raises(TranscriptError, match="line 1: export format version 2 is newer"):
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
