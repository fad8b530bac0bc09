"""Readers: parse and validate the lossless formats (raising :class:`TranscriptError` naming the
line or field). They do no I/O. Telling the formats apart from a file's first bytes is
:mod:`.sniffing`'s (:func:`sniff_format`, re-exported here)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, Final

import msgspec

from ..codec import (
    MAX_DEPTH,
    decode_content_json,
    decode_json_exact,
    decode_message_json,
)
from ..codec.checks import check_content_depth
from ..errors import DecodeError, TranscriptError
from ..lineage import cycle_through, describe
from ..memory_blocks.records import BlockRecordChecker
from ..memory_blocks.transfer_sql import BlockRow
from ..messages import SURROGATE, Role
from .block_records import BlockIn, BlockLineIn, Transfer, checked_block, checked_blocks
from .records import (
    FORMAT_NAME,
    FORMAT_VERSION,
    CheckpointRecord,
    HeaderFields,
    MessageRecord,
    SessionHeader,
    SessionRecord,
)
from .sniffing import BOM, sniff_format
from .times import parse_time

__all__ = ["iter_jsonl", "iter_transfer", "read_json", "read_transfer", "sniff_format"]

#: The largest integer a database column holds (SQLite's INTEGER is 64-bit).
_INT_MAX: Final = (1 << 63) - 1

# --- readers -------------------------------------------------------------------------------------


class _MessageIn(msgspec.Struct, kw_only=True):
    role: Role
    content: msgspec.Raw = msgspec.Raw(b"[]")
    created_at: str
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


class _CheckpointIn(msgspec.Struct, kw_only=True):
    id: int
    position: int
    summary: list[msgspec.Raw] = msgspec.field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0
    summarizer: str = ""
    created_at: str


class _HeaderIn(HeaderFields, frozen=True, kw_only=True):
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
    blocks: list[BlockIn] = msgspec.field(default_factory=list)


class _SessionLineIn(_HeaderIn, frozen=True, kw_only=True, tag_field="kind", tag="session"):
    format: str
    version: int


class _MessageLineIn(msgspec.Struct, kw_only=True, tag_field="kind", tag="message"):
    session: str
    position: int
    role: Role
    content: msgspec.Raw = msgspec.Raw(b"[]")
    created_at: str
    id: str | None = None
    timestamp: datetime | None = None
    metadata: dict[str, Any] | None = None


_json_doc: Final = msgspec.json.Decoder(_DocumentIn)
_json_env: Final = msgspec.json.Decoder(_Envelope)
_jsonl_line: Final = msgspec.json.Decoder(_SessionLineIn | _MessageLineIn | BlockLineIn)


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


def _not_utf8(data: bytes, exc: UnicodeDecodeError, *, one_line: bool = False) -> str:
    """Where ``data`` stops being UTF-8 text, as a message naming the line and column."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as first:
        exc = first  # where the data itself fails (``exc`` may be about a part decoded on its own)
    return _line_col(
        data, f"not UTF-8 text: byte 0x{exc.object[exc.start]:02x} (byte {exc.start})", one_line=one_line
    )


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
        bytes(raw.content).decode("utf-8")  # not UTF-8: the caller places it (line, column)
        raise TranscriptError(_at(str(exc), f"{where}.content")) from None
    except RecursionError:
        raise TranscriptError(_too_deep(f"{where}.content")) from None
    _time(raw.created_at, f"{where}.created_at")
    return MessageRecord(
        role=raw.role,
        content=content,
        created_at=raw.created_at,
        id=raw.id,
        timestamp=raw.timestamp,
        metadata=raw.metadata,
    )


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
        #: Each session's parent and owner ids: a session may not be its own ancestor.
        self.links: dict[str, tuple[str | None, str | None]] = {}

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
        self.links[h.id] = (h.parent_id, h.owner_id)
        cycle = cycle_through(self.links, h.id)
        if cycle is not None:
            first = cycle[1] if len(cycle) > 1 else h.id  # where the cycle leaves this session
            what = "parent_id" if h.parent_id == first else "owner_id"
            raise TranscriptError(
                f"{where}.{what}: session {h.id!r} would be its own ancestor ({describe(cycle)})"
            )
        fields = {f: getattr(h, f) for f in HeaderFields.__struct_fields__}
        return SessionHeader(**fields, checkpoints=checkpoints)


def read_json(data: bytes) -> list[SessionRecord]:
    """Parse and validate a ``json`` export's sessions; raises :class:`TranscriptError` naming
    the field (or the line and column where the bytes stop being UTF-8). A leading byte order
    mark is skipped."""
    return read_transfer(data).sessions


def read_transfer(data: bytes) -> Transfer:
    """:func:`read_json` with the export's memory blocks (version 2), each checked."""
    data = data.removeprefix(BOM)
    try:
        return _read_json(data)
    except UnicodeDecodeError as exc:
        raise TranscriptError(_not_utf8(data, exc)) from None


def _read_json(data: bytes) -> Transfer:
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
    return Transfer(out, checked_blocks(doc.blocks, "$.blocks"))


def _fields(header: SessionHeader) -> dict[str, Any]:
    return {f: getattr(header, f) for f in SessionHeader.__struct_fields__}


def iter_jsonl(lines: Iterable[bytes]) -> Iterator[SessionRecord]:
    """Parse and validate a ``jsonl`` export, yielding each session once its last line is read
    (its memory blocks are checked, not yielded: :func:`iter_transfer` yields them too)."""
    for item in iter_transfer(lines):
        if isinstance(item, SessionRecord):
            yield item


def iter_transfer(lines: Iterable[bytes]) -> Iterator[SessionRecord | BlockRow]:
    """Parse and validate a ``jsonl`` export, yielding each session once its last line is read,
    and each memory block (version 2) as its line is read.

    Raises :class:`TranscriptError` naming the line number and field. Blank lines are skipped,
    and a byte order mark at the start of the first line.
    """
    checker = _Checker()
    blocks = BlockRecordChecker()
    seen_blocks = False
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
        if number == 1:
            line = line.removeprefix(BOM)
        if not line.strip():
            continue
        try:
            item = decode_json_exact(_jsonl_line, line)
        except UnicodeDecodeError as exc:
            raise TranscriptError(f"line {number}: {_not_utf8(line, exc, one_line=True)}") from None
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
        if isinstance(item, BlockLineIn):
            if header is not None:
                yield finish()
                header = None
            try:
                _check_format(item.format, item.version)
                yield checked_block(blocks, item.block, "$.block")
            except TranscriptError as exc:
                raise TranscriptError(f"line {number}: {exc}") from None
            seen_blocks = True
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
        except UnicodeDecodeError as exc:
            raise TranscriptError(f"line {number}: {_not_utf8(line, exc, one_line=True)}") from None
    if header is None and not seen_blocks:
        raise TranscriptError(f"line {number + 1}: no session line in the file")
    if header is not None:
        yield finish()
