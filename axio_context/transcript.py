"""Transcript formats: lossless ``json`` and ``jsonl`` exports, and Markdown for people.

Both lossless formats carry the same records (msgspec Structs below): per session its id,
project, title, metadata, created/updated times, lineage (``parent_id``, ``fork_position``),
token totals, compaction checkpoints, and every message with its created time. Times are
ISO-8601 UTC text with milliseconds. Estimated token counts are caches and are not exported; an
importer recomputes them.

- ``json``: one document ``{"format": "axio-context", "version": 1, "sessions": [...]}``, one
  session per line inside the array, its messages last.
- ``jsonl``: one JSON object per line, tagged by ``kind``: a ``session`` line (the session's
  fields, plus ``format`` and ``version`` so files can be concatenated), then one ``message``
  line per message (``session``, ``position``, ``role``, ``content``, ``created_at``). A reader
  holds one line at a time, so it streams; ``message_count`` on the session line lets it
  notice a truncated file.

**Forks.** A fork shares its parent's first messages. A session record says how many leading
messages it takes from its parent with ``inherited``; those are *not* repeated, and its
``messages`` hold positions ``inherited .. message_count - 1``. ``inherited`` is non-zero only
when the parent's record comes earlier in the same export (writers order parents first), and
the parent's first ``inherited`` messages are the child's. A fork exported without its parent
has ``inherited == 0`` and carries its whole transcript, with ``parent_id``/``fork_position``
kept as lineage for display. Checkpoints are listed per session (a fork's include those it
inherited), so every record alone says what its model view is.

Readers validate everything (syntax, types, blocks through :mod:`axio_context.codec`, times,
positions, counts, parent references) and raise :class:`TranscriptError` naming the line or
field; they do no I/O. Writers turn records into bytes chunk by chunk, so an exporter can stream.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Final, Literal, NamedTuple

import msgspec

from .blocks import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from .codec import (
    MAX_DEPTH,
    contents_have_nonfinite,
    decode_content_json,
    decode_json_exact,
    decode_message_json,
    encode_json,
    format_json,
)
from .codec.checks import check_content_depth
from .errors import DecodeError, TranscriptError
from .messages import SURROGATE, Message, Role

__all__ = [
    "FORMATS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "CheckpointRecord",
    "JsonWriter",
    "JsonlWriter",
    "MarkdownWriter",
    "MessageRecord",
    "SessionHeader",
    "SessionRecord",
    "TranscriptWriter",
    "format_time",
    "iter_jsonl",
    "message_range",
    "parse_time",
    "read_json",
    "render_blocks",
    "render_header",
    "sniff_format",
    "writer_for",
]

#: The ``format`` field of every lossless export.
FORMAT_NAME: Final = "axio-context"
#: Bumped when a reader of the previous version could not read the new files.
FORMAT_VERSION: Final = 1

FormatName = Literal["json", "jsonl", "markdown"]
FORMATS: Final[tuple[FormatName, ...]] = ("json", "jsonl", "markdown")

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
#: The times :func:`format_time` can write: UTC years 1 to 9999, in milliseconds.
_FIRST_MS: Final = (datetime.min.replace(tzinfo=UTC) - _EPOCH) // _MS
_LAST_MS: Final = (datetime.max.replace(tzinfo=UTC) - _EPOCH) // _MS
#: The largest integer a database column holds (SQLite's INTEGER is 64-bit).
_INT_MAX: Final = (1 << 63) - 1


def format_time(ms: int) -> str:
    """Milliseconds since the epoch as ISO-8601 UTC text, exactly (integer arithmetic)."""
    return (_EPOCH + ms * _MS).isoformat(timespec="milliseconds")


def parse_time(text: str) -> int:
    """Inverse of :func:`format_time`: any ISO-8601 time with a UTC offset, to milliseconds.

    A time whose UTC value falls outside years 1..9999 (``9999-12-31T23:59:59-01:00``) is
    refused: :func:`format_time` could not write it back.
    """
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise DecodeError(f"{text!r} is not an ISO-8601 time") from None
    if value.tzinfo is None:
        raise DecodeError(f"time {text!r} has no UTC offset (write e.g. {text}+00:00)")
    ms = (value - _EPOCH) // _MS
    if not _FIRST_MS <= ms <= _LAST_MS:
        raise DecodeError(f"time {text!r} is outside years 1..9999 once converted to UTC")
    return ms


# --- records -------------------------------------------------------------------------------------


class MessageRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One stored message and the time it was written."""

    role: Role
    content: list[ContentBlock] = msgspec.field(default_factory=list)
    created_at: str

    def message(self) -> Message:
        """The message itself (role and content)."""
        return Message(role=self.role, content=list(self.content))


class CheckpointRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A compaction checkpoint: ``summary`` stands in for positions ``[0, position)`` in the view."""

    id: int
    position: int
    summary: list[Message] = msgspec.field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    summarizer: str = ""
    created_at: str


class _HeaderFields(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    project: str | None = None
    title: str | None = None
    metadata: dict[str, Any] | None = None
    created_at: str
    updated_at: str
    parent_id: str | None = None
    fork_position: int | None = None
    #: Leading messages taken from ``parent_id``'s record earlier in the same export.
    inherited: int = 0
    #: Length of the whole transcript, inherited messages included.
    message_count: int
    input_tokens: int = 0
    output_tokens: int = 0


class SessionHeader(_HeaderFields, frozen=True, kw_only=True):
    """A session's fields: everything but its messages."""

    checkpoints: list[CheckpointRecord] = msgspec.field(default_factory=list)


class SessionRecord(SessionHeader, frozen=True, kw_only=True):
    """A session with its own messages (positions ``inherited .. message_count - 1``)."""

    messages: list[MessageRecord] = msgspec.field(default_factory=list)

    def header(self) -> SessionHeader:
        """The record without its messages."""
        fields = {f: getattr(self, f) for f in SessionHeader.__struct_fields__}
        return SessionHeader(**fields)


# --- writers -------------------------------------------------------------------------------------


class TranscriptWriter:
    """Turns sessions into bytes, chunk by chunk; an exporter calls these methods in order.

    ``begin``, then per session ``session`` / ``messages`` (any number of batches) /
    ``end_session``, then ``end``. A ``self_contained`` format gets every session's whole
    transcript (``inherited`` is 0); the lossless ones get only a fork's own messages.
    """

    name: ClassVar[str]
    self_contained: ClassVar[bool] = False

    def begin(self) -> bytes:
        """Bytes before the first session."""
        return b""

    def session(self, header: SessionHeader) -> bytes:
        """Bytes that open a session."""
        raise NotImplementedError

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        """A batch of the session's messages; ``first`` is the position of ``records[0]``."""
        raise NotImplementedError

    def end_session(self, header: SessionHeader) -> bytes:
        """Bytes that close a session."""
        return b""

    def end(self) -> bytes:
        """Bytes after the last session."""
        return b""


class JsonWriter(TranscriptWriter):
    """The ``json`` document, written incrementally (one session per line in the array)."""

    name = "json"

    def __init__(self) -> None:
        self._sessions = 0
        self._in_session = 0

    def begin(self) -> bytes:
        head = encode_json({"format": FORMAT_NAME, "version": FORMAT_VERSION})
        return head[:-1] + b',"sessions":['

    def session(self, header: SessionHeader) -> bytes:
        sep = b",\n" if self._sessions else b"\n"
        self._sessions += 1
        self._in_session = 0
        return sep + encode_json(header, exact=True)[:-1] + b',"messages":['

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        if not records:
            return b""
        exact = contents_have_nonfinite(r.content for r in records)
        body = b",".join(encode_json(r, exact=exact) for r in records)
        sep = b"," if self._in_session else b""
        self._in_session += len(records)
        return sep + body

    def end_session(self, header: SessionHeader) -> bytes:
        return b"]}"

    def end(self) -> bytes:
        return b"\n]}\n" if self._sessions else b"]}\n"


class _MessageLine(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="message"):
    session: str
    position: int
    role: Role
    content: list[ContentBlock]
    created_at: str


