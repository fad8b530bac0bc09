"""Layer logic written once for every SQL backend.

A layer's operation is a **plan**: a generator that yields statements (:class:`Rows`,
:class:`Row`, :class:`Value`, :class:`Execute`, :class:`ExecuteMany`) and is sent each result
back, and returns the operation's result. It does no I/O itself, so the same plan runs on
SQLite (synchronously, on the connection's worker thread: one thread hop for the whole
transaction) and on PostgreSQL (each statement awaited on one pooled connection), inside one
transaction either way. Statements are written once with ``?`` placeholders; a :class:`Dialect`
supplies the few fragments that differ (JSON parameters, list membership, row locks, ordering by
code point) and turns ``?`` into what its driver takes. This is langgraph's ``BaseStore`` idea
(each operation written once over its backends' batch calls) with SQLAlchemy's dialects, made
small: a backend package holds its connection handling, its :class:`Runner` and the statements
only it can run.
"""

from .plan import (
    Dialect,
    Execute,
    ExecuteMany,
    Native,
    Plan,
    PlanFn,
    Row,
    Rows,
    Runner,
    Step,
    Value,
    decode_object,
    encode_json,
)

__all__ = [
    "Dialect",
    "Execute",
    "ExecuteMany",
    "Native",
    "Plan",
    "PlanFn",
    "Row",
    "Rows",
    "Runner",
    "Step",
    "Value",
    "decode_object",
    "encode_json",
]
