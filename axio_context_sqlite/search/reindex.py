"""Embedding the stored messages that have none (resumable batches), and bringing the sqlite-vec
binary codes in step with the embeddings."""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import Any

import msgspec

from axio_context.errors import VecUnavailableError
from axio_context.search.results import ReindexReport

from ..store import chunks, indexing, keys
from ..store.indexing import CODES_TABLE
from ..store.packing import ROW_ERRORS
from ..store.transactions import read_tx, write_tx
from ..store.vec import binary_code, is_int8, quantize, unit_vector
from .scope import ids_json
from .settings import check_model, read_settings

__all__ = [
    "Pending",
    "ReindexReport",
    "codes_add",
    "codes_diff",
    "codes_finish",
    "codes_plan",
    "codes_remove",
    "float_vectors",
    "quantize_vectors",
    "reindex_begin",
    "reindex_read",
    "reindex_write",
]


def reindex_begin(c: Any, model: str, dimension: int, rebuild: bool) -> tuple[int, bool]:
    """Check (or with ``rebuild`` switch) the database's embedder; returns the number of messages
    without an embedding and whether sqlite-vec runs here (so batches carry codes).

    A rebuild is one transaction: every embedding and code goes and the new model is recorded,
    so the database is never half one model and half another; the fill that follows resumes
    where it stopped if interrupted. A concurrent writer still using the old embedder is then
    refused with :class:`EmbeddingMismatchError` rather than mixing vectors.
    """
    vec = indexing.vec_available(c)
    if rebuild:
        with write_tx(c):
            if indexing.codes_table_exists(c):
                if not vec:
                    raise VecUnavailableError(
                        "this database has sqlite-vec codes, and sqlite-vec does not run on this "
                        "connection, so they cannot be dropped: rebuild where sqlite-vec loads"
                    )
                c.execute(f"DROP TABLE {CODES_TABLE}")
            c.execute("DELETE FROM message_vectors")
            c.execute(
                "DELETE FROM settings WHERE key IN ('embedding_model', 'embedding_dimension', 'codes_stale')"
            )
            indexing.ensure_embedding_settings(c, model, dimension)
    else:
        check_model(read_settings(c), model, dimension, "the embedder given")
    missing = int(
        c.execute(
            "SELECT COUNT(*) FROM messages m"
            " WHERE NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id)"
        ).fetchone()[0]
    )
    return missing, vec


class Pending(msgspec.Struct, frozen=True):
    """Messages read for embedding: ids, a fingerprint of each payload, and their (body, tool)."""

    ids: list[int]
    fingerprints: list[int]
    texts: list[tuple[str, str]]
    scanned: int
    last_id: int


def _fingerprint(data: bytes) -> int:
    """A message's content (its MessagePack, :meth:`.chunks.Reader.plain`), summed up: the same
    whether its row is sealed into a chunk or not, compressed or not."""
    return zlib.crc32(data) ^ (len(data) << 32)


def reindex_read(c: Any, after_id: int, limit: int) -> Pending:
    """The next ``limit`` messages (by id, after ``after_id``) that have no embedding."""
    ids: list[int] = []
    fingerprints: list[int] = []
    texts: list[tuple[str, str]] = []
    with read_tx(c):  # the rows and their chunks from one snapshot
        rows = c.execute(
            "SELECT m.id, m.role, m.flags, m.payload FROM messages m WHERE m.id > ?"
            " AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id) ORDER BY m.id LIMIT ?",
            (after_id, limit),
        ).fetchall()
        reader = chunks.Reader(c)
        for mid, role, flags, payload in rows:
            try:
                data = reader.plain(mid, flags, payload)
                text = indexing.text_of(role, data)
                fingerprint = _fingerprint(data)
            except ROW_ERRORS:
                continue  # unreadable: reading it reports CorruptDataError; nothing to embed
            ids.append(mid)
            fingerprints.append(fingerprint)
            texts.append(text)
    return Pending(ids, fingerprints, texts, len(rows), rows[-1][0] if rows else after_id)


def reindex_write(
    c: Any, model: str, dimension: int, pending: Pending, vectors: Sequence[tuple[int, bytes, bytes | None]]
) -> int:
    """Store the embeddings of ``pending`` (``(index, vector, code)``) in one transaction, skipping
    messages that changed, went, or were embedded by someone else since they were read."""
    if not vectors:
        return 0
    with write_tx(c):
        wanted = {pending.ids[i]: (pending.fingerprints[i], vec, code) for i, vec, code in vectors}
        current = c.execute(
            "SELECT m.id, m.role, m.created_at, m.flags, m.payload, s.sid, s.project FROM messages m"
            " JOIN sessions s ON s.sid = (m.id >> 32)"
            " WHERE m.id IN (SELECT value FROM json_each(?))"
            " AND NOT EXISTS (SELECT 1 FROM message_vectors v WHERE v.id = m.id)",
            (ids_json(wanted),),
        ).fetchall()
        rows: list[indexing.EmbeddingRow] = []
        reader = chunks.Reader(c)
        for mid, role, created, flags, payload, sid, project in current:
            fingerprint, vec, code = wanted[mid]
            try:
                now = _fingerprint(reader.plain(mid, flags, payload))
            except ROW_ERRORS:
                continue
            if now == fingerprint:
                rows.append((mid, vec, code, sid, project, role, created))
        indexing.store_embeddings(c, model, dimension, rows)
    return len(rows)


