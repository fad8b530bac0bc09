"""Recompressing every payload with a dictionary trained on the whole database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import msgspec

from . import indexing, packing, transactions


class RecompressReport(msgspec.Struct, frozen=True):
    """What :func:`recompress` rewrote: payloads, their bytes before and after, the dictionary."""

    dictionary: int | None  # None: too few compressible payloads to train one
    rows: int
    bytes_before: int
    bytes_after: int
    dictionaries_removed: int = 0  # older dictionaries no row used any more


_RECOMPRESS_BATCH: Final = 1000


def recompress(c: Any, progress: Callable[[int, int], object] | None = None) -> RecompressReport:
    """Train a new compression dictionary on a random sample of the whole database, then rewrite
    every payload that is not compressed with it, a batch per transaction.

    For a database upgraded from before dictionaries, or whose content drifted from what its
    dictionary was trained on, or to forget deleted sessions: a dictionary holds fragments of
    what it was trained on, so the older ones no row uses any more are deleted, and the keyword
    index is merged (dropping deleted messages' terms). The contents do not change, only their
    encoding; readers see each row before or after, and a crash leaves finished batches done.

    Runs may overlap (two ``vacuum --recompress``, in one process or two), and writers on other
    connections go on compressing with whatever dictionary they hold; no lock is held between
    batches. What keeps every row's dictionary in the database is two checks, each made under the
    write lock of the transaction that acts on it:

    - each batch first adopts the database's newest dictionary (:func:`_newest_dictionary`):
      another run may have trained a newer one and deleted this run's, and a batch must never
      write with a dictionary that is gone. Overlapping runs so end on the same, newest one;
    - the final delete removes only dictionaries older than the one this run ended with that no
      row or chunk uses, in one statement. A newer run's dictionary is never deleted, though it
      may not have written a row yet, so the newest is never deleted and a new one's id
      (``max + 1``) is never one a connection may still hold in memory for a deleted one.

    Writers check their own dictionary in their write transactions the same way
    (:func:`..store.packing.writing`, the append trigger). Two overlapping runs both succeed and end
    on the same dictionary, each skipping the rows already compressed with it.
    """
    dicts = packing.bound()
    if dicts.train(replace=True, spread=True) is None:
        return RecompressReport(dictionary=None, rows=0, bytes_before=0, bytes_after=0)
    total = int(
        c.execute("SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM chunks)").fetchone()[0]
    )
    done = rows = before = after = 0
    new_id = 0
    for table in ("messages", "chunks"):
        new_id, d, r, b, a = _recompress_table(c, dicts, table, done, total, progress)
        done, rows, before, after = done + d, rows + r, before + b, after + a
    with transactions.write_tx(c):
        # Another connection may still be compressing with an older dictionary: its append finds
        # the dictionary gone (the append trigger checks) and compresses again with the new one.
        removed = c.execute(
            "DELETE FROM zstd_dicts WHERE id < ? AND id NOT IN"
            " (SELECT DISTINCT flags >> ? FROM messages WHERE flags >> ?"
            " UNION SELECT DISTINCT flags >> ? FROM chunks WHERE flags >> ?) RETURNING id",
            (new_id, *(packing.DICT_SHIFT,) * 4),
        ).fetchall()
        # Merging the keyword index into one segment drops the terms of deleted messages too.
        indexing.flush_pending(c)
        c.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
    return RecompressReport(new_id, rows, before, after, dictionaries_removed=len(removed))


def _newest_dictionary(c: Any, dicts: packing.Dictionaries) -> int:
    """Inside a write transaction: make the database's newest dictionary ``dicts``' current one
    (another recompress may have trained it, and deleted the one this run trained) and return its
    id. The write lock keeps it in the database until the transaction ends."""
    newest = c.execute("SELECT max(id) FROM zstd_dicts").fetchone()[0]
    if dicts.current is None or dicts.current[0] != newest:
        dicts.load()  # the one replaced stays in memory, to read the rows that still use it
    current = dicts.current
    return 0 if current is None else current[0]


def _recompress_table(
    c: Any,
    dicts: packing.Dictionaries,
    table: str,
    done: int,
    total: int,
    progress: Callable[[int, int], object] | None,
) -> tuple[int, int, int, int, int]:
    """:func:`recompress` over the payloads of ``messages`` (a sealed row's is in its chunk) or
    ``chunks``: (the dictionary the last batch used, rows read, rows changed, bytes before, bytes
    after)."""
    rows = before = after = 0
    read = 0
    last = -1
    while True:
        with transactions.write_tx(c):
            new_id = _newest_dictionary(c, dicts)
            batch = c.execute(
                f"SELECT id, flags, payload FROM {table} WHERE id > ? ORDER BY id LIMIT ?",
                (last, _RECOMPRESS_BATCH),
            ).fetchall()
            if not batch:
                break
            updates = []
            for mid, flags, payload in batch:
                sealed = table == "messages" and flags & packing.FLAG_SEALED
                if sealed or flags >> packing.DICT_SHIFT == new_id:
                    continue
                try:
                    new_flags, new_payload = packing.recompress(dicts, flags, payload)
                except packing.ROW_ERRORS:
                    continue  # a damaged row stays as it is; reading it names it
                if new_payload != payload:
                    updates.append((new_flags, new_payload, mid))
                    before += len(payload)
                    after += len(new_payload)
            c.executemany(f"UPDATE {table} SET flags = ?, payload = ? WHERE id = ?", updates)
        rows += len(updates)
        read += len(batch)
        last = batch[-1][0]
        if progress is not None:
            progress(done + read, total)
    return new_id, read, rows, before, after
