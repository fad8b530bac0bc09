"""openai-agents' ``AdvancedSQLiteSession`` API over axio-context: branches and usage per turn.

A turn starts at each user message (``role`` ``"user"``), numbered from 1 on its branch. The
session is the branch ``"main"``; another branch is a session forked from the branch it started
on at a turn's user message (one row, nothing copied: the same cost at 10 items as at 100,000).
Each branch's session keeps its turns' positions in its metadata (:data:`~.turns.TURNS_KEY`,
rebuilt from the history when missing); the main one names its branches and every name used.
Usage per turn is the database's usage records, one per ``store_run_usage`` in the branch's
session, its run id naming the turn (the newest wins). Written once over the backend protocol.
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
from axio_context.context import ContextStore
from axio_context.errors import SessionNotFoundError

from .items import item_of, message_of
from .session import ADAPTER, AxioContextSession
from .turns import (
    BRANCHES_KEY,
    CURRENT,
    MAIN,
    TURNS_KEY,
    USED_KEY,
    by_turns,
    is_user,
    length,
    ms,
    now,
    numbered,
    pack,
    run_id,
    run_usage,
    size,
    tool_usage,
    turn_preview,
    unpack,
    usage_rows,
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
        messages = [message_of(item, i) for i, item in enumerate(items)]
        if messages:
            await self._mutate(self._append, CURRENT, messages, [is_user(i) for i in items])

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
        rows = await self._call(self._usage_rows, branch_id or CURRENT)
        if user_turn_number is None:
            return rows
        for row in rows:
            if row["user_turn_number"] == user_turn_number:
                return {k: v for k, v in row.items() if k != "user_turn_number"}
        return {}

    # -- what runs beside the connection ---------------------------------------------------------

    async def _handle(self) -> Any:
        await self._owner_checked(writing=False)
        return await self._live().conn()

    async def _branch_store(self, branch: str, with_items: bool = False, missing_ok: bool = False) -> Any:
        """The session of ``branch``; ValueError when there is none (``with_items``: or when it
        is empty, as openai-agents sees a branch: by its items)."""
        await self._owner_checked(writing=False)
        current, branch = branch == CURRENT, self._branch if branch == CURRENT else branch
        if branch == MAIN:
            return self._based()
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
                return self._based()
            if missing_ok:
                return None
            raise ValueError(f"Branch '{branch}' does not exist")
        if with_items and n == 0:
            raise ValueError(f"Branch '{branch}' does not exist")
        return store

    async def _turns(self, store: ContextStore) -> list[list[Any]]:
        """The branch's turns ``[position, created ms]`` (from its history when missing)."""
        metadata = await store.get_metadata()  # type: ignore[attr-defined]
        turns = unpack(metadata.get(TURNS_KEY))
        if turns is None:
            history, made = await store.get_full_history(), ms()  # type: ignore[attr-defined]
            turns = [[p, made] for p, m in enumerate(history) if is_user(item_of(m))]
            if turns:
                await store.set_metadata({**metadata, TURNS_KEY: pack(turns)})  # type: ignore[attr-defined]
        return turns

    async def _read(self, branch: str, limit: int | None) -> list[Any]:
        store = await self._branch_store(branch, missing_ok=True)
        if store is None:
            return []
        history = await (store.get_history() if limit is None else store.get_tail(limit))
        return [item_of(m) for m in history]

    async def _append(self, branch: str, messages: list[Any], users: list[bool]) -> None:
        store = await self._branch_store(branch)
        if store is cast(Any, self._based()):
            await self._owner_checked(writing=True)
        turns = await self._turns(store) if any(users) else None
        start = await length(store) if turns is not None else 0
        await store.append_many(messages)
        if turns is not None:
            made = ms()
            turns = [*turns, *([start + i, made] for i, user in enumerate(users) if user)]
            metadata = await store.get_metadata()
            await store.set_metadata({**metadata, TURNS_KEY: pack(turns)})

    async def _pop_from(self, branch: str) -> Any:
        store = await self._branch_store(branch)
        popped = await store.pop()
        if popped is None:
            return None
        item = item_of(popped)
        if is_user(item):
            metadata = await store.get_metadata()
            end = await length(store)
            turns = [t for t in unpack(metadata.get(TURNS_KEY)) or [] if t[0] < end]
            await store.set_metadata({**metadata, TURNS_KEY: pack(turns)})
        return item

    async def _clear_all(self) -> None:
        main = await self._branch_store(MAIN)
        metadata = await main.get_metadata()
        for entry in metadata.get(BRANCHES_KEY, {}).values():
            await main.delete_session(entry["session"])
        await main.clear()
        self._sessions.clear()
        if metadata:
            await main.set_metadata({**metadata, BRANCHES_KEY: {}, TURNS_KEY: pack([])})

    async def _branch_at(self, turn_number: int, name: str | None) -> tuple[str, Any, str]:
        store = await self._branch_store(CURRENT)
        source = self._branch
        turns = await self._turns(store)
        if not 1 <= turn_number <= len(turns):
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
        await log.fork_at(store.session_id, turns[turn_number - 1][0], new_id)
        branch = backend_of(conn).context_store(conn, new_id, self._project)
        await branch.set_metadata(  # type: ignore[attr-defined]
            {**await branch.get_metadata(), TURNS_KEY: pack(turns[: turn_number - 1])}  # type: ignore[attr-defined]
        )
        branches = {**metadata.get(BRANCHES_KEY, {}), name: {"session": new_id, "created_at": now()}}
        await main.set_metadata(
            {**metadata, BRANCHES_KEY: branches, USED_KEY: sorted(used - {MAIN} | {name})}
        )
        content = None
        if not _debug.DONT_LOG_MODEL_DATA and self._logger.isEnabledFor(logging.DEBUG):
            content = await turn_preview(store, turns[turn_number - 1][0])
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
        out = []
        names = [MAIN, *(await main.get_metadata()).get(BRANCHES_KEY, {})]
        for name in names:
            store = await self._branch_store(name)
            try:
                info = await store.info()
            except SessionNotFoundError:
                continue
            if info.message_count == 0:
                continue
            created = str(info.created_at)[:19].replace("T", " ")
            if name != MAIN:
                created = (await main.get_metadata())[BRANCHES_KEY][name]["created_at"]
            out.append(
                {
                    "branch_id": name,
                    "message_count": info.message_count,
                    "user_turns": len(await self._turns(store)),
                    "is_current": name == self._branch,
                    "created_at": created,
                }
            )
        return sorted(out, key=lambda b: b["created_at"])

    async def _numbered(self, branch: str) -> list[tuple[int, Any]]:
        """Each item of the branch with its turn number (0 before the first user message)."""
        store = await self._branch_store(branch, missing_ok=True)
        return [] if store is None else numbered(await store.get_full_history())

    async def _user_turns(self, branch: str, term: str | None) -> list[dict[str, Any]]:
        store = await self._branch_store(branch, missing_ok=True)
        turns = [] if store is None else await self._turns(store)
        if store is None or not turns:
            return []
        return user_turns(await store.get_full_history(), turns, term)

    async def _record(self, branch: str, usage: Any) -> None:
        store = await self._branch_store(branch)
        turns = await self._turns(store)
        if not turns:
            return  # no turn to give it to, as openai-agents
        conn = await self._handle()
        await (
            backend_of(conn)
            .usage_recorder(conn)
            .record(
                run_usage(usage), session_id=store.session_id, agent=ADAPTER, run=run_id(store, turns[-1])
            )
        )

    async def _usage_rows(self, branch: str | None) -> list[dict[str, Any]]:
        """The newest usage of each turn of ``branch`` (None: of every branch), by turn."""
        if branch is None:
            main = await self._branch_store(MAIN)
            names = [MAIN, *(await main.get_metadata()).get(BRANCHES_KEY, {})]
            return [row for name in names for row in await self._usage_rows(name)]
        store = await self._branch_store(branch, missing_ok=True)
        if store is None:
            return []
        conn = await self._handle()
        records = (
            await backend_of(conn).usage_recorder(conn).records(session_id=store.session_id, limit=10**6)
        )
        return usage_rows(store, await self._turns(store), records)
