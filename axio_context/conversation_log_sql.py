"""A framework's conversation log written once for every SQL backend: the records (the
framework's own serialization, opaque here) with their revision check, and where each entry
went. Appending the entries' messages is the backend's own (its session store), handed in as a
function run in the same transaction, so a save is one transaction on either backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final, Generic, NamedTuple, TypeVar

from .conversation_log import Entry, RevisionConflictError
from .messages import Message
from .sql import Dialect, Execute, ExecuteMany, Native, Plan, Row, Rows, Runner, Value
from .tokens import DefaultEstimator, TokenCounter

__all__ = ["ConversationLogCalls", "Saved"]

H = TypeVar("H")

_REVISION: Final = "SELECT revision FROM conversation_records WHERE id = ?"
_ENTRY: Final = "SELECT session_id, position FROM conversation_entries WHERE id = ?"


class Saved(NamedTuple):
    """A save's record and the revision it replaces (None: no record may exist yet)."""

    record: bytes
    revision: str
    updated_us: int
    scope: str | None
    head_id: str | None
    expected_revision: str | None


def _read_record(d: Dialect, conversation_id: str) -> Plan[bytes | None]:
    blob = yield Value("SELECT record FROM conversation_records WHERE id = ?", (conversation_id,))
    return None if blob is None else bytes(blob)


def _read_records(d: Dialect, scope: str | None, limit: int | None) -> Plan[list[bytes]]:
    where, args = ("", []) if scope is None else (" WHERE scope = ?", [scope])
    tail = "" if limit is None else " LIMIT ?"
    rows = yield Rows(
        f"SELECT record FROM conversation_records{where} ORDER BY updated_us DESC, id{tail}",
        [*args, *([] if limit is None else [limit])],
    )
    return [bytes(r[0]) for r in rows]


def _delete(d: Dialect, conversation_id: str, expected_revision: str) -> Plan[bool]:
    gone = yield Value(
        "DELETE FROM conversation_records WHERE id = ? AND revision = ? RETURNING 1",
        (conversation_id, expected_revision),
    )
    return gone is not None


def _write(
    d: Dialect,
    append: Callable[..., Any],
    conversation_id: str,
    saved: Saved,
    links: list[tuple[str, str | None]],
    batch: Any,
    project: str,
) -> Plan[dict[str, tuple[str, int]]]:
    if d.key_lock is not None:  # two writers of one conversation take turns
        yield Value(d.key_lock, (f"conversation {conversation_id}",))
    stored = yield Value(_REVISION, (conversation_id,))
    if stored != saved.expected_revision:
        raise RevisionConflictError(conversation_id)
    placed: dict[str, tuple[str, int]] = {}
    if links:
        target, first = yield Native(append, (conversation_id, links[0][1], batch, project))
        placed = {entry_id: (target, first + i) for i, (entry_id, _) in enumerate(links)}
        yield ExecuteMany(
            "INSERT INTO conversation_entries (id, session_id, position) VALUES (?, ?, ?)",
            [(entry_id, s, p) for entry_id, (s, p) in placed.items()],
        )
    head: tuple[str | None, int | None] = (None, None)
    if saved.head_id is not None:
        where = placed.get(saved.head_id)
        if where is None:
            r = yield Row(_ENTRY, (saved.head_id,))
            if r is None:  # released by a concurrent delete or rewrite
                raise RevisionConflictError(conversation_id)
            where = (str(r[0]), int(r[1]))
        head = where
    yield Execute(
        "INSERT INTO conversation_records (id, scope, revision, updated_us, head_session, head_position,"
        " record) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET scope = excluded.scope,"
        " revision = excluded.revision, updated_us = excluded.updated_us,"
        " head_session = excluded.head_session, head_position = excluded.head_position,"
        " record = excluded.record",
        (conversation_id, saved.scope, saved.revision, saved.updated_us, *head, d.sealed(saved.record)),
    )
    return placed


class ConversationLogCalls(Generic[H]):
    """The record half of a conversation log, the same on every backend, on ``handle`` (the
    backend's connection or pool, the caller's). ``adapter`` names the framework (the sessions
    it creates are marked with it); ``project`` files those sessions when a write gives no scope
    (None: the current directory, as the session stores do).

    The backend's log says which runner it runs on, how it prepares a batch of messages
    (:meth:`_batch`) and how it appends one to the right session (:meth:`_append`, run in the
    save's transaction, given the connection, the conversation, the entry the batch follows, the
    batch and the project; it returns ``(session id, first position)``)."""

    def __init__(
        self,
        handle: H,
        *,
        adapter: str,
        project: str | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._handle = handle
        self._adapter = adapter
        self._project = project if project is not None else str(Path.cwd().resolve())
        self._counter: TokenCounter = token_counter or DefaultEstimator()

    def _log_runner(self) -> Runner:
        raise NotImplementedError

    def _batch(self, messages: list[Message]) -> Any:
        raise NotImplementedError

    def _append(self) -> Callable[..., Any]:
        raise NotImplementedError

    async def read_record(self, conversation_id: str) -> bytes | None:
        """A conversation's stored record, or None."""
        return await self._log_runner().read(_read_record, conversation_id)

    async def read_records(self, scope: str | None = None, limit: int | None = None) -> list[bytes]:
        """The stored records (of ``scope`` when given), most recently written first."""
        return await self._log_runner().read(_read_records, scope, limit)

    async def delete(self, conversation_id: str, expected_revision: str) -> None:
        """Delete a conversation's record; its sessions (the transcript) stay.
        :class:`RevisionConflictError` unless the stored revision is ``expected_revision``."""
        if not await self._log_runner().write(_delete, conversation_id, expected_revision):
            raise RevisionConflictError(conversation_id)

    async def write(
        self,
        conversation_id: str,
        *,
        record: bytes,
        revision: str,
        updated_us: int,
        scope: str | None,
        head_id: str | None,
        expected_revision: str | None,
        entries: Sequence[Entry] = (),
    ) -> dict[str, tuple[str, int]]:
        """Check the revision, append ``entries`` and store ``record`` in one transaction;
        returns where each entry went: ``{entry id: (session id, position)}``.

        :class:`RevisionConflictError` when the stored revision is not ``expected_revision``
        (None: no record may exist), or when ``head_id`` names an entry the log does not have.
        ``updated_us``: the record's time (microseconds since the epoch), which orders listings.
        """
        links = [(entry_id, parent_id) for entry_id, parent_id, _ in entries]
        for i in range(1, len(links)):
            if links[i][1] != links[i - 1][0]:
                raise ValueError(f"entry {links[i][0]!r} does not follow the entry before it in the batch")
        batch = self._batch([m for _, _, m in entries]) if links else None
        saved = Saved(record, revision, updated_us, scope, head_id, expected_revision)
        project = scope if scope is not None else self._project
        return await self._log_runner().write(
            _write, self._append(), conversation_id, saved, links, batch, project
        )
