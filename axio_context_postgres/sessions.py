"""Whole-database session calls on PostgreSQL: finding, showing, exporting and importing sessions.

The export writes exactly what the SQLite backend's does for the same sessions (the same
headers, ``inherited`` counting a fork's prefix shared with its parent's rows, the same
writers), so an export of a copied database is byte-identical to the source's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any, Final

from axio_context.catalog.expiry_sql import live_session
from axio_context.errors import AmbiguousSessionError, SessionNotFoundError, TranscriptError
from axio_context.expiry import now_ms
from axio_context.lineage import shared_rows
from axio_context.tokens import estimate_message_tokens, estimate_tokens
from axio_context.transcript import (
    CheckpointRecord,
    MessageRecord,
    SessionHeader,
    SessionRecord,
    format_time,
    parse_time,
)
from axio_context.transcript.exporting import ExportSource
from axio_context.transcript.hidden import shared_visible
from axio_context.transcript.reports import DamagedRow

from . import lineage, writes
from .sealed import sealed

FULL: Final = (
    "sid, seg, next_position, id, project, title, metadata, created_at, updated_at, parent_id,"
    " fork_position, input_tokens, output_tokens, owner_id, agent_name,"
    " (SELECT a.agent_id FROM agent_sessions a WHERE a.sid = sessions.sid) AS agent_id,"
    " (SELECT a.thread_id FROM agent_sessions a WHERE a.sid = sessions.sid) AS thread_id, " + lineage.HIDES
)

#: Expired sessions are never found here (bind now as $2, or $1): the core's one condition.
_LIVE2: Final = live_session(param="$2")
_LIVE1: Final = live_session(param="$1")


async def full_row(conn: Any, session_id: str) -> Any:
    r = await conn.fetchrow(f"SELECT {FULL} FROM sessions WHERE id = $1 AND {_LIVE2}", session_id, now_ms())
    if r is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return r


async def resolve(conn: Any, prefix: str) -> str:
    """The id equal to ``prefix``, or the only one starting with it."""
    now = now_ms()
    if await conn.fetchval(f"SELECT 1 FROM sessions WHERE id = $1 AND {_LIVE2}", prefix, now):
        return prefix
    rows = await conn.fetch(
        f"SELECT id FROM sessions WHERE starts_with(id, $1) AND {_LIVE2}"
        " ORDER BY created_at DESC, sid DESC LIMIT 6",
        prefix,
        now,
    )
    if not rows:
        raise SessionNotFoundError(f"no session {prefix!r}")
    if len(rows) > 1:
        shown = ", ".join(r[0] for r in rows[:5])
        raise AmbiguousSessionError(
            f"{prefix!r} matches several sessions ({shown}); type more of it", [r[0] for r in rows]
        )
    return str(rows[0][0])


async def checkpoints(conn: Any, s: Any) -> list[CheckpointRecord]:
    rows = await conn.fetch(
        "SELECT seq, position, summary, tokens_before, tokens_after, summarizer, created_at"
        " FROM checkpoints WHERE sid = $1 ORDER BY seq",
        s["sid"],
    )
    return [
        CheckpointRecord(
            id=r[0],
            position=r[1],
            summary=lineage.decode_summary(s["id"], r[2]),
            tokens_before=r[3],
            tokens_after=r[4],
            summarizer=r[5],
            created_at=format_time(r[6]),
        )
        for r in rows
    ]


async def header(conn: Any, s: Any, inherited: int) -> SessionHeader:
    from axio_context.session_metadata import decode_metadata

    meta = s["metadata"]
    return SessionHeader(
        id=s["id"],
        project=s["project"],
        title=s["title"],
        metadata=None
        if meta is None
        else decode_metadata(s["id"], bytes(meta).decode("utf-8", "surrogatepass")),
        created_at=format_time(s["created_at"]),
        updated_at=format_time(s["updated_at"]),
        parent_id=s["parent_id"],
        fork_position=s["fork_position"],
        inherited=inherited,
        message_count=s["next_position"],
        input_tokens=s["input_tokens"],
        output_tokens=s["output_tokens"],
        checkpoints=await checkpoints(conn, s),
        owner_id=s["owner_id"],
        agent_name=s["agent_name"],
        agent_id=s["agent_id"],
        thread_id=s["thread_id"],
    )


async def hidden(conn: Any, s: Any, end: int | None = None) -> list[int]:
    """The positions below ``end`` (default: all) that ``clear_run`` hid from session ``s``."""
    if not s["hides"]:
        return []
    n = s["next_position"] if end is None else min(end, s["next_position"])
    return await lineage.hidden_positions(conn, s["seg"], n, s["sid"])


async def records(conn: Any, s: Any, start: int, end: int) -> list[MessageRecord]:
    """Positions ``[start, end)`` with their created times (those ``clear_run`` hid left out)."""
    hider = s["sid"] if s["hides"] else None
    rows = await lineage.read_rows(conn, s["seg"], s["next_position"], start, end, hidden_by=hider)
    messages = lineage.decode(s["id"], rows)
    return [MessageRecord.of(m, format_time(r.created_at)) for m, r in zip(messages, rows, strict=True)]


async def inherited(conn: Any, s: Any, exported: set[int] | None) -> int:
    """The prefix ``s`` shares with its parent's rows, when the parent was exported before it."""
    if s["parent_id"] is None:
        return 0
    parent = await conn.fetchrow(f"SELECT {FULL} FROM sessions WHERE id = $1", s["parent_id"])
    if (
        parent is None
        or parent["sid"] >= s["sid"]
        or (exported is not None and parent["sid"] not in exported)
    ):
        return 0
    base = await conn.fetchval("SELECT base_len FROM segments WHERE seg = $1", s["seg"])
    mine = await lineage.chain(conn, s["seg"], min(base or 0, s["next_position"]))
    theirs = await lineage.chain(conn, parent["seg"], min(base or 0, parent["next_position"]))
    shared = shared_rows(mine, theirs)
    # the parent's record lacks what it hides: the fork takes no more than both show alike
    return shared_visible(shared, await hidden(conn, s, shared), await hidden(conn, parent, shared))


