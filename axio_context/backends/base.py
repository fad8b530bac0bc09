"""What every backend's registry entry does the same way: make its session stores, conversation
logs, turn indexes and usage recorders from a handle (its connection or pool), the classes being its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..context import ContextStore
from ..conversation_log import ConversationLog
from ..tokens import TokenCounter

if TYPE_CHECKING:
    from ..turns_sql import TurnIndexCalls
    from ..usage_limits import UsageRecorder

__all__ = ["BackendBase"]


class BackendBase:
    """A backend's stores from its handle. A backend names its handle's type and its classes;
    the usage recorder's class it hands out on first use (:meth:`_recorder_class`), so opening
    a session does not load the usage layer."""

    #: The type of the backend's connection or pool.
    handle_type: ClassVar[type]
    #: Its session store and conversation log classes.
    store_class: ClassVar[type[ContextStore]]
    log_class: ClassVar[type[Any]]

    def owns(self, handle: object) -> bool:
        """Whether ``handle`` is this backend's connection or pool."""
        return isinstance(handle, self.handle_type)

    def context_store(
        self, handle: Any, session_id: str, project: str | None = None, *, ttl: Any = None
    ) -> ContextStore:
        """Session ``session_id`` on ``handle``, filed under ``project``, expiring after ``ttl``."""
        make: Any = self.store_class  # each backend's constructor takes its own handle type
        store: ContextStore = make(handle, session_id, project, ttl=ttl)
        return store

    def conversation_log(
        self, handle: Any, *, adapter: str, project: str | None, token_counter: TokenCounter | None
    ) -> ConversationLog:
        """``adapter``'s conversation log on ``handle``."""
        log: ConversationLog = self.log_class(
            handle, adapter=adapter, project=project, token_counter=token_counter
        )
        return log

    def _recorder_class(self) -> type[UsageRecorder]:
        raise NotImplementedError

    def _turns_class(self) -> type[TurnIndexCalls[Any]]:
        raise NotImplementedError(f"{type(self).__name__} keeps no turn index")

    def turn_index(self, handle: Any, *, project: str | None = None) -> TurnIndexCalls[Any]:
        """The user turns of sessions on ``handle`` (:mod:`axio_context.turns_sql`); sessions an
        append creates are filed under ``project``."""
        return self._turns_class()(handle, project=project)

    def usage_recorder(self, handle: Any) -> UsageRecorder:
        """A usage recorder on ``handle``."""
        make: Any = self._recorder_class()
        recorder: UsageRecorder = make(handle)
        return recorder