class JsonlWriter(TranscriptWriter):
    """The ``jsonl`` stream: a session line, then one line per message."""

    name = "jsonl"
    _PREFIX: Final = encode_json({"kind": "session", "format": FORMAT_NAME, "version": FORMAT_VERSION})[:-1]

    def session(self, header: SessionHeader) -> bytes:
        return self._PREFIX + b"," + encode_json(header, exact=True)[1:] + b"\n"

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        exact = contents_have_nonfinite(r.content for r in records)
        lines = [
            encode_json(
                _MessageLine(
                    session=header.id,
                    position=first + i,
                    role=r.role,
                    content=r.content,
                    created_at=r.created_at,
                ),
                exact=exact,
            )
            for i, r in enumerate(records)
        ]
        return b"".join(line + b"\n" for line in lines)


class MarkdownWriter(TranscriptWriter):
    """Markdown for people: a heading and facts per session, then every message in full."""

    name = "markdown"
    self_contained = True

    def __init__(self, fold: int | None = None) -> None:
        self._fold = fold
        self._sessions = 0

    def session(self, header: SessionHeader) -> bytes:
        sep = "\n---\n\n" if self._sessions else ""
        self._sessions += 1
        return (sep + render_header(header) + "\n").encode("utf-8", "backslashreplace")

    def messages(self, header: SessionHeader, first: int, records: Sequence[MessageRecord]) -> bytes:
        out = []
        for i, r in enumerate(records):
            out.append(f"## {first + i} · {r.role} · {_short_time(r.created_at)}\n\n")
            out.append(render_blocks(r.content, self._fold))
            out.append("\n")
        # Text with lone surrogates (undecodable bytes) shows them as \udcXX escapes.
        return "".join(out).encode("utf-8", "backslashreplace")


def writer_for(name: str) -> TranscriptWriter:
    """A fresh writer for a format name (``json``, ``jsonl`` or ``markdown``)."""
    if name == "json":
        return JsonWriter()
    if name == "jsonl":
        return JsonlWriter()
    if name == "markdown":
        return MarkdownWriter()
    raise ValueError(f"unknown transcript format {name!r}: expected one of {', '.join(FORMATS)}")


# --- Markdown rendering --------------------------------------------------------------------------


def _short_time(text: str) -> str:
    return text.replace("T", " ").replace(".000", "").removesuffix("+00:00") + (
        " UTC" if text.endswith("+00:00") else ""
    )


def render_header(header: SessionHeader) -> str:
    """A session's Markdown heading and facts (title, project, times, lineage, tokens).

    Stored text stays on its line and in its span: a title's line breaks become spaces, and ids,
    the project and metadata are code spans that no backtick or line break inside can end.
    """
    lines = [f"# {_heading(header.title)}" if header.title else f"# Session {_one_line(header.id)}", ""]
    if header.title:
        lines.append(f"- id: {_code(header.id)}")
    if header.project:
        lines.append(f"- project: {_code(header.project)}")
    lines.append(f"- created: {_short_time(header.created_at)}, updated: {_short_time(header.updated_at)}")
    if header.parent_id is not None:
        at = "" if header.fork_position is None else f" at message {header.fork_position}"
        lines.append(f"- forked from {_code(header.parent_id)}{at}")
    lines.append(
        f"- messages: {header.message_count:,}; tokens in/out: "
        f"{header.input_tokens:,} / {header.output_tokens:,}"
    )
    if header.checkpoints:
        latest = header.checkpoints[-1]
        lines.append(
            f"- compacted {len(header.checkpoints)} time(s); the model sees a summary "
            f"in place of {message_range(latest.position)}"
        )
    if header.metadata:
        lines.append(f"- metadata: {_code(encode_json(header.metadata).decode())}")
    lines.append("")
    return "\n".join(lines)


_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def _one_line(text: str) -> str:
    """``text`` with its line breaks as ``\\n``/``\\r`` escapes: Markdown reads blocks (a
    heading, a list item) line by line before it reads spans, so a break would start a new one."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def _heading(title: str) -> str:
    """A title as the text of a one-line ATX heading: line breaks as spaces, and a trailing run
    of ``#`` escaped so it is not taken for the heading's optional closing sequence."""
    one = _LINE_BREAK.sub(" ", title)
    return re.sub(r"(?<=\s)(#+)(\s*)$", r"\\\1\2", one)


