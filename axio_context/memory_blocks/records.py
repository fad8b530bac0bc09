"""A memory block as an export carries it (the :class:`~.transfer_sql.BlockRow` that ``blocks
export`` and ``copy`` move), and the checks an import applies to one before anything is written:
the record read from a file is untrusted, so every field is held to what the store itself allows."""

from __future__ import annotations

from typing import Final

from .errors import BlockInputError
from .model import check_agent, check_label, check_limit, check_text
from .transfer_sql import BlockRow

__all__ = ["BlockRecordChecker"]

#: The largest integer a database column holds (a 64-bit INTEGER / bigint).
_INT_MAX: Final = (1 << 63) - 1


def _whole(value: int | None, what: str, low: int = 0) -> None:
    if value is not None and not low <= value <= _INT_MAX:
        raise BlockInputError(f"{what}: {value} is outside {low}..{_INT_MAX}")


def _fits(value: str, limit: int, what: str) -> None:
    check_text(value, f"{what}.value")
    if len(value) > limit:
        raise BlockInputError(f"{what}.value: {len(value)} characters, over the block's limit of {limit}")


class BlockRecordChecker:
    """Checks the block records of one import: each alone, and no two with the same id or the
    same owner and label."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._keys: set[tuple[str, str]] = set()

    def check(self, row: BlockRow, where: str) -> BlockRow:
        """``row`` if it is a block the store could have written; else BlockInputError naming
        the field at ``where``."""
        try:
            return self._check(row, where)
        except BlockInputError as exc:
            text = str(exc)
            raise BlockInputError(text if text.startswith(where) else f"{where}: {text}") from None

    def _check(self, row: BlockRow, where: str) -> BlockRow:
        if not row.id:
            raise BlockInputError(f"{where}.id: a block id must not be empty")
        check_text(row.id, f"{where}.id")
        check_agent(row.agent_id, f"{where}.agent_id")
        check_label(row.label)
        check_limit(row.char_limit)
        _fits(row.value, row.char_limit, where)
        check_text(row.description, f"{where}.description")
        for name in ("version", "created_at", "updated_at"):
            _whole(getattr(row, name), f"{where}.{name}", low=1 if name == "version" else 0)
        if row.id in self._ids:
            raise BlockInputError(f"{where}.id: block {row.id!r} appears twice")
        if (row.agent_id, row.label) in self._keys:
            raise BlockInputError(f"{where}.label: {row.agent_id or '(shared)'}/{row.label} appears twice")
        numbers = [v.version for v in row.versions]
        if numbers != sorted(set(numbers)):
            raise BlockInputError(f"{where}.versions: version numbers must increase")
        if numbers and row.version not in numbers:
            raise BlockInputError(f"{where}.version: {row.version} is not one of its versions")
        for i, v in enumerate(row.versions):
            at = f"{where}.versions[{i}]"
            if not check_text(v.action, f"{at}.action"):
                raise BlockInputError(f"{at}.action: must not be empty")
            check_label(v.label)
            check_limit(v.char_limit)
            _fits(v.value, v.char_limit, at)
            check_text(v.description, f"{at}.description")
            check_agent(v.agent_id, f"{at}.agent_id")
            check_text(v.run_id, f"{at}.run_id")
            _whole(v.version, f"{at}.version", low=1)
            _whole(v.created_at, f"{at}.created_at")
            for name in ("undo_to", "redo_to"):
                target = getattr(v, name)
                if target is not None and target not in numbers:
                    raise BlockInputError(f"{at}.{name}: {target} is not one of the block's versions")
        for a in row.agents:
            check_agent(a, f"{where}.agents")
        self._ids.add(row.id)
        self._keys.add((row.agent_id, row.label))
        return row
