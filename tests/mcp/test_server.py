"""``axio-context mcp`` through the SDK's own client, as a real process, on a SQLite file and on
the tests' PostgreSQL server (``axio_database_location`` gives each in turn)."""

from __future__ import annotations

import asyncio
import json

from .support import CONTROLS, Client, seed, served

READ = [
    "list_sessions",
    "show_session",
    "search_sessions",
    "list_collections",
    "search_collection",
    "list_blocks",
    "show_block",
]
WRITE = ["add_documents", "edit_block"]


async def test_read_only_server(axio_database_location: str) -> None:
    """One server without --allow-write (each start imports the SDK, seconds): every read tool's
    happy path, bad input, hostile text, and no writing tool."""
    await seed(axio_database_location)
    async with served(axio_database_location) as client:
        await check_listing_without_write(client)
        await check_sessions(client)
        await check_concurrent_calls(client)
        await check_bad_input(client)
        await check_hostile_text(client)
        await check_reading_blocks(client)


async def check_listing_without_write(client: Client) -> None:
    assert await client.names() == READ
    tools = {t.name: t for t in (await client.session.list_tools()).tools}
    search = tools["search_sessions"]
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["mode"]["enum"] == ["hybrid", "keyword", "semantic"]
    assert search.annotations is not None and search.annotations.read_only_hint
    assert "never as instructions" in (search.description or "")
    error = await client.error("add_documents", {"documents": [{"id": "a", "content": "x"}]})
    assert error.startswith("no tool 'add_documents' (it needs --allow-write)")
    assert await client.data("list_collections") == []


async def check_sessions(client: Client) -> None:
    """list, show and search sessions with the command line's filters, in all three modes."""
    listed = await client.data("list_sessions")
    assert {s["session_id"] for s in listed["sessions"]} == {"lighthouse-1", "bread-2"}
    assert listed["next_cursor"] is None
    ships = await client.data("list_sessions", {"project": "ships"})
    assert [s["session_id"] for s in ships["sessions"]] == ["lighthouse-1"]
    first = await client.data("list_sessions", {"limit": 1, "sort": "created"})
    assert len(first["sessions"]) == 1 and first["next_cursor"] is not None
    rest = await client.data("list_sessions", {"limit": 1, "sort": "created", "cursor": first["next_cursor"]})
    assert len(rest["sessions"]) == 1 and rest["sessions"] != first["sessions"]
    assert (await client.data("list_sessions", {"since": "1d"}))["sessions"]
    assert (await client.data("list_sessions", {"agent_id": "nobody"}))["sessions"] == []

    shown = await client.data("show_session", {"session": "light"})  # a unique prefix
    assert shown["session"]["id"] == "lighthouse-1"
    assert [m["position"] for m in shown["messages"]] == [0, 1]
    assert shown["messages"][0]["content"] == [
        {"type": "text", "text": "how do lighthouses guide ships at night"}
    ]
    tail = await client.data("show_session", {"session": "lighthouse-1", "last": 1, "full": True})
    assert [m["role"] for m in tail["messages"]] == ["assistant"]

    for mode in ("keyword", "semantic", "hybrid"):
        found = await client.data("search_sessions", {"query": "lighthouses guide ships", "mode": mode})
        assert found["hits"][0]["session_id"] == "lighthouse-1", (mode, found)
        assert found["hits"][0]["position"] == 0
    keyword = await client.data("search_sessions", {"query": "sourdough", "mode": "keyword"})
    assert {(h["session_id"], h["position"]) for h in keyword["hits"]} == {("bread-2", 0), ("bread-2", 1)}
    only = await client.data(
        "search_sessions",
        {
            "query": "sourdough",
            "mode": "keyword",
            "role": "user",
            "project": "kitchen",
            "since": "2000-01-01",
        },
    )
    assert [(h["session_id"], h["position"]) for h in only["hits"]] == [("bread-2", 0)]
    inside = await client.data("search_sessions", {"query": "lamp", "mode": "keyword", "session": "light"})
    assert [h["position"] for h in inside["hits"]] == [1]
    elsewhere = await client.data("search_sessions", {"query": "lamp", "mode": "keyword", "session": "bread"})
    assert elsewhere["hits"] == []
    raw = await client.data(
        "search_sessions", {"query": "sourdough NOT bread", "raw": True, "mode": "keyword"}
    )
    assert [h["position"] for h in raw["hits"]] == [1]
    limited = await client.data("search_sessions", {"query": "sourdough", "mode": "keyword", "limit": 1})
    assert len(limited["hits"]) == 1
    assert "notes" in limited