def _code(text: str) -> str:
    """``text`` as a CommonMark code span: delimited by one backtick more than its longest run
    (so none inside closes it), padded with a space where it begins or ends with a backtick or
    with spaces (which the span would strip), on one line."""
    text = _one_line(text)
    if not text:
        return "` `"
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    stripped = text[0] == " " and text[-1] == " " and text.strip(" ") != ""
    pad = " " if text[0] == "`" or text[-1] == "`" or stripped else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def message_range(end: int) -> str:
    """``"message 0"`` or ``"messages 0-N"``: the first ``end`` positions, for people."""
    return "message 0" if end == 1 else f"messages 0-{end - 1}" if end > 1 else "no messages"


def _fold(text: str, fold: int | None) -> str:
    if fold is None or len(text) <= fold:
        return text
    return text[:fold] + f"\n… ({len(text) - fold:,} more characters)"


def _fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text.rstrip(chr(10))}\n{ticks}"


def _media(block: ImageBlock | AudioBlock | VideoBlock) -> str:
    kind = {ImageBlock: "image", AudioBlock: "audio", VideoBlock: "video"}[type(block)]
    return f"[{kind}: {_one_line(block.media_type)}, {len(block.data):,} bytes]"


_FENCE_OPEN: Final = re.compile(r"(`{3,})[^`]*|(~{3,}).*")
_LIST_MARKER: Final = re.compile(r"([-+*]|\d{1,9}[.)])( *)(.*)")
_THEMATIC_BREAK: Final = re.compile(r"([-*_])(?: *\1){2,} *")
_BLOCK_START: Final = re.compile(r"#{1,6}(?: |$)|>|<|`{3}|~{3}")
_RAW_TAGS: Final = ("script", "pre", "style", "textarea")
#: CommonMark HTML blocks of types 1-5 (start, end texts): they end only at an end text, however
#: many blank lines come first (types 6 and 7 end at a blank line, which separates blocks here).
_HTML_OPEN: Final = (
    (re.compile(r"<(script|pre|style|textarea)(?:[ \t>]|$)", re.I), tuple(f"</{t}>" for t in _RAW_TAGS)),
    (re.compile(r"<!--"), ("-->",)),
    (re.compile(r"<\?"), ("?>",)),
    (re.compile(r"<!\[CDATA\["), ("]]>",)),
    (re.compile(r"<![A-Za-z]"), (">",)),
)


class _OpenBlock(NamedTuple):
    depth: int  # list items it is inside
    indent: int  # its opening line's indentation
    fence: str  # the opening fence, or "" for an HTML block
    ends: tuple[str, ...]  # an HTML block's end texts (lowercase)
    closing: str  # the text that closes it