async def _selected(conn: Any, session_ids: Sequence[str] | None) -> tuple[int, list[Any]]:
    if session_ids is None:
        rows = list(await conn.fetch(f"SELECT {FULL} FROM sessions WHERE {_LIVE1} ORDER BY sid", now_ms()))
    else:
        by_sid = {}
        for i in session_ids:
            r = await full_row(conn, i)
            by_sid[r["sid"]] = r
        rows = [by_sid[k] for k in sorted(by_sid)]
    return sum(s["next_position"] for s in rows), rows


async def _records(
    conn: Any, s: Any, lo: int, hi: int, skipped: list[DamagedRow] | None
) -> list[MessageRecord]:
    return await records(conn, s, lo, hi)


async def _hidden(conn: Any, s: Any) -> list[int]:
    return await hidden(conn, s)


#: An export's reads on PostgreSQL, each awaited in the export's one read-only snapshot. A
#: message that does not decode raises (``skip_damaged`` has nothing to skip here).
POSTGRES_EXPORT: Final = ExportSource(
    _selected, inherited, _hidden, header, _records, itemgetter("sid"), itemgetter("next_position")
)


async def insert_session(
    conn: Any, rec: SessionRecord, new_id: str, parent_id: str | None, owner_id: str | None = None
) -> int:
    """Insert a whole session with its original times, lineage, checkpoints and (a subagent
    session's) owner link, in the caller's transaction."""
    from axio_context.messages import preview_for
    from axio_context.session_metadata import encode_metadata

    base_seg: int | None = None
    est = 0
    preview: tuple[int, str] | None = None
    if rec.inherited:
        parent = await conn.fetchrow(
            "SELECT seg, next_position, preview, preview_pos FROM sessions WHERE id = $1", parent_id
        )
        if parent is None or parent["next_position"] < rec.inherited:
            raise TranscriptError(
                f"session {rec.id!r} inherits {rec.inherited} messages from {parent_id!r}, "
                "which is missing or shorter in the database"
            )
        base_seg = parent["seg"]
        est = await lineage.tokens_upto(conn, base_seg, rec.inherited)
        if parent["preview_pos"] is not None and parent["preview_pos"] < rec.inherited:
            preview = (parent["preview_pos"], parent["preview"] or "")
    seg = await conn.fetchval(
        "INSERT INTO segments (base_seg, base_len, owner) VALUES ($1, $2, $3) RETURNING seg",
        base_seg,
        rec.inherited,
        new_id,
    )
    messages = [r.message() for r in rec.messages]
    rows = [
        writes.encode(m, estimate_message_tokens(m), parse_time(r.created_at))
        for m, r in zip(messages, rec.messages, strict=True)
    ]
    if preview is None:
        preview = preview_for(messages, rec.inherited)
    if rows:
        await writes.insert_rows(conn, seg, rec.inherited, rows)
    est += sum(r.tokens for r in rows)
    meta = None if rec.metadata is None else encode_metadata(rec.metadata).encode("utf-8", "surrogatepass")
    await conn.execute(
        "INSERT INTO sessions (id, seg, project, parent_id, fork_position, title, metadata, created_at,"
        " updated_at, next_position, est_tokens, preview, preview_pos, input_tokens, output_tokens)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
        new_id,
        seg,
        rec.project,
        parent_id,
        rec.fork_position,
        rec.title,
        sealed(meta),
        parse_time(rec.created_at),
        parse_time(rec.updated_at),
        rec.inherited + len(rows),
        est,
        writes.preview_text(preview),
        None if preview is None else preview[0],
        rec.input_tokens,
        rec.output_tokens,
    )
    if owner_id is not None and rec.agent_name is not None:
        # As SQLite's import: the link is kept unless that owner already has this subagent.
        await conn.execute(
            "UPDATE sessions SET owner_id = $2, agent_name = $3 WHERE id = $1 AND NOT EXISTS"
            " (SELECT 1 FROM sessions WHERE owner_id = $2 AND agent_name = $3)",
            new_id,
            owner_id,
            rec.agent_name,
        )
    if rec.agent_id is not None and rec.thread_id is not None:
        # As SQLite's import: an agent's conversation stays its, unless that agent already has one there.
        await conn.execute(
            "INSERT INTO agent_sessions (sid, agent_id, thread_id) SELECT sid, $2, $3 FROM sessions"
            " WHERE id = $1 ON CONFLICT DO NOTHING",
            new_id,
            rec.agent_id,
            rec.thread_id,
        )
    from axio_context.checkpoints import Checkpoint

    for cp in rec.checkpoints:
        await writes.add_checkpoint(
            conn,
            new_id,
            rec.project,
            Checkpoint(cp.position, cp.summary, cp.tokens_before, cp.tokens_after, cp.summarizer),
            estimate_tokens(cp.summary),
            created_at=parse_time(cp.created_at),
            seq=cp.id,
        )
    return len(rows)


def ids_of(records_: Iterable[SessionRecord]) -> list[str]:
    return [r.id for r in records_]