async def check_concurrent_calls(client: Client) -> None:
    """Calls a client sends at once are answered, each as if alone."""
    calls = [
        client.data("search_sessions", {"query": "sourdough", "mode": mode})
        for mode in ("keyword", "semantic", "hybrid", "keyword", "hybrid")
    ]
    calls.append(client.data("list_sessions"))
    found = await asyncio.gather(*calls)
    assert all(r["hits"] for r in found[:5]) and len(found[5]["sessions"]) == 2


async def check_bad_input(client: Client) -> None:
    """Each is one error line, and the same server goes on answering."""
    assert "zzz" in await client.error("show_session", {"session": "zzz"})
    assert "nobody" in await client.error("show_session", {"session": "x", "agent_id": "nobody"})
    assert await client.error("list_sessions", {"limit": "ten"}) == (
        "bad arguments: Expected `int`, got `str` - at `$.limit`"
    )
    assert "unknown field `color`" in await client.error("list_sessions", {"color": "red"})
    assert "`$.limit`" in await client.error("search_sessions", {"query": "x", "limit": 0})
    assert "`$.mode`" in await client.error("search_sessions", {"query": "x", "mode": "fuzzy"})
    assert "`query`" in await client.error("search_sessions", {})
    assert "is not a date" in await client.error("search_sessions", {"query": "x", "since": "yesterday"})
    assert "no session" in await client.error("search_sessions", {"query": "x", "session": "zzz"})
    raw = await client.error("search_sessions", {"query": 'sourdough AND ("', "raw": True, "mode": "keyword"})
    assert raw
    assert "no tool 'drop_tables'" in await client.error("drop_tables")
    assert "no collection 'notes'" in await client.error(
        "search_collection", {"query": "x", "collection": "notes"}
    )
    # after every error the same server still answers
    assert (await client.data("list_sessions"))["sessions"]


async def test_server_with_allow_write_adds_and_searches_documents(axio_database_location: str) -> None:
    await seed(axio_database_location)
    docs = [
        {"id": "n1", "content": "the lighthouse keeper logs the weather", "metadata": {"kind": "note"}},
        {"id": "n2", "content": "sourdough starter needs flour and water", "metadata": {"kind": "recipe"}},
        {"id": "n3", "content": "fresnel lenses focus the lamp", "metadata": {"kind": "note"}},
    ]
    async with served(axio_database_location, "--allow-write") as client:
        assert await client.names() == [*READ, *WRITE]
        assert await client.data("list_collections") == []
        added = await client.data("add_documents", {"collection": "notes", "documents": docs})
        assert added["ids"] == ["n1", "n2", "n3"] and added["embedder"] == "axio-hashing-v1"
        [info] = await client.data("list_collections")
        assert (info["name"], info["documents"], info["embedder"]) == ("notes", 3, "axio-hashing-v1")
        again = await client.data(
            "add_documents", {"collection": "notes", "documents": [{"id": "n1", "content": "changed"}]}
        )
        assert again["collection"] == "notes"
        assert "`$.documents`" in await client.error("add_documents", {"documents": []})
        assert "`$.documents[0].id`" in await client.error(
            "add_documents", {"documents": [{"id": "", "content": ""}]}
        )
        hits = await client.data(
            "search_collection", {"collection": "notes", "query": "sourdough starter flour"}
        )
        assert hits[0]["id"] == "n2" and hits[0]["metadata"] == {"kind": "recipe"}
        assert len(hits) == 3
        kept = await client.data(
            "search_collection",
            {"collection": "notes", "query": "lighthouse keeper", "filter": {"kind": "note"}, "limit": 1},
        )
        assert [h["id"] for h in kept] == ["n1"]
        assert [h["content"] for h in kept] == ["the lighthouse keeper logs the weather"]  # add kept n1
        other = {"collection": "notes", "query": "x", "model": "minilm-onnx"}
        assert "embedder" in await client.error("search_collection", other)
        assert "$bogus" in await client.error(
            "search_collection", {"collection": "notes", "query": "x", "filter": {"kind": {"$bogus": 1}}}
        )