def codes_plan(c: Any) -> tuple[bool, str | None]:
    """Whether the codes need reconciling here, and if so the token that marks this run.

    The token replaces the stale flag; a connection without sqlite-vec that writes meanwhile
    sets the flag back to ``1``, and :func:`codes_finish` then leaves it for the next run.
    """
    if not indexing.vec_available(c):
        return False, None
    with write_tx(c):
        settings = read_settings(c)
        dim = settings.get("embedding_dimension")
        if dim is None:
            return False, None
        table = indexing.codes_table_exists(c)
        if table and indexing.codes_outdated(c):
            # the older layout (with a project column no search reads): built again, smaller
            c.execute(f"DROP TABLE {CODES_TABLE}")
            table = False
            c.execute(
                "INSERT INTO settings (key, value) VALUES ('codes_stale', '1')"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            )
            settings["codes_stale"] = "1"
        any_vector = c.execute("SELECT 1 FROM message_vectors LIMIT 1").fetchone() is not None
        if "codes_stale" not in settings and (table or not any_vector):
            return False, None
        if not table:
            indexing.ensure_codes_table(c, int(dim))
        token = f"reconciling-{keys.now_ms()}"
        c.execute(
            "INSERT INTO settings (key, value) VALUES ('codes_stale', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (token,),
        )
    return True, token


def codes_diff(c: Any) -> tuple[list[int], list[int]]:
    """Code rowids without an embedding, and embedding ids without a code."""
    with read_tx(c):
        coded = {r[0] for r in c.execute(f"SELECT rowid FROM {CODES_TABLE}")}
        vectors = [r[0] for r in c.execute("SELECT id FROM message_vectors")]
    have = set(vectors)
    return sorted(coded - have), [v for v in vectors if v not in coded]


def codes_remove(c: Any, ids: Sequence[int]) -> int:
    """Delete the codes of ``ids`` that still have no embedding."""
    removed = 0
    with write_tx(c):
        for mid in ids:
            if c.execute("SELECT 1 FROM message_vectors WHERE id = ?", (mid,)).fetchone() is None:
                c.execute(f"DELETE FROM {CODES_TABLE} WHERE rowid = ?", (mid,))
                removed += 1
    return removed


def codes_add(c: Any, ids: Sequence[int]) -> int:
    """Compute and store codes for the embeddings of ``ids`` that still lack one."""
    with write_tx(c):
        have = {
            r[0]
            for r in c.execute(
                f"SELECT rowid FROM {CODES_TABLE} WHERE rowid IN (SELECT value FROM json_each(?))",
                (ids_json(ids),),
            )
        }
        rows = c.execute(
            "SELECT v.id, v.embedding, s.sid, s.project, m.role, m.created_at FROM message_vectors v"
            " JOIN messages m ON m.id = v.id JOIN sessions s ON s.sid = (v.id >> 32)"
            " WHERE v.id IN (SELECT value FROM json_each(?))",
            (ids_json(i for i in ids if i not in have),),
        ).fetchall()
        dim = int(read_settings(c).get("embedding_dimension", "0"))
        indexing.insert_codes(
            c,
            [
                (mid, sid, project, role, ts, binary_code(unit_vector(bytes(vec), dim)))
                for mid, vec, sid, project, role, ts in rows
            ],
        )
    return len(rows)


def codes_finish(c: Any, token: str) -> bool:
    """Clear the stale flag if no one set it again since :func:`codes_plan`; True if cleared."""
    with write_tx(c):
        r = c.execute("SELECT value FROM settings WHERE key = 'codes_stale'").fetchone()
        if r is not None and r[0] == token:
            c.execute("DELETE FROM settings WHERE key = 'codes_stale'")
            return True
    return False


def float_vectors(c: Any) -> int:
    """How many embeddings are still float32 (written before vectors were stored as int8)."""
    with read_tx(c):
        dim = read_settings(c).get("embedding_dimension")
        if dim is None:
            return 0
        return int(
            c.execute(
                "SELECT COUNT(*) FROM message_vectors WHERE length(embedding) = ?", (4 * int(dim),)
            ).fetchone()[0]
        )


def quantize_vectors(c: Any, limit: int) -> int:
    """Convert up to ``limit`` float32 embeddings to int8 (:func:`.vec.quantize`) in one
    transaction; returns how many (0: none is left). Their binary codes stay as they are: the
    code of a vector and of its int8 form differ in a handful of bits at most. The file keeps
    its size until ``vacuum`` gives the freed pages back."""
    with write_tx(c):
        dim = read_settings(c).get("embedding_dimension")
        if dim is None:
            return 0
        d = int(dim)
        rows = c.execute(
            "SELECT id, embedding FROM message_vectors WHERE length(embedding) = ? LIMIT ?", (4 * d, limit)
        ).fetchall()
        out = []
        for mid, blob in rows:
            values = unit_vector(bytes(blob), d)
            if any(values) and all(map(math.isfinite, values)):
                out.append((quantize(values), mid))
            else:  # NaN or zero: never searchable; dropped so that reindex embeds the message again
                c.execute("DELETE FROM message_vectors WHERE id = ?", (mid,))
                if indexing.codes_table_exists(c) and indexing.vec_available(c):
                    c.execute(f"DELETE FROM {CODES_TABLE} WHERE rowid = ?", (mid,))  # one code a vector
        c.executemany("UPDATE message_vectors SET embedding = ? WHERE id = ?", out)
        assert all(is_int8(b, d) for b, _ in out)
    return len(rows)
