"""Import lines nested too deep (issue 18, item 4): a clear one-line TranscriptError naming the
line and field, never a RecursionError traceback; the same 100-level limit appends apply."""

from __future__ import annotations

import pytest

from axio_context.codec import MAX_DEPTH, encode_json
from axio_context.errors import TranscriptError
from axio_context.transcript import iter_jsonl, read_json

SESSION = (
    b'{"kind":"session","format":"axio-context","version":1,"id":"s","created_at":"2024-01-01T00:00:00+00:00",'
    b'"updated_at":"2024-01-01T00:00:00+00:00","message_count":1}'
)


def _message_line(tool_input: bytes) -> bytes:
    return (
        b'{"kind":"message","session":"s","position":0,"role":"assistant","created_at":'
        b'"2024-01-01T00:00:00+00:00","content":[{"type":"tool_use","id":"t","name":"f","input":'
        + tool_input
        + b"}]}"
    )


def _deep(levels: int) -> bytes:
    """A JSON object ``levels`` containers deep (itself level 1)."""
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 1_000, 50_000])
def test_a_deep_jsonl_line_is_one_line_error(levels: int) -> None:
    with pytest.raises(TranscriptError, match=r"^line 2: .*nests more than 100 levels deep") as info:
        list(iter_jsonl([SESSION, _message_line(_deep(levels))]))
    assert "\n" not in str(info.value)


def test_depth_at_the_limit_imports() -> None:
    [record] = list(iter_jsonl([SESSION, _message_line(_deep(MAX_DEPTH))]))
    assert len(record.messages) == 1


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 50_000])
def test_a_deep_json_document_is_one_line_error(levels: int) -> None:
    head = SESSION.replace(b'"kind":"session","format":"axio-context","version":1,', b"")
    doc = (
        b'{"format":"axio-context","version":1,"sessions":['
        + head[:-1]
        + b',"messages":[{"role":"user","created_at":"2024-01-01T00:00:00+00:00","content":'
        + b'[{"type":"hologram","x":'
        + _deep(levels)
        + b"}]}]}]}"
    )
    with pytest.raises(TranscriptError, match=r"nests more than 100 levels deep") as info:
        read_json(doc)
    assert "\n" not in str(info.value)
    assert encode_json({"ok": 1})  # the codec is still usable afterwards
