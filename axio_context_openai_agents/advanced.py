"""openai-agents' ``AdvancedSQLiteSession`` API over axio-context: branches and usage per turn.

A turn starts at each user message (``role`` ``"user"``), numbered from 1 on its branch. The
session is the branch ``"main"``; another branch is a session forked from the branch it started
on at a turn's user message (one row, nothing copied: the same cost at 10 items as at 100,000).
The turns are the database's turn index (:mod:`axio_context.turns_sql`): a row per user message,
written in the append's transaction, keyed as the message's row, so a branch sees its parent's
turns before the fork point; each is found by an indexed lookup. The main session's metadata names
its branches and every name used. Usage per turn is the database's usage records, one per
``store_run_usage`` in the branch's session, its run id naming the turn (the newest wins). A
session written before the index (its turns in its metadata, :data:`~.turns.TURNS_KEY`) or
without it (by :class:`AxioContextSession`) is indexed when first opened, and what another writer
appends later when it is next used (:func:`~.turns.caught_up`). Written once over the backend
protocol.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, cast
from uuid import uuid4

import agents._debug as _debug
from agents.items import TResponseInputItem
from agents.memory.session_settings import resolve_session_limit
from agents.result import RunResult

from axio_context.backends import backend_of
from axio_context.errors import SessionNotFoundError
from axio_context.expiry import DEFAULT, resolve_ttl
from axio_context.turns_sql import TurnIndexCalls, turn_run

from .items import item_of, messages_of
from .session import ADAPTER, AxioContextSession
from .turns import (
    BRANCHES_KEY,
    CURRENT,
    MAIN,
    TURNS_KEY,
    USED_KEY,
    by_turns,
    caught_up,
    content_json,
    is_user,
    now,
    numbered,
    run_usage,
    search_text,
    size,
    tool_usage,
    turn_preview,
    usage_row,
    user_turns,
)

__all__ = ["BRANCHES_KEY", "TURNS_KEY", "USED_KEY", "AxioAdvancedSession"]


class AxioAdvancedSession(AxioContextSession):
    """:class:`AxioContextSession` with ``AdvancedSQLiteSession``'s branches, turns and usage per
    turn (same method names, arguments and return shapes). Bad input (a turn that does not exist,
    a branch name already used, an unknown branch) is a one-line ``ValueError``, nothing
    written. The current branch belongs to this object, as in openai-agents (a new one starts on
    ``"main"``). Arguments as :class:`AxioContextSession`'s, plus ``logger``."""

    def __init__(
        self,
        session_id: str,
        db_path: str | Path | None = None,
        *,
        logger: logging.Logger | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(session_id, db_path, **kwargs)
        self._branch = MAIN
        self._logger = logger if logger is not None else logging.getLogger(__name__)
        self._sessions: dict[str, str | None] = {}  # branch name: its session id
        self._indexed: dict[str, int] = {}  # session id: how far its turns are known indexed
        self._index: TurnIndexCalls[Any] | None = None

    @property
    def _current_branch_id(self) -> str:  # openai-agents' name for it, which its tests read
        return self._branch

    # -- the Session protocol, on the current branch -------------------------------------------

    async def get_items(
        self, limit: int | None = None, branch_id: str | None = None
    ) -> list[TResponseInputItem]:
        """The items of the current branch (or ``branch_id``), as :meth:`AxioContextSession.get_items`."""
        branch = branch_id or self._branch
        if branch == MAIN:
            return await super().get_items(limit)
        n = resolve_session_limit(limit, self.session_settings)
        if n == 0:
            self._live()
            return []
        return await self._call(self._read, branch_id or CURRENT, None if n is None or n < 0 else n)

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` to the current branch in one transaction (all or, with
        :class:`~.items.ItemError`, none); a user message starts a turn."""
        self._live()
        messages = messages_of(items)
        if messages:
            turns = [(i, content_json(item)) for i, item in enumerate(items) if is_user(item)]
            await self._mutate(self._append, CURRENT, messages, turns)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the current branch's newest item (its turn too, if it started one)."""
        return await self._mutate(self._pop_from, CURRENT)

    async def clear_session(self) -> None:
        """Remove every item and every branch (their names stay used); back on ``"main"``."""
        await self._mutate(self._clear_all)
        self._branch = MAIN

    async def create_branch_from_turn(self, turn_number: int, branch_name: str | None = None) -> str:
        """A new branch holding the current branch's items before turn ``turn_number``'s user
        message, made current; its name (``branch_name``, else ``branch_from_turn_N_<time>``)."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")
        name, content, source = await self._mutate(self._branch_at, turn_number, branch_name)
        self._branch = name
        if content is None:
            self._logger.debug("Created branch '%s' from turn %s in '%s'", name, turn_number, source)
        else:  # the turn's text only where openai-agents would log it (and read only then)
            self._logger.debug(
                "Created branch '%s' from turn %s ('%s') in '%s'", name, turn_number, content, source
            )
        return name

    async def create_branch_from_content(self, search_term: str, branch_name: str | None = None) -> str:
        """:meth:`create_branch_from_turn` at the first user turn containing ``search_term``."""
        turns = await self.find_turns_by_content(search_term)
        if not turns:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(turns[0]["turn"], branch_name)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Make ``branch_id`` current (ValueError if it does not exist)."""
        await self._call(self._branch_store, branch_id, True)
        old, self._branch = self._branch, branch_id
        self._logger.info("Switched from branch '%s' to '%s'", old, branch_id)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete a branch (its name stays used); not ``"main"``, nor the current one unless
        ``force`` (then back on ``"main"``)."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")
        if branch_id == self._branch and not force:
            why = "Use force=True or switch branches first"
            raise ValueError(f"Cannot delete current branch '{branch_id}'. {why}")
        await self._mutate(self._delete, branch_id)
        if branch_id == self._branch:
            self._branch = MAIN
        self._logger.info("Deleted branch '%s'", branch_id)

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every branch with items: ``branch_id``, ``message_count``, ``user_turns``,
        ``is_current``, ``created_at``, oldest first."""
        return await self._call(self._list)

    async def get_conversation_turns(self, branch_id: str | None = None) -> list[dict[str, Any]]:
        """The user turns: ``turn``, ``content`` (a preview), ``full_content``, ``timestamp``,
        ``can_branch``."""
        return await self._call(self._user_turns, branch_id or CURRENT, None)

    async def find_turns_by_content(
        self, search_term: str, branch_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The user turns whose text contains ``search_term`` (ASCII case ignored)."""
        return await self._call(self._user_turns, branch_id or CURRENT, search_term)

    async def get_conversation_by_turns(
        self, branch_id: str | None = None
    ) -> dict[int, list[dict[str, str | None]]]:
        """Each turn's items as ``{"type": ..., "tool_name": ...}``, by turn number."""
        return by_turns(await self._call(self._numbered, branch_id or CURRENT))

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        """``(tool name, calls, turn)`` for each tool used in each turn, by turn."""
        return tool_usage(await self._call(self._numbered, branch_id or CURRENT))

    async def store_run_usage(self, result: RunResult) -> None:
        """Record ``result``'s usage as the current turn's (replacing what it had); a failure is
        logged, never raised, as in openai-agents."""
        try:
            usage = result.context_wrapper.usage
            if usage is not None:
                await self._mutate(self._record, CURRENT, usage)
        except Exception as exc:
            self._logger.error("Failed to store session usage: %s", exc)

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Summed turn usage of ``branch_id`` (None: every branch): ``requests``,
        ``input_tokens``, ``output_tokens``, ``total_tokens``, ``total_turns``; None without any."""
        rows = await self._call(self._usage_rows, branch_id)
        if not rows:
            return None
        keys = ("requests", "input_tokens", "output_tokens", "total_tokens")
        return {**{k: sum(r[k] for r in rows) for k in keys}, "total_turns": len(rows)}

    async def get_turn_usage(
        self, user_turn_number: int | None = None, branch_id: str | None = None
    ) -> list[dict[str, Any]] | dict[str, Any]:
        """The usage of each turn of the branch with one (``user_turn_number`` and the figures,
        with ``input_tokens_details`` / ``output_tokens_details``), or of one turn ({} if none)."""
        if user_turn_number is None:
            return await self._call(self._usage_rows, branch_id or CURRENT)
        return await self._call(self._turn_usage, branch_id or CURRENT, user_turn_number)

    # -- what runs beside the connection ---------------------------------------------------------

    async def _handle(self) -> Any:
        await self._owner_checked(writing=False)
        return await self._live().conn()

    async def _turn_index(self) -> TurnIndexCalls[Any]:
        if self._index is None:
            conn = await self._handle()
            self._index = backend_of(conn).turn_index(conn, project=self._project)
        return self._index

    async def _branch_store(self, branch: str, with_items: bool = False, missing_ok: bool = False) -> Any:
        """The session of ``branch``; ValueError when there is none (``with_items``: or when it
        is empty, as openai-agents sees a branch: by its items)."""
        await self._owner_checked(writing=False)
        current, branch = branch == CURRENT, self._branch if branch == CURRENT else branch
        if branch == MAIN:
            return await self._indexing(self._based())
        sid = self._sessions.get(branch)
        if sid is None:  # a name is never reused: its session, once found, stays its own
            entry = (await self._based().get_metadata()).get(BRANCHES_KEY, {}).get(branch)
            sid = self._sessions[branch] = None if entry is None else entry["session"]
        conn = await self._handle()
        store = None if sid is None else backend_of(conn).context_store(conn, sid, self._project)
        n = await size(store) if store is not None and (current or with_items) else 0
        if store is None or n is None:  # none, or deleted (or cleared) since it was found
            self._sessions.pop(branch, None)
            if current:  # by another session object: back on main
                self._branch = MAIN
                return await self._indexing(self._based())
            if missing_ok:
                return None
            raise ValueError(f"Branch '{branch}' does not exist")
        if with_items and n == 0:
            raise ValueError(f"Branch '{branch}' does not exist")
        return await self._indexing(store)

    async def _indexing(self, store: Any) -> Any:
        """``store``, its turns in the index up to its end (:func:`~.turns.caught_up`): moved
        there from its metadata, found in what another writer appended since the last look."""
        sid = store.session_id
        found = await caught_up(await self._turn_index(), store, self._indexed.get(sid))
        if found is None:
            self._indexed.pop(sid, None)
        else:
            self._indexed[sid] = found
        return store

    async def _read(self, branch: str, limit: int | None) -> list[Any]:
        store = await self._branch_store(branch, missing_ok=True)
        if store is None:
            return []
        history = await (store.get_history() if limit is None else store.get_tail(limit))
        return [item_of(m) for m in history]

    async def _append(self, branch: str, messages: list[Any], turns: list[tuple[int, str]]) -> None:
        store = await self._branch_store(branch)
        main = store is cast(Any, self._based())
        if main:
            await self._owner_checked(writing=True)
        ttl_ms = resolve_ttl(DEFAULT, self._ttl) if main else None  # as the session's store would
        first = await (await self._turn_index()).append(store.session_id, messages, turns, ttl_ms=ttl_ms)
        if self._indexed.get(store.session_id) == first:  # else another writer came between
            self._indexed[store.session_id] = first + len(messages)

    async def _pop_from(self, branch: str) -> Any:
        store = await self._branch_store(branch)
        popped = await store.pop()  # its turn, if it was one, goes with its row
        known = self._indexed.get(store.session_id)
        if popped is not None and known:  # a later append at the popped place is looked at
            self._indexed[store.session_id] = known - 1
        return None if popped is None else item_of(popped)

    async def _clear_all(self) -> None:
        main = await self._branch_store(MAIN)
        metadata = await main.get_metadata()
        for entry in metadata.get(BRANCHES_KEY, {}).values():
            await main.delete_session(entry["session"])
        await main.clear()
        self._sessions.clear()
        if metadata.get(BRANCHES_KEY):
            await main.set_metadata({**metadata, BRANCHES_KEY: {}})

    async def _branch_at(self, turn_number: int, name: str | None) -> tuple[str, Any, str]:
        store = await self._branch_store(CURRENT)
        source = self._branch
        turn = await (await self._turn_index()).turn(store.session_id, turn_number)
        if turn is None:
            raise ValueError(f"Turn {turn_number} does not contain a user message in branch '{source}'")
        main = self._based()
        metadata = await main.get_metadata()
        used = set(metadata.get(USED_KEY, [])) | set(metadata.get(BRANCHES_KEY, {})) | {MAIN}
        if name is None:
            base = name = f"branch_from_turn_{turn_number}_{int(time.time())}"
            suffix = 1
            while name in used:
                suffix += 1
                name = f"{base}_{suffix}"
        elif name in used:
            raise ValueError(f"Branch ID '{name}' has already been used. Choose a new branch ID.")
        conn = await self._handle()
        new_id = uuid4().hex
        log = backend_of(conn).conversation_log(
            conn, adapter=ADAPTER, project=self._project, token_counter=None
        )
        await log.fork_at(store.session_id, turn.position, new_id)  # its turns: the parent's before
        self._indexed[new_id] = turn.position
        branches = {**metadata.get(BRANCHES_KEY, {}), name: {"session": new_id, "created_at": now()}}
        await main.set_metadata(
            {**metadata, BRANCHES_KEY: branches, USED_KEY: sorted(used - {MAIN} | {name})}
        )
        content = None
        if not _debug.DONT_LOG_MODEL_DATA and self._logger.isEnabledFor(logging.DEBUG):
            content = turn_preview(turn)
        return name, content, source

    async def _delete(self, branch: str) -> None:
        store = await self._branch_store(branch, True)  # ValueError when it does not exist
        main = self._based()
        metadata = await main.get_metadata()
        branches = {k: v for k, v in metadata.get(BRANCHES_KEY, {}).items() if k != branch}
        await main.set_metadata({**metadata, BRANCHES_KEY: branches})
        await store.delete_session()
        self._sessions.pop(branch, None)

    async def _list(self) -> list[dict[str, Any]]:
        await self._branch_store(CURRENT)  # on main if the current branch is gone
        main = await self._branch_store(MAIN)
        index = await self._turn_index()
        out = []
        branches = (await main.get_metadata()).get(BRANCHES_KEY, {})
        for name in [MAIN, *branches]:
            store = await self._branch_store(name)
            try:
                info = await store.info()
            except SessionNotFoundError:
                continue
            if info.message_count == 0:
                continue
            created = str(info.created_at)[:19].replace("T", " ")
            out.append(
                {
                    "branch_id": name,
                    "message_count": info.message_count,
                    "user_turns": await index.count(store.session_id),
                    "is_current": name == self._branch,
                    "created_at": created if name == MAIN else branches[name]["created_at"],
                }
            )
        return sorted(out, key=lambda b: b["created_at"])

    async def _numbered(self, branch: str) -> list[tuple[int, Any]]:
        """Each item of the branch with its turn number (0 before the first user message)."""
        store = await self._branch_store(branch, missing_ok=True)
        return [] if store is None else numbered(await store.get_full_history())

    async def _user_turns(self, branch: str, term: str | None) -> list[dict[str, Any]]:
        store = await self._branch_store(branch, missing_ok=True)
        if store is None:
            return []
        found = None if term is None else search_text(term)
        return user_turns(await (await self._turn_index()).turns(store.session_id, found), term)

    async def _record(self, branch: str, usage: Any) -> None:
        store = await self._branch_store(branch)
        turn = await (await self._turn_index()).last(store.session_id)
        if turn is None:
            return  # no turn to give it to, as openai-agents
        conn = await self._handle()
        run = turn_run(store.session_id, turn)
        recorder = backend_of(conn).usage_recorder(conn)
        await recorder.record(run_usage(usage), session_id=store.session_id, agent=ADAPTER, run=run)

    async def _usage_rows(self, branch: str | None) -> list[dict[str, Any]]:
        """The newest usage of each turn of ``branch`` (None: of every branch), by turn."""
        if branch is None:
            main = await self._branch_store(MAIN)
            names = [MAIN, *(await main.get_metadata()).get(BRANCHES_KEY, {})]
            return [row for name in names for row in await self._usage_rows(name)]
        store = await self._branch_store(branch, missing_ok=True)
        if store is None:
            return []
        found = await (await self._turn_index()).usage(store.session_id)
        return [usage_row(turn.turn, record.usage) for turn, record in found]

    async def _turn_usage(self, branch: str, number: int) -> dict[str, Any]:
        """The newest usage of turn ``number`` of ``branch``, as openai-agents' row ({} for none)."""
        store = await self._branch_store(branch, missing_ok=True)
        index = await self._turn_index()
        record = None if store is None else await index.usage_of(store.session_id, number)
        if record is None:
            return {}
        return {k: v for k, v in usage_row(number, record.usage).items() if k != "user_turn_number"}