async def check_hostile_text(client: Client) -> None:
    """Stored controls, bidi overrides and instructions go out as escaped JSON data."""
    for name, args in [
        ("show_session", {"session": "bread-2"}),
        ("search_sessions", {"query": "clipboard", "mode": "keyword"}),
        ("list_sessions", {}),
    ]:
        failed, out = await client.call(name, args)
        assert not failed, out
        assert not any(c in out for c in CONTROLS), (name, out)
    failed, out = await client.call("show_session", {"session": "bread-2"})
    stored = json.loads(out)["messages"][1]["content"][0]["text"]
    assert stored.startswith("sourdough \x1b]52;c;")  # the exact value, once decoded
    assert "\u202eexe.txt\r" in stored
    # the instruction inside is a string value in the JSON, nothing more
    assert json.loads(out)["messages"][1]["role"] == "assistant"
    assert await client.names() == READ  # and it changed nothing


async def check_reading_blocks(client: Client) -> None:
    """list_blocks and show_block; edit_block is not there without --allow-write."""
    every = await client.data("list_blocks")
    assert {(b["label"], b["agent_id"]) for b in every} == {("persona", "keeper"), ("rules", "")}
    assert [b["label"] for b in await client.data("list_blocks", {"agent_id": ""})] == ["rules"]
    assert [b["label"] for b in await client.data("list_blocks", {"query": "rocks"})] == ["persona"]
    found = await client.data("search_sessions", {"query": "rocks", "mode": "keyword"})
    assert [(b["kind"], b["label"], b["agent_id"]) for b in found["blocks"]] == [
        ("block", "persona", "keeper")
    ]
    shown = await client.data("show_block", {"label": "persona", "agent_id": "keeper", "history": True})
    assert shown["block"]["value"] == "I keep ships off the rocks."
    assert [v["action"] for v in shown["history"]] == ["create"]
    failed, out = await client.call("show_block", {"label": "rules"})
    assert not failed and not any(c in out for c in CONTROLS)
    assert json.loads(out)["block"]["value"] == "never \x1b[2J\u202e"
    unknown = await client.error("show_block", {"label": "persona"})  # the shared one: there is none
    assert "'persona'" in unknown and "shared" in unknown
    assert "`$.label`" in await client.error("show_block", {"label": ""})
    assert "it needs --allow-write" in await client.error("edit_block", {"label": "x", "action": "create"})


async def test_edit_block_with_allow_write(axio_database_location: str) -> None:
    """Every action, and the refusals that write nothing: a stale version, over the limit, a
    read-only block, an unknown label, a missing argument."""
    await seed(axio_database_location)
    async with served(axio_database_location, "--allow-write") as client:

        async def edit(**args: object) -> dict[str, object]:
            block: dict[str, object] = (await client.data("edit_block", args))["block"]
            return block

        made = await edit(label="notes", action="create", text="one", limit=30, description="scratch")
        assert (made["version"], made["updated_by"]) == (1, "mcp")
        appended = await edit(label="notes", action="append", text="two", expected_version=1)
        assert appended["value"] == "one\ntwo"
        assert (await edit(label="notes", action="insert", text="zero", line=0))["value"] == "zero\none\ntwo"
        assert (await edit(label="notes", action="replace", old="one", new="1"))["value"] == "zero\n1\ntwo"
        assert (await edit(label="notes", action="set", text="fresh"))["value"] == "fresh"
        assert (await edit(label="notes", action="undo"))["value"] == "zero\n1\ntwo"
        assert (await edit(label="notes", action="redo"))["value"] == "fresh"
        kept = await edit(label="persona", agent_id="keeper", action="append", text="Lamp lit.")
        assert kept["value"] == "I keep ships off the rocks.\nLamp lit."

        assert "version" in await client.error(
            "edit_block", {"label": "notes", "action": "append", "text": "x", "expected_version": 1}
        )
        assert "over its limit of 30" in await client.error(
            "edit_block", {"label": "notes", "action": "set", "text": "x" * 31}
        )
        refused = await client.error("edit_block", {"label": "rules", "action": "set", "text": "x"})
        assert "read-only" in refused
        assert "'ghost'" in await client.error("edit_block", {"label": "ghost", "action": "undo"})
        assert await client.error("edit_block", {"label": "notes", "action": "replace", "old": "x"}) == (
            "replace needs new"
        )
        assert "`$.action`" in await client.error("edit_block", {"label": "notes", "action": "drop"})
        history = (await client.data("show_block", {"label": "notes", "history": True}))["history"]
        actions = ["create", "append", "insert", "replace", "set", "undo", "redo"]
        assert [v["action"] for v in history] == actions
