"""Memory blocks in ``copy`` and in export/import, written once as plans: every block with its
whole history and attachments, as plain rows (JSON-ready dicts), written back as they were."""

from __future__ import annotations

from typing import Any, Final

from axio_context.sql import Dialect, Execute, Plan, Rows, Value

__all__ = ["dump_all", "load_one"]

_BLOCK_ROW: Final = (
    "id, agent_id, label, value, char_limit, description, read_only, version, created_at, updated_at"
)
_VERSION_ROW: Final = (
    "block_id, version, action, label, value, char_limit, description, read_only, undo_to, redo_to,"
    " agent_id, run_id, created_at"
)


def dump_all(d: Dialect) -> Plan[list[dict[str, Any]]]:
    """Every block as a JSON-ready dict: its row, its versions and its attachments."""
    blocks = yield Rows(f"SELECT {_BLOCK_ROW} FROM memory_blocks ORDER BY id")
    versions = yield Rows(f"SELECT {_VERSION_ROW} FROM memory_block_versions ORDER BY block_id, version")
    links = yield Rows("SELECT block_id, agent_id FROM memory_block_agents ORDER BY block_id, agent_id")
    by_block: dict[str, dict[str, Any]] = {}
    for r in blocks:
        row = dict(zip(_BLOCK_ROW.split(", "), r, strict=True))
        row["read_only"] = int(row["read_only"])
        by_block[str(r[0])] = {"block": row, "versions": [], "agents": []}
    for r in versions:
        row = dict(zip(_VERSION_ROW.split(", "), r, strict=True))
        row["read_only"] = int(row["read_only"])
        by_block[str(r[0])]["versions"].append(row)
    for r in links:
        by_block[str(r[0])]["agents"].append(str(r[1]))
    return list(by_block.values())


def load_one(d: Dialect, item: dict[str, Any], replace: bool) -> Plan[bool]:
    """Write one dumped block (its row, versions and attachments) as it was; False when a block
    with its id (or its owner and label) is there and ``replace`` is false."""
    block = item["block"]
    there = yield Value(
        "SELECT id FROM memory_blocks WHERE id = ? OR (agent_id = ? AND label = ?)",
        (block["id"], block["agent_id"], block["label"]),
    )
    if there is not None:
        if not replace:
            return False
        for table in ("memory_block_agents", "memory_block_versions"):
            yield Execute(f"DELETE FROM {table} WHERE block_id = ?", (there,))
        yield Execute("DELETE FROM memory_blocks WHERE id = ?", (there,))
    cols = _BLOCK_ROW.split(", ")
    yield Execute(
        f"INSERT INTO memory_blocks ({_BLOCK_ROW}) VALUES ({', '.join('?' for _ in cols)})",
        tuple(block[c] for c in cols),
    )
    vcols = _VERSION_ROW.split(", ")
    for v in item["versions"]:
        yield Execute(
            f"INSERT INTO memory_block_versions ({_VERSION_ROW}) VALUES ({', '.join('?' for _ in vcols)})",
            tuple(v[c] for c in vcols),
        )
    for agent in item["agents"]:
        yield Execute(
            "INSERT INTO memory_block_agents (block_id, agent_id) VALUES (?, ?)", (block["id"], agent)
        )
    return True
