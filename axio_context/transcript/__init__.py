"""Transcript formats: lossless ``json`` and ``jsonl`` exports, and Markdown for people.

Both lossless formats carry the same records (msgspec Structs below): per session its id,
project, title, metadata, created/updated times, lineage (``parent_id``, ``fork_position``),
token totals, compaction checkpoints, and every message with its created time. Times are
ISO-8601 UTC text with milliseconds. Estimated token counts are caches and are not exported; an
importer recomputes them.

- ``json``: one document ``{"format": "axio-context", "version": 1, "embeddings": false,
  "sessions": [...]}``, one session per line inside the array, its messages last.
- Version 2 adds memory blocks (:mod:`.block_records`): a ``"blocks"`` array after
  ``"sessions"``, or ``block`` lines after the sessions in ``jsonl``. Only an export that holds
  blocks says version 2; readers read both versions.
- ``jsonl``: one JSON object per line, tagged by ``kind``: a ``session`` line (the session's
  fields, plus ``format`` and ``version`` so files can be concatenated), then one ``message``
  line per message (``session``, ``position``, ``role``, ``content``, ``created_at``). A reader
  holds one line at a time, so it streams; ``message_count`` on the session line lets it
  notice a truncated file. Each session line ends with ``"embeddings": false``.

**Embeddings are not exported** (``"embeddings": false`` says so): they are derived from the
text by the model the database records, and larger than it; after an import,
``axio-context reindex`` rebuilds them.

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

The package: :mod:`.records` (what both formats carry), :mod:`.times`, :mod:`.writers`,
:mod:`.markdown` (rendering for people), :mod:`.readers` and :mod:`.sniffing` (which format a
file is).
"""

from __future__ import annotations

from .markdown import contained, left_open, message_range, render_blocks, render_header
from .readers import iter_jsonl, iter_transfer, read_json, read_transfer
from .records import (
    FORMAT_NAME,
    FORMAT_VERSION,
    FORMATS,
    CheckpointRecord,
    FormatName,
    MessageRecord,
    SessionHeader,
    SessionRecord,
)
from .sniffing import sniff_format
from .times import format_time, parse_time
from .writers import JsonlWriter, JsonWriter, MarkdownWriter, TranscriptWriter, writer_for

__all__ = [
    "FORMATS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "CheckpointRecord",
    "FormatName",
    "JsonWriter",
    "JsonlWriter",
    "MarkdownWriter",
    "MessageRecord",
    "SessionHeader",
    "SessionRecord",
    "TranscriptWriter",
    "format_time",
    "iter_jsonl",
    "iter_transfer",
    "message_range",
    "parse_time",
    "read_json",
    "read_transfer",
    "render_blocks",
    "render_header",
    "sniff_format",
    "writer_for",
]

# Names the tests of the Markdown renderer reach for under their former private spelling.
_contained = contained
_left_open = left_open
