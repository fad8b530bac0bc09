"""Databases as builds before the trained dictionaries were removed left them.

Those builds trained a Zstandard dictionary once a database held 64 compressed payloads, stored
it in ``zstd_dicts`` and compressed every later payload (rows' and sealed chunks') of 64 bytes
or more with it, recording its id in the flags (``flags >> DICT_SHIFT``). :func:`use_dictionaries`
rewrites an existing file's payloads that way, with plain SQL and zstandard, so tests can check
that such rows still read and that ``vacuum --recompress`` takes a database off them; the
committed fixtures ``tests/fixtures/schema_v4..v14`` were written by those builds themselves.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import zstandard

from axio_context_sqlite.store.packing import (
    DICT_SHIFT,
    FLAG_BLOBS,
    FLAG_SEALED,
    FLAG_ZLIB,
    FLAG_ZSTD,
    decode_chunk,
    inflate,
)
from tests.support.sqlite_checks import raw_connect

#: What the old builds did: the smallest payload compressed with a dictionary, its size, zstd level.
_DICT_MIN, _DICT_SIZE, _LEVEL = 64, 16 * 1024, 3


def _train(samples: list[bytes], dict_id: int) -> zstandard.ZstdCompressionDict:
    # the old builds' trainer: fastcover with fixed parameters
    return zstandard.train_dictionary(
        _DICT_SIZE, samples, dict_id=dict_id, k=256, d=8, f=16, accel=5, steps=1
    )


def use_dictionaries(path: Path, *, dictionaries: int = 1, zlib_rows: int = 0) -> int:
    """Rewrite the payloads of the file at ``path`` (closed, or open only through axio
    connections that will be reopened) as the old builds stored them: ``dictionaries``
    dictionaries trained on its payloads, the payloads of 64 bytes or more compressed with one
    of them in turn, and the first ``zlib_rows`` compressible message rows with zlib instead.
    Returns the number of payloads that now name a dictionary."""
    db = raw_connect(path)
    try:
        with db:
            rows = [
                ("messages", mid, flags, inflate(flags, payload))
                for mid, flags, payload in db.execute(
                    "SELECT id, flags, payload FROM messages WHERE NOT flags & ? ORDER BY id", (FLAG_SEALED,)
                )
            ]
            rows += [
                ("chunks", cid, flags, inflate(flags, payload))
                for cid, flags, payload in db.execute("SELECT id, flags, payload FROM chunks ORDER BY id")
            ]
            # the old builds trained on message payloads, a sealed one's taken from its chunk
            payloads = [raw for table, *_, raw in rows if table == "messages"]
            payloads += [
                bytes(e[2]) for table, _, _, raw in rows if table == "chunks" for e in decode_chunk(0, raw)
            ]
            samples = [raw for raw in payloads if len(raw) >= 512][: 256 * dictionaries]
            assert len(samples) >= 48 * dictionaries, f"too few payloads to train on ({len(samples)})"
            first = int(db.execute("SELECT coalesce(max(id), 0) + 1 FROM zstd_dicts").fetchone()[0])
            compressors = []
            for j, dict_id in enumerate(range(first, first + dictionaries)):
                trained = _train(samples[j::dictionaries], dict_id)  # each its own: they differ
                db.execute(
                    "INSERT INTO zstd_dicts (id, data, samples, created_at) VALUES (?, ?, ?, 0)",
                    (dict_id, trained.as_bytes(), len(samples)),
                )
                c = zstandard.ZstdCompressor(
                    level=_LEVEL, dict_data=trained, write_checksum=False, write_dict_id=False
                )
                compressors.append((dict_id, c))
            named = zlibbed = 0
            for table, rid, flags, raw in rows:
                if len(raw) < _DICT_MIN:
                    continue
                keep = flags & FLAG_BLOBS
                if table == "messages" and zlibbed < zlib_rows and len(raw) >= 512:
                    new_flags, payload = keep | FLAG_ZLIB, zlib.compress(raw)
                    zlibbed += 1
                else:
                    dict_id, c = compressors[named % len(compressors)]
                    new_flags, payload = keep | FLAG_ZSTD | dict_id << DICT_SHIFT, c.compress(raw)
                    named += 1
                db.execute(
                    f"UPDATE {table} SET flags = ?, payload = ? WHERE id = ?", (new_flags, payload, rid)
                )
        return named
    finally:
        db.close()


def dictionary_rows(path: Path) -> int:
    """Rows and chunks of the file whose payload names a dictionary."""
    db = raw_connect(path)
    try:
        return int(
            db.execute(
                f"SELECT (SELECT count(*) FROM messages WHERE flags >> {DICT_SHIFT})"
                f" + (SELECT count(*) FROM chunks WHERE flags >> {DICT_SHIFT})"
            ).fetchone()[0]
        )
    finally:
        db.close()
