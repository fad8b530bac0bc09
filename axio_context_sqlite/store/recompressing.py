"""Recompressing: the way off the Zstandard dictionaries earlier builds trained.

Rows and chunks those builds compressed with a dictionary (``flags >> DICT_SHIFT``) or with zlib
are rewritten as a new payload is stored (plain zstd from ``COMPRESS_MIN`` bytes, see
:func:`.packing.pack`), then the dictionaries no row or chunk names any more are deleted. Once
nothing needs them the ``zstd_dicts`` table is empty, and the file no longer holds the fragments
of old transcripts a dictionary is made of.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from . import indexing, packing, transactions


class RecompressReport(msgspec.Struct, frozen=True):
    """What :func:`recompress` rewrote: payloads, their bytes before and after, the dictionaries
    it deleted, and those still named by a damaged row it could not rewrite."""

    rows: int
    bytes_before: int
    bytes_after: int
    dictionaries_removed: int = 0
    dictionaries_left: int = 0


_RECOMPRESS_BATCH: Final = 1000
#: Payloads an earlier build encoded otherwise than a new one would be: with a dictionary or zlib.
_OLD_ENCODING: Final = f"(flags >> {packing.DICT_SHIFT} OR flags & {packing.FLAG_ZLIB})"


def recompress(c: Any, progress: Callable[[int, int], object] | None = None) -> RecompressReport:
    """Rewrite every row and chunk compressed with a dictionary or zlib as plain zstd, a batch
    per transaction, then delete the dictionaries nothing names and merge the keyword index.

    The contents do not change, only their encoding: readers see each row before or after, a
    crash leaves the finished batches done, and a second run (or one beside it) only finds what
    is left. A damaged row stays as it is (reading it names it) and keeps its dictionary.
    ``progress(done, total)`` is called after each batch, over the payloads to rewrite.
    """
    reader = packing.DictionaryReader(c)
    total = sum(
        int(c.execute(f"SELECT count(*) FROM {table} WHERE {_OLD_ENCODING}").fetchone()[0])
        for table in ("messages", "chunks")
    )
    done = rows = before = after = 0
    for table in ("messages", "chunks"):
        d, r, b, a = _recompress_table(c, reader, table, done, total, progress)
        done, rows, before, after = done + d, rows + r, before + b, after + a
    with transactions.write_tx(c):
        # In the write lock: no build writes a dictionary id any more, so none becomes used again.
        removed = c.execute(
            "DELETE FROM zstd_dicts WHERE id NOT IN"
            f" (SELECT flags >> {packing.DICT_SHIFT} FROM messages WHERE flags >> {packing.DICT_SHIFT}"
            f" UNION SELECT flags >> {packing.DICT_SHIFT} FROM chunks WHERE flags >> {packing.DICT_SHIFT})"
            " RETURNING id"
        ).fetchall()
        left = int(c.execute("SELECT count(*) FROM zstd_dicts").fetchone()[0])
        # Merging the keyword index into one segment drops the terms of deleted messages too.
        indexing.flush_pending(c)
        c.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
    return RecompressReport(rows, before, after, dictionaries_removed=len(removed), dictionaries_left=left)


def _recompress_table(
    c: Any,
    reader: packing.DictionaryReader,
    table: str,
    done: int,
    total: int,
    progress: Callable[[int, int], object] | None,
) -> tuple[int, int, int, int]:
    """:func:`recompress` over the payloads of ``messages`` (a sealed row's is in its chunk) or
    ``chunks``: (payloads read, rewritten, bytes before, bytes after)."""
    rows = before = after = read = 0
    last = -1
    while True:
        with transactions.write_tx(c):
            batch = c.execute(
                f"SELECT id, flags, payload FROM {table} WHERE id > ? AND {_OLD_ENCODING}"
                " ORDER BY id LIMIT ?",
                (last, _RECOMPRESS_BATCH),
            ).fetchall()
            if not batch:
                break
            updates = []
            for mid, flags, payload in batch:
                if table == "messages" and flags & packing.FLAG_SEALED:
                    continue  # its payload is in its chunk, rewritten there
                try:
                    new_flags, new_payload = packing.recompress(reader, flags, payload)
                except packing.ROW_ERRORS:
                    continue  # a damaged row stays as it is; reading it names it
                updates.append((new_flags, new_payload, mid))
                before += len(payload)
                after += len(new_payload)
            c.executemany(f"UPDATE {table} SET flags = ?, payload = ? WHERE id = ?", updates)
        rows += len(updates)
        read += len(batch)
        last = batch[-1][0]
        if progress is not None:
            progress(done + read, total)
    return read, rows, before, after
