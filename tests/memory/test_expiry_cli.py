"""``prune --expired`` and the ``expired`` line of ``stats``, on a SQLite file and on PostgreSQL
(CliRunner, ``--json`` parsed), one real ``axio-context`` process; and the sweeper task. Context
pool items are among what expires."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from axio_context.copying.expiry_sql import ItemTTLs, item_ttls
from axio_context.expiry import InvalidTTLError, Sweeper, TTLConfig, start_sweeper
from axio_context.memory import Document
from axio_context.memory.stores_sql import SQLMemoryStores
from axio_context.pools import ContextItem
from axio_context.sql import Dialect, Plan, Rows
from tests.support.backends import Backend, backend_db, backend_pg_url  # noqa: F401  (fixtures)
from tests.support.cli_helpers import invoke, invoke_json

#: What :func:`fill` leaves expired, as ``--json`` and for people.
FILLED = {"documents": 1, "blobs": 2, "task_lists": 1, "sessions": 0, "pool_items": 2}
PARTS = "documents 1, blobs 2, task lists 1, pool items 2"
#: The installed console script.
EXE = shutil.which("axio-context") or "axio-context"


def stores_on(db: Backend) -> SQLMemoryStores:
    """The memory stores of the open database, as the command line opens them."""
    if db.name == "sqlite":
        from axio_context_sqlite.admin.stores import SQLiteMemoryStores

        return SQLiteMemoryStores(db.handle)
    from axio_context_postgres.memory import PostgresMemoryStores

    return PostgresMemoryStores(db.handle)


async def pool_on(db: Backend, name: str = "scratch") -> Any:
    """The context pool ``name`` of the open database."""
    if db.name == "sqlite":
        from axio_context_sqlite.pools import SQLiteContextPool

        return await SQLiteContextPool.open(db.handle, name)
    from axio_context_postgres.pools import PostgresContextPool

    return await PostgresContextPool.open(db.handle, name)


def _pool_ttls(d: Dialect) -> Plan[list[tuple[str, int, int]]]:
    rows = yield Rows(
        "SELECT key, ttl_ms, expires_at FROM context_pool_entries WHERE expires_at IS NOT NULL ORDER BY key"
    )
    return [(str(k), int(t), int(e)) for k, t, e in rows]


async def fill(db: Backend) -> None:
    """One expired document, two expired blob keys (one sharing its bytes with a live key), one
    expired board, two expired pool items, and live ones of each."""
    async with db.open():
        pool = await pool_on(db)
        await pool.add(ContextItem("draft", "a draft", "old1"), ttl=0.001)
        await pool.add(ContextItem("draft", "another draft", "old2"), ttl=0.001)
        await pool.add(ContextItem("plan", "the plan", "keep"))
        stores = stores_on(db)
        blobs = stores.blobs()
        await blobs.upload("old/a", b"shared", ttl=0.001)
        await blobs.upload("old/b", b"alone", ttl=0.001)
        await blobs.upload("live", b"shared")
        await stores.vectors().add([Document("old", "o", [1.0, 0.0])], collection="kb", ttl=0.001)
        await stores.vectors().add([Document("new", "n", [0.0, 1.0])], collection="kb")
        tasks = stores.tasks(ttl=TTLConfig(default_ttl=0.001))
        await tasks.create_task_list("done", ["t"])
        await tasks.create_task_list("going", ["t"], ttl=3600)
    await asyncio.sleep(0.02)


async def pool_keys(db: Backend) -> list[str | None]:
    async with db.open():
        return [i.id for i in (await pool_on(db)).items]


async def live_keys(db: Backend) -> tuple[list[str], list[str], list[str]]:
    async with db.open():
        stores = stores_on(db)
        keys = [i.key for i in await stores.blobs().list_keys()]
        boards = [b.conversation_id for b in await stores.tasks().list_task_lists()]
        docs = [d.id for d in await stores.vectors().documents("kb")]
        return keys, boards, docs


def test_stats_dry_run_decline_and_prune(backend_db: Backend) -> None:  # noqa: F811
    asyncio.run(fill(backend_db))
    db = backend_db.where
    stats = invoke_json("--db", db, "stats", "--json")
    assert stats["expired"] == FILLED
    assert [(p["name"], p["size"]) for p in invoke_json("--db", db, "pools", "--json")] == [("scratch", 1)]
    shown = invoke_json("--db", db, "pools", "show", "scratch", "--json")
    assert [i["id"] for i in shown["items"]] == ["keep"] and shown["info"]["size"] == 1
    assert (
        "expired    6 item(s) due for prune --expired (documents 1, blobs 2, task lists 1, pool items 2)"
        in invoke("--db", db, "stats").stdout
    )
    dry = invoke("--db", db, "prune", "--expired", "--dry-run")
    assert (
        dry.stderr.strip()
        == "6 expired item(s) would be deleted (documents 1, blobs 2, task lists 1, pool items 2)"
    )
    assert invoke_json("--db", db, "prune", "--expired", "--dry-run", "--json") == {
        "documents": 1,
        "blobs": 2,
        "task_lists": 1,
        "sessions": 0,
        "pool_items": 2,
    }
    declined = invoke("--db", db, "prune", "--expired", input="n\n")
    assert "nothing deleted" in declined.stderr
    assert invoke_json("--db", db, "stats", "--json")["expired"]["blobs"] == 2
    done = invoke("--db", db, "prune", "--expired", input="y\n")
    assert (
        done.stdout.strip() == "deleted 6 expired item(s) (documents 1, blobs 2, task lists 1, pool items 2)"
    )
    assert invoke_json("--db", db, "stats", "--json")["expired"] == {
        "documents": 0,
        "blobs": 0,
        "task_lists": 0,
        "sessions": 0,
        "pool_items": 0,
    }
    assert invoke("--db", db, "prune", "--expired", "--yes").stderr.strip() == "nothing expired"
    assert asyncio.run(live_keys(backend_db)) == (["live"], ["going"], ["new"])
    assert asyncio.run(pool_keys(backend_db)) == ["keep"]


def test_prune_expired_json_and_bad_combinations(backend_db: Backend) -> None:  # noqa: F811
    asyncio.run(fill(backend_db))
    db = backend_db.where
    assert invoke_json("--db", db, "prune", "--expired", "--yes", "--json") == {
        "documents": 1,
        "blobs": 2,
        "task_lists": 1,
        "sessions": 0,
        "pool_items": 2,
    }
    bad = invoke("--db", db, "prune", "--expired", "--keep", "3", ok=False)
    assert bad.exit_code == 2
    assert bad.stderr.strip().splitlines()[-1] == "Error: --expired takes no --before, --keep or project"
    assert "Traceback" not in bad.output


def test_prune_expired_in_a_real_process(tmp_path: Path) -> None:
    db = Backend("sqlite", str(tmp_path / "real.db"))
    asyncio.run(fill(db))
    out = subprocess.run(
        [EXE, "--db", db.where, "prune", "--expired", "--yes", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {
        "documents": 1,
        "blobs": 2,
        "task_lists": 1,
        "sessions": 0,
        "pool_items": 2,
    }
    assert asyncio.run(live_keys(db)) == (["live"], ["going"], ["new"])


async def test_a_sweeper_deletes_in_the_background(backend_db: Backend) -> None:  # noqa: F811
    await fill(backend_db)
    async with backend_db.open():
        expiry = stores_on(backend_db).expiry()
        assert (await expiry.count_expired()).total == 6
        assert not expiry.sweeper(60).running  # made, not started
        swept = asyncio.Event()

        async def sweep() -> object:
            gone = await expiry.sweep_expired()
            swept.set()
            return gone

        async with Sweeper(sweep, 0.01) as sweeper:
            await asyncio.wait_for(swept.wait(), 60)
        assert not sweeper.running
        assert sweeper.errors == []
        assert (await expiry.count_expired()).total == 0


async def test_a_failing_sweep_is_kept_and_the_next_runs() -> None:
    calls: list[int] = []
    second = asyncio.Event()

    async def sweep() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database gone")
        second.set()

    sweeper = start_sweeper(sweep, 0.01)
    await asyncio.wait_for(second.wait(), 60)
    await sweeper.stop()
    assert [str(e) for e in sweeper.errors] == ["database gone"]
    for bad in (0, -1, float("nan"), float("inf"), True):
        with pytest.raises(InvalidTTLError, match="interval"):
            Sweeper(sweep, bad)


def test_copy_leaves_expired_items_behind(backend_db: Backend, tmp_path: Path) -> None:  # noqa: F811
    asyncio.run(fill(backend_db))
    dest = Backend("sqlite", str(tmp_path / "copy.db"))
    out = invoke_json("copy", backend_db.where, dest.where, "--json")
    layers = out["layers"]
    assert (layers["collections"]["copied"], layers["blobs"]["copied"], layers["task_lists"]["copied"]) == (
        1,
        1,
        1,
    )
    assert asyncio.run(live_keys(dest)) == (["live"], ["going"], ["new"])
    assert asyncio.run(pool_keys(dest)) == ["keep"]
    expired = invoke_json("--db", dest.where, "stats", "--json")["expired"]
    assert (expired["blobs"], expired["pool_items"]) == (0, 2)  # a pool's log travels whole
    assert invoke_json("--db", dest.where, "prune", "--expired", "--yes", "--json")["pool_items"] == 2
    assert asyncio.run(pool_keys(dest)) == ["keep"]


def test_copy_carries_live_items_ttls(backend_db: Backend, tmp_path: Path) -> None:  # noqa: F811
    asyncio.run(fill(backend_db))  # its board "going" lives an hour

    async def more() -> ItemTTLs:
        async with backend_db.open():
            stores = stores_on(backend_db)
            await stores.blobs().upload("day", b"notes", ttl=3600)
            await stores.vectors().add([Document("brief", "b", [1.0, 1.0])], collection="kb", ttl=3600)
            await (await pool_on(backend_db)).add(ContextItem("x", "for a day", "day"), ttl=86400)
            return await item_ttls(stores.runner)

    async def pool_ttls(db: Backend) -> list[tuple[str, int, int]]:
        async with db.open():
            return await stores_on(db).runner.read(_pool_ttls)

    source = asyncio.run(more())
    source_pool = asyncio.run(pool_ttls(backend_db))
    assert [k for k, _, _ in source_pool] == ["day", "old1", "old2"]
    assert [len(source.layers[k]) for k in ("blobs", "task_lists", "documents")] == [1, 1, 1]
    dest = Backend("sqlite", str(tmp_path / "copy.db"))
    invoke("copy", backend_db.where, dest.where, "--json")

    async def copied() -> ItemTTLs:
        async with dest.open():
            return await item_ttls(stores_on(dest).runner)

    assert asyncio.run(copied()) == source  # the same TTLs and expiry times
    assert asyncio.run(pool_ttls(dest)) == source_pool


async def test_item_ttls_raise_what_is_not_a_missing_table(tmp_path: Path) -> None:
    from axio_context_sqlite import connect
    from axio_context_sqlite.store.runner import SQLiteRunner

    async with connect(tmp_path / "a.db") as conn:
        assert await item_ttls(SQLiteRunner(conn)) == ItemTTLs(
            {"blobs": [], "task_lists": [], "documents": []}
        )
        await conn.execute("DROP TABLE task_lists")
        with pytest.raises(Exception, match="task_lists"):  # once taken for "nothing expires here"
            await item_ttls(SQLiteRunner(conn))
