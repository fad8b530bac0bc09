"""What only the persisted queue and pool do: refuse content msgspec cannot encode with
nothing written, branch in one row, keep their kind and limit, catch up with another writer."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from axio_context.memory.testing.factory import TinyEmbedder
from axio_context.pools import (
    ContentEncodeError,
    ContextItem,
    PoolConfigError,
    PoolExistsError,
    PoolKindError,
)
from axio_context.pools.errors import ContextPoolError, PoolNotFoundError, UnregisteredHookError
from axio_context.pools.hooks import ContextPoolHook, Hook, HookRegistry
from axio_context_sqlite import connect
from axio_context_sqlite.pools import SQLiteContextPool, SQLiteContextQueue, list_pools, show_pool


async def _entries(conn: object) -> int:
    cur = await conn.execute("SELECT COUNT(*) FROM context_pool_entries")  # type: ignore[attr-defined]
    row = await cur.fetchone()
    return int(row[0])


async def test_unencodable_content_names_the_item_and_writes_nothing(tmp_path: Path) -> None:
    async with connect(tmp_path / "a.db") as conn:
        q = await SQLiteContextQueue.open(conn, "q", limit=5)
        await q.append(ContextItem(1))
        with pytest.raises(
            ContentEncodeError, match=r"item 1 \(id 'bad'\) of the append: its content \(object\)"
        ):
            await q.append(ContextItem(2), ContextItem(object(), id="bad"))
        p = await SQLiteContextPool.open(conn, "p")
        with pytest.raises(ContentEncodeError, match="id 'x'"):
            await p.add(ContextItem({1j}, "complex", "x"))
        assert await _entries(conn) == 1
        again = await SQLiteContextQueue.open(conn, "q")
        assert [i.content for i in again.items] == [1] and len(p) == 0


async def test_branch_writes_one_row_and_copies_no_item(tmp_path: Path) -> None:
    async with connect(tmp_path / "b.db") as conn:
        p = await SQLiteContextPool.open(conn, "docs")
        for i in range(200):
            await p.add(ContextItem(i, f"doc {i}", f"d{i}"))
        q = await SQLiteContextQueue.open(conn, "log", limit=50)
        await q.append(*[ContextItem(i) for i in range(80)])
        before = await _entries(conn)
        child = await p.branch(name="docs-child")
        qchild = await q.branch()
        assert await _entries(conn) == before
        assert (len(child), child.name, qchild.name, len(qchild)) == (200, "docs-child", "log/1", 50)
        with pytest.raises(PoolExistsError):
            await p.branch(name="docs-child")
        infos = {i.name: i for i in await list_pools(conn)}
        assert infos["docs-child"].parent == "docs" and infos["log/1"].size == 50


async def test_queue_keeps_only_its_window_on_disk(tmp_path: Path) -> None:
    async with connect(tmp_path / "w.db") as conn:
        q = await SQLiteContextQueue.open(conn, "log", limit=3)
        for i in range(50):
            await q.append(ContextItem(i))
        assert await _entries(conn) == 3
        p = await SQLiteContextPool.open(conn, "p", limit=2)
        for i in range(50):
            await p.add(ContextItem(i, "d", f"k{i % 7}"))
        assert await _entries(conn) == 3 + 2


async def test_open_checks_kind_limit_tags_and_existence(tmp_path: Path) -> None:
    async with connect(tmp_path / "c.db") as conn:
        await SQLiteContextQueue.open(conn, "q", limit=3, tags=["a"])
        with pytest.raises(PoolKindError, match="'q' is a queue, not a pool"):
            await SQLiteContextPool.open(conn, "q")
        with pytest.raises(PoolConfigError, match="limit 3, opened with limit 4"):
            await SQLiteContextQueue.open(conn, "q", limit=4)
        with pytest.raises(PoolConfigError, match="tags"):
            await SQLiteContextQueue.open(conn, "q", tags=["b"])
        with pytest.raises(ValueError, match="needs a limit"):
            await SQLiteContextQueue.open(conn, "new")
        with pytest.raises(PoolNotFoundError):
            await SQLiteContextPool.open(conn, "absent", create=False)
        with pytest.raises(PoolNotFoundError):
            await show_pool(conn, "absent")
        assert (await SQLiteContextQueue.open(conn, "q")).limit == 3


async def test_a_stale_handle_catches_up_and_loses_nothing(tmp_path: Path) -> None:
    async with connect(tmp_path / "s.db") as one, connect(tmp_path / "s.db") as two:
        a = await SQLiteContextPool.open(one, "p", limit=3)
        b = await SQLiteContextPool.open(two, "p")
        await a.add(ContextItem(1, "one", "x"))
        await b.add(ContextItem(2, "two", "y"))  # b had not seen x: computed from the stored state
        assert [i.id for i in b.items] == ["x", "y"]
        assert await a.refresh() and [i.id for i in a.items] == ["x", "y"]
        assert not await a.refresh()
        await b.add(ContextItem(3, "three", "z"))
        await a.add(ContextItem(4, "four", "w"))  # evicts the stored oldest, x
        assert [i.id for i in a.items] == ["y", "z", "w"]
        qa = await SQLiteContextQueue.open(one, "q", limit=2)
        qb = await SQLiteContextQueue.open(two, "q")
        await qa.append(ContextItem(1))
        await qb.append(ContextItem(2))
        await qa.append(ContextItem(3))
        assert [i.content for i in qa.items] == [2, 3]


async def test_select_reads_descriptions_with_fts_and_embeddings(tmp_path: Path) -> None:
    async with connect(tmp_path / "sel.db") as conn:
        p = await SQLiteContextPool.open(conn, "docs")
        await p.add(ContextItem("x", "the parser fails on brackets", "parse"))
        await p.add(ContextItem("y", "NEAR AND OR * ( quoted", "syntax"))
        assert [i.id for i in await p.select("parser brackets")] == ["parse"]
        assert [i.id for i in await p.select('NEAR ( "')] == ["syntax"]  # never an FTS5 syntax error
        assert await p.select("") == []
        emb = await SQLiteContextPool.open(conn, "docs", embedder=TinyEmbedder())
        await emb.add(ContextItem("z", "xyz", "zero"))  # no letter a-d: a zero embedding
        found = await emb.select("abba", k=2)  # embeds the stored descriptions on first use
        assert len(found) == 2 and "zero" not in [i.id for i in found]
        child = await emb.branch()
        await child.remove("parse")
        assert "parse" not in [i.id for i in await child.select("parser")]  # removed in the branch only
        assert next(i.id for i in await emb.select("parser")) == "parse"


async def test_a_pool_with_an_embedder_ranks_in_sql_on_a_connection_that_deferred_sqlite_vec(
    tmp_path: Path,
) -> None:
    """A connection opened after this process proved sqlite-vec defers loading it; a pool with an
    embedder loads it, so its ranking runs in SQL (vectors_probe finds the functions)."""
    async with connect(tmp_path / "first.db"):
        pass  # proves the library in this process, if nothing did before
    async with connect(tmp_path / "vec.db") as conn:
        await SQLiteContextPool.open(conn, "plain")
        assert await conn.execute_fetchall(_PROBE) == [(0,)]  # deferred: no embedder, no load
        await SQLiteContextPool.open(conn, "docs", embedder=TinyEmbedder())
        assert await conn.execute_fetchall(_PROBE) == [(1,)]


_PROBE = "SELECT EXISTS (SELECT 1 FROM pragma_function_list WHERE name = 'vec_distance_cosine')"


class Note(msgspec.Struct):
    """A typed content, decoded back as itself with ``content_type``."""

    title: str
    tags: list[str] = []


async def test_content_type_decodes_structs_and_dicts_stay_plain(tmp_path: Path) -> None:
    async with connect(tmp_path / "t.db") as conn:
        typed = await SQLiteContextPool.open(conn, "notes", content_type=Note)
        await typed.add(ContextItem(Note("parser", ["bug"]), "a note", "n1"))
        again = await SQLiteContextPool.open(conn, "notes", content_type=Note)
        assert again.get("n1").content == Note("parser", ["bug"])
        plain = await SQLiteContextPool.open(conn, "notes")
        assert plain.get("n1").content == {"title": "parser", "tags": ["bug"]}
        q = await SQLiteContextQueue.open(conn, "raw", limit=4)
        await q.append(ContextItem(b"\x00\xff"), ContextItem([1, {"a": None}]), ContextItem(2**40))
        assert [i.content for i in (await SQLiteContextQueue.open(conn, "raw")).items] == [
            b"\x00\xff",
            [1, {"a": None}],
            2**40,
        ]


async def test_from_dict_with_unencodable_content_writes_nothing(tmp_path: Path) -> None:
    async with connect(tmp_path / "u.db") as conn:
        data = {
            "limit": 2,
            "items": [{"id": "a", "description": "d", "content": {"z": 1j}}],
            "hooks": {},
            "tags": [],
        }
        with pytest.raises(ContentEncodeError, match="id 'a'"):
            await SQLiteContextPool.from_dict(conn, "p", data)
        assert await list_pools(conn) == []
        ok = {**data, "items": [{"id": "a", "description": "d", "content": [1, 2]}]}
        await SQLiteContextPool.from_dict(conn, "p", ok)
        with pytest.raises(PoolExistsError):
            await SQLiteContextPool.from_dict(conn, "p", ok)
        with pytest.raises(PoolExistsError):  # even with nothing in it
            await SQLiteContextPool.from_dict(conn, "p", {"limit": None, "items": []})


async def _noted(pool: object, item: object) -> None:
    return None


async def test_stored_hook_names_come_back_on_open_and_branches_keep_them(tmp_path: Path) -> None:
    saved = dict(HookRegistry._registry), list(HookRegistry._global_hooks)
    HookRegistry.clear()
    try:
        stored = Hook(_noted, ContextPoolHook.AFTER_ADD)
        HookRegistry.register(stored)
        data = {"limit": None, "items": [], "hooks": {"after_add": ["_noted"]}, "tags": []}
        async with connect(tmp_path / "h.db") as conn, connect(tmp_path / "h.db") as other:
            p = await SQLiteContextPool.from_dict(conn, "p", data)

            @p.before_add
            async def local_only(pool: object, item: object) -> None:
                return None

            child = await p.branch(name="c")
            assert child.hooks == [stored, HookRegistry.get("local_only")]  # inherited in this process
            HookRegistry.unregister("local_only")  # another process: only the stored names matter
            assert (await SQLiteContextPool.open(other, "p")).hooks == [stored]
            assert (await SQLiteContextPool.open(other, "c")).hooks == [stored]
            assert {i.name: i.hooks for i in await list_pools(other)} == {
                "p": {"after_add": ["_noted"]},
                "c": {"after_add": ["_noted"]},
            }
            HookRegistry.unregister("_noted")
            with pytest.raises(UnregisteredHookError, match="_noted"):
                await SQLiteContextPool.open(other, "c")
    finally:
        HookRegistry._registry, HookRegistry._global_hooks = saved


async def test_a_branch_is_written_on_first_use_and_never_when_dropped(tmp_path: Path) -> None:
    async with connect(tmp_path / "lazy.db") as conn:
        p = await SQLiteContextPool.open(conn, "p")
        await p.add(ContextItem(1, "one", "a"))
        p.branch()  # dropped unused: never written
        child = p.branch()
        with pytest.raises(ContextPoolError, match="named when it is written"):
            _ = child.name
        assert [i.name for i in await list_pools(conn)] == ["p"]
        await p.add(ContextItem(2, "two", "b"))  # the parent's change writes the child first
        assert [i.name for i in await list_pools(conn)] == ["p", "p/1"]
        assert child.name == "p/1" and await child is child and [i.id for i in child.items] == ["a"]
        named = p.branch(name="kept")
        assert named.name == "kept" and (await named).name == "kept"
        assert [i.id for i in (await SQLiteContextPool.open(conn, "kept")).items] == ["a", "b"]
        with pytest.raises(PoolExistsError):
            await p.branch(name="kept")