def _left_open(text: str) -> str:
    """The line that closes a fenced code block or an HTML block (types 1-5) ``text`` leaves
    open, "" when it leaves none.

    Message text is Markdown and is written as it is, but a reply cut off inside a fence (a
    model's ``max_tokens``) would otherwise swallow every later heading into its code block. The
    scan follows CommonMark's block rules as far as they matter here: line breaks, indentation
    and tab stops, list items (a block inside one ends where the item does), lazy paragraph
    lines. The closing line gets the opener's indentation, which closes it inside a list item
    and at the top level alike.
    """
    items: list[int] = []  # content columns of the open list items, innermost last
    block: _OpenBlock | None = None
    blank = True
    for raw in _LINE_BREAK.split(text):
        line = raw.expandtabs(4)
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if block is not None:
            if not body:
                continue
            if block.depth and indent < items[block.depth - 1]:
                block = None  # its list item ended, and the block with it
            else:
                if block.fence:
                    base = items[block.depth - 1] if block.depth else 0
                    tail = body.rstrip(" \t")
                    if (
                        indent - base <= 3
                        and len(tail) >= len(block.fence)
                        and tail == block.fence[0] * len(tail)
                    ):
                        block = None
                elif any(end in line.lower() for end in block.ends):
                    block = None
                continue
        if not body:
            blank = True
            continue
        starts_block = _BLOCK_START.match(body) is not None or _LIST_MARKER.fullmatch(body) is not None
        while items and indent < items[-1] and (blank or starts_block):
            items.pop()  # not a lazy paragraph line: the item ended
        blank = False
        if indent - (items[-1] if items else 0) > 3 or _THEMATIC_BREAK.fullmatch(body):
            continue  # indented code or a continuation, or a rule
        marker = _LIST_MARKER.fullmatch(body)
        if marker is not None and (marker.group(2) or not marker.group(3)):
            spaces = len(marker.group(2))
            items.append(
                indent + len(marker.group(1)) + (spaces if 1 <= spaces <= 4 and marker.group(3) else 1)
            )
            body, indent = marker.group(3), items[-1]  # the item's first line may open a block
        opened = _FENCE_OPEN.fullmatch(body)
        if opened is not None:
            fence = opened.group(1) or opened.group(2)
            block = _OpenBlock(len(items), indent, fence, (), fence)
            continue
        for start, ends in _HTML_OPEN:
            found = start.match(body)
            if found is not None:
                if not any(end in body[found.end() :].lower() for end in ends):
                    closing = f"</{found.group(1).lower()}>" if found.re.groups else ends[0]
                    block = _OpenBlock(len(items), indent, "", ends, closing)
                break
    return "" if block is None else " " * block.indent + block.closing


def _contained(text: str) -> str:
    """Message text as Markdown, with a fence or HTML block it leaves open closed after it."""
    closing = _left_open(text)
    return f"{text.rstrip(chr(10))}\n{closing}" if closing else text


def render_blocks(content: Iterable[ContentBlock], fold: int | None = None) -> str:
    """Content blocks as Markdown: text as is (a fence it leaves open closed after it), media as
    one line with type and size, tool calls and results in fences no backtick run inside can
    close (cut to ``fold`` characters when given), names and ids as code spans."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            if block.text:
                parts.append(_contained(block.text))
        elif isinstance(block, ImageBlock | AudioBlock | VideoBlock):
            parts.append(_media(block))
        elif isinstance(block, ToolUseBlock):
            body = format_json(block.input).decode()
            parts.append(f"**tool call** {_code(block.name)} (id {_code(block.id)})")
            parts.append(_fence(_fold(body, fold), "json"))
        elif isinstance(block, ToolResultBlock):
            label = "**tool error**" if block.is_error else "**tool result**"
            parts.append(f"{label} for {_code(block.tool_use_id)}")
            if isinstance(block.content, str):
                parts.append(_fence(_fold(block.content, fold)))
            else:
                for item in block.content:
                    if isinstance(item, TextBlock):
                        parts.append(_fence(_fold(item.text, fold)))
                    else:
                        parts.append(_media(item))
        elif isinstance(block, ReasoningBlock):
            if block.redacted or not block.text:
                parts.append("> *reasoning (redacted)*")
            else:
                quoted = "\n".join("> " + line for line in _fold(block.text, fold).splitlines())
                parts.append("> *reasoning*\n>\n" + quoted)
        elif isinstance(block, ProviderBlock):
            parts.append(f"[{_one_line(block.provider)} {_one_line(block.kind)}]")
        elif isinstance(block, UnknownBlock):
            parts.append(f"[block of unknown type {block.type!r}]")
    if not parts:
        return "*(no content)*\n"
    return "\n\n".join(parts) + "\n"


# --- readers -------------------------------------------------------------------------------------


class _MessageIn(msgspec.Struct, kw_only=True):
    role: Role
    content: msgspec.Raw = msgspec.Raw(b"[]")
    created_at: str


class _CheckpointIn(msgspec.Struct, kw_only=True):
    id: int
    position: int
    summary: list[msgspec.Raw] = msgspec.field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    summarizer: str = ""
    created_at: str


class _HeaderIn(_HeaderFields, frozen=True, kw_only=True):
    checkpoints: list[_CheckpointIn] = msgspec.field(default_factory=list)


class _SessionIn(_HeaderIn, frozen=True, kw_only=True):
    messages: list[_MessageIn] = msgspec.field(default_factory=list)


class _Envelope(msgspec.Struct):
    format: str
    version: int


class _DocumentIn(msgspec.Struct):
    format: str
    version: int
    sessions: list[_SessionIn]


class _SessionLineIn(_HeaderIn, frozen=True, kw_only=True, tag_field="kind", tag="session"):
    format: str
    version: int


class _MessageLineIn(msgspec.Struct, kw_only=True, tag_field="kind", tag="message"):
    session: str
    position: int
    role: Role
    content: msgspec.Raw = msgspec.Raw(b"[]")
    created_at: str


_json_doc: Final = msgspec.json.Decoder(_DocumentIn)
_json_env: Final = msgspec.json.Decoder(_Envelope)
_jsonl_line: Final = msgspec.json.Decoder(_SessionLineIn | _MessageLineIn)


def _at(message: str, where: str) -> str:
    """Point msgspec's ``$``-rooted paths at ``where``."""
    return message.replace("`$", f"`{where}") if "`$" in message else f"{message} - at `{where}`"


def _line_col(data: bytes, message: str, *, one_line: bool = False) -> str:
    """Rewrite msgspec's ``(byte N)`` into a line and column (a column alone for one line)."""
    m = re.search(r"\(byte (\d+)\)", message)
    if not m:
        return message
    offset = int(m.group(1))
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    where = f"(column {col})" if one_line else f"(line {line}, column {col})"
    return message[: m.start()] + where + message[m.end() :]


def _check_format(fmt: str, version: int) -> None:
    if fmt != FORMAT_NAME:
        raise TranscriptError(f"not an axio-context export: format is {fmt!r}, expected {FORMAT_NAME!r}")
    if version > FORMAT_VERSION:
        raise TranscriptError(
            f"export format version {version} is newer than the {FORMAT_VERSION} this axio-context reads"
        )
    if version < 1:
        raise TranscriptError(f"invalid export format version {version}")


def _time(text: str, where: str) -> None:
    try:
        parse_time(text)
    except DecodeError as exc:
        raise TranscriptError(f"{where}: {exc}") from None


def _message(raw: _MessageIn | _MessageLineIn, where: str) -> MessageRecord:
    try:
        content = decode_content_json(bytes(raw.content))
        check_content_depth(content, f"{where}.content")
    except DecodeError as exc:
        raise TranscriptError(_at(str(exc), f"{where}.content")) from None
    except RecursionError:
        raise TranscriptError(_too_deep(f"{where}.content")) from None
    _time(raw.created_at, f"{where}.created_at")
    return MessageRecord(role=raw.role, content=content, created_at=raw.created_at)


def _too_deep(where: str) -> str:
    return f"{where}: nests more than {MAX_DEPTH} levels deep (too deep to read)"


def _storable_text(h: _HeaderIn, where: str) -> None:
    """Refuse lone surrogates in a session's own text fields: messages and metadata keep them
    exactly (metadata is stored as escaped JSON), but the database's plain text columns (id,
    project, title, parent, a checkpoint's summarizer) cannot hold them."""
    fields = [(f"{where}.{name}", getattr(h, name)) for name in ("id", "project", "title", "parent_id")]
    fields += [(f"{where}.checkpoints[{i}].summarizer", cp.summarizer) for i, cp in enumerate(h.checkpoints)]
    for at, text in fields:
        if text is not None and SURROGATE.search(text):
            raise TranscriptError(f"{at}: holds a lone surrogate, which a session's fields cannot store")


def _count(value: int | None, where: str, low: int = 0) -> None:
    """Refuse a count or id below ``low`` (negative) or too large for a database column."""
    if value is None or low <= value <= _INT_MAX:
        return
    if value < 0 and low == 0:
        raise TranscriptError(f"{where}: must not be negative")
    raise TranscriptError(f"{where}: {value} is outside {low}..{_INT_MAX} (a 64-bit integer)")


class _Checker:
    """The rules a sequence of sessions must follow: unique ids, parents first, sane counts."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def header(self, h: _HeaderIn, where: str) -> SessionHeader:
        if not h.id:
            raise TranscriptError(f"{where}.id: a session id must not be empty")
        _storable_text(h, where)
        if h.id in self.counts:
            raise TranscriptError(f"{where}.id: session {h.id!r} appears twice")
        _time(h.created_at, f"{where}.created_at")
        _time(h.updated_at, f"{where}.updated_at")
        for name in ("message_count", "input_tokens", "output_tokens", "inherited", "fork_position"):
            _count(getattr(h, name), f"{where}.{name}")
        if h.inherited > h.message_count:
            raise TranscriptError(
                f"{where}.inherited: {h.inherited} is more than message_count {h.message_count}"
            )
        if h.inherited:
            parent = h.parent_id
            if parent is None or parent not in self.counts:
                raise TranscriptError(
                    f"{where}.inherited: session {h.id!r} inherits {h.inherited} messages from "
                    f"{parent!r}, which does not come earlier in this file"
                )
            if self.counts[parent] < h.inherited:
                raise TranscriptError(
                    f"{where}.inherited: session {h.id!r} inherits {h.inherited} messages but its "
                    f"parent {parent!r} has only {self.counts[parent]}"
                )
        checkpoints = []
        last = 0
        for i, cp in enumerate(h.checkpoints):
            at = f"{where}.checkpoints[{i}]"
            _count(cp.id, f"{at}.id")
            # estimates the store keeps as given (any 64-bit value), so its exports read back
            _count(cp.tokens_before, f"{at}.tokens_before", low=-_INT_MAX - 1)
            _count(cp.tokens_after, f"{at}.tokens_after", low=-_INT_MAX - 1)
            if cp.id <= last:
                raise TranscriptError(f"{at}.id: checkpoint ids must increase ({cp.id} after {last})")
            last = cp.id
            if not 0 <= cp.position <= h.message_count:
                raise TranscriptError(
                    f"{at}.position: {cp.position} is outside the transcript (0..{h.message_count})"
                )
            _time(cp.created_at, f"{at}.created_at")
            summary = []
            for j, raw in enumerate(cp.summary):
                try:
                    summary.append(decode_message_json(bytes(raw)))
                    check_content_depth(summary[-1].content, "$.content")
                except DecodeError as exc:
                    raise TranscriptError(_at(str(exc), f"{at}.summary[{j}]")) from None
                except RecursionError:
                    raise TranscriptError(_too_deep(f"{at}.summary[{j}]")) from None
            checkpoints.append(
                CheckpointRecord(
                    id=cp.id,
                    position=cp.position,
                    summary=summary,
                    tokens_before=cp.tokens_before,
                    tokens_after=cp.tokens_after,
                    summarizer=cp.summarizer,
                    created_at=cp.created_at,
                )
            )
        self.counts[h.id] = h.message_count
        fields = {f: getattr(h, f) for f in _HeaderFields.__struct_fields__}
        return SessionHeader(**fields, checkpoints=checkpoints)


def read_json(data: bytes) -> list[SessionRecord]:
    """Parse and validate a ``json`` export; raises :class:`TranscriptError` naming the field."""
    try:
        env = decode_json_exact(_json_env, data)
    except msgspec.DecodeError as exc:
        raise TranscriptError(_line_col(data, f"not a valid axio-context json export: {exc}")) from None
    except RecursionError:
        raise TranscriptError(_too_deep("$")) from None
    _check_format(env.format, env.version)
    try:
        doc = decode_json_exact(_json_doc, data)
    except msgspec.DecodeError as exc:
        raise TranscriptError(_line_col(data, str(exc))) from None
    except RecursionError:
        raise TranscriptError(_too_deep("$")) from None
    checker = _Checker()
    out = []
    for i, s in enumerate(doc.sessions):
        where = f"$.sessions[{i}]"
        header = checker.header(s, where)
        own = header.message_count - header.inherited
        if len(s.messages) != own:
            raise TranscriptError(
                f"{where}.messages: session {s.id!r} has {len(s.messages)} messages, expected {own} "
                f"(message_count {header.message_count} - inherited {header.inherited})"
            )
        messages = [_message(m, f"{where}.messages[{j}]") for j, m in enumerate(s.messages)]
        out.append(SessionRecord(**_fields(header), messages=messages))
    return out


def _fields(header: SessionHeader) -> dict[str, Any]:
    return {f: getattr(header, f) for f in SessionHeader.__struct_fields__}


def iter_jsonl(lines: Iterable[bytes]) -> Iterator[SessionRecord]:
    """Parse and validate a ``jsonl`` export, yielding each session once its last line is read.

    Raises :class:`TranscriptError` naming the line number and field. Blank lines are skipped.
    """
    checker = _Checker()
    header: SessionHeader | None = None
    header_line = 0
    messages: list[MessageRecord] = []

    def finish() -> SessionRecord:
        assert header is not None
        expected = header.message_count - header.inherited
        if len(messages) != expected:
            raise TranscriptError(
                f"line {header_line}: session {header.id!r} declares {header.message_count} messages "
                f"({header.inherited} inherited) but {len(messages)} of its {expected} message lines "
                "follow it (is the file cut short?)"
            )
        return SessionRecord(**_fields(header), messages=messages)

    number = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = decode_json_exact(_jsonl_line, line)
        except msgspec.DecodeError as exc:
            raise TranscriptError(f"line {number}: {_line_col(line, str(exc), one_line=True)}") from None
        except RecursionError:
            raise TranscriptError(f"line {number}: {_too_deep('$')}") from None
        if isinstance(item, _SessionLineIn):
            if header is not None:
                yield finish()
            try:
                _check_format(item.format, item.version)
                header = checker.header(item, "$")
            except TranscriptError as exc:
                raise TranscriptError(f"line {number}: {exc}") from None
            header_line = number
            messages = []
            continue
        if header is None:
            raise TranscriptError(f"line {number}: a message line before any session line")
        if item.session != header.id:
            raise TranscriptError(
                f"line {number}: $.session: message of session {item.session!r} inside session {header.id!r}"
            )
        expected_position = header.inherited + len(messages)
        if item.position != expected_position:
            raise TranscriptError(
                f"line {number}: $.position: expected position {expected_position}, found {item.position}"
            )
        try:
            messages.append(_message(item, "$"))
        except TranscriptError as exc:
            raise TranscriptError(f"line {number}: {exc}") from None
    if header is None:
        raise TranscriptError(f"line {number + 1}: no session line in the file")
    yield finish()


#: One JSON token at the start of what is left: a string (group 1), a structural character
#: (group 2), or a bare scalar; None when the text ends inside a token.
_TOKEN: Final = re.compile(
    rb'[ \t\r\n]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\],:])|[^ \t\r\n{}\[\],:"]+)', re.S
)
_BLANK: Final = b" \t\r\n"


def sniff_format(head: bytes) -> Literal["json", "jsonl"]:
    """Which lossless format a file is, from its first bytes (any prefix of the file).

    Blank leading lines are skipped; then the first object's top-level keys are read one token
    at a time, without needing the whole line: a ``kind`` key means ``jsonl`` (every line of it
    is tagged so), ``sessions`` means ``json``. The writers put those keys first, so a few dozen
    bytes decide however long the first line is (a session line carries every checkpoint
    summary, and can pass any fixed head size). Anything else, or a head cut before either key,
    is ``json``, whose reader then names what is wrong.
    """
    start = len(head) - len(head.lstrip(_BLANK))
    if head[start : start + 1] != b"{":
        return "json"
    depth, expect_key, at = 1, True, start + 1
    while depth:
        m = _TOKEN.match(head, at)
        if m is None:
            break  # the head ends here (perhaps inside a string)
        at = m.end()
        if m.group(1) is not None:
            if depth == 1 and expect_key:
                if m.group(1) == b'"kind"':
                    return "jsonl"
                if m.group(1) == b'"sessions"':
                    return "json"
                expect_key = False
        elif m.group(2) in (b"{", b"["):
            depth += 1
        elif m.group(2) in (b"}", b"]"):
            depth -= 1
        elif m.group(2) == b",":
            expect_key = depth == 1
    return "json"
