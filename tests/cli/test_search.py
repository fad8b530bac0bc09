"""The ``search``, ``reindex`` and ``index`` commands through CliRunner, on real database files."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

from axio_context.embeddings import HashingEmbedder
from axio_context.testing import text
from axio_context_sqlite import SQLiteContextStore, connect, open_database
from tests.search.test_search import HOSTILE_QUERIES, build
from tests.support.cli_helpers import invoke, invoke_json


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "search.db"
    asyncio.run(build(path))
    return path


def positions(rows: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(r["session_id"], r["position"]) for r in rows]


def test_search_table_for_people(db: Path) -> None:
    out = invoke("--db", db, "search", "nested", "brackets").stdout.splitlines()
    assert out[0].split() == ["SESSION", "POS", "ROLE", "WHEN", "SNIPPET"]
    first = out[1].split(maxsplit=5)
    assert first[:3] == ["jsonkit-crash", "0", "user"]  # ids in full: never ambiguous
    assert first[5] == "The JSON parser crashes on **nested** **brackets** like [[1, [2]], 3]."


def test_search_json_and_nl(db: Path) -> None:
    rows = invoke_json("--db", db, "search", "parser", "--mode", "keyword", "-k", "3", "--json")["hits"]
    assert len(rows) == 3
    assert set(rows[0]) >= {
        "session_id",
        "position",
        "role",
        "snippet",
        "highlights",
        "score",
        "keyword_rank",
        "semantic_rank",
        "preview",
        "project",
        "created_at",
    }
    start, end = rows[0]["highlights"][0]
    assert rows[0]["snippet"][start:end].lower().startswith("parser")
    lines = invoke("--db", db, "search", "parser", "--mode", "keyword", "-k", "3", "--nl").stdout.splitlines()
    assert [json.loads(line) for line in lines] == rows


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_search_modes_and_limit(db: Path, mode: str) -> None:
    rows = invoke_json("--db", db, "search", "deploy billing staging", "--mode", mode, "-k", "2", "--json")[
        "hits"
    ]
    assert len(rows) == 2 and {r["session_id"] for r in rows} == {"billing-deploy"}
    if mode == "keyword":
        assert all(r["semantic_rank"] is None for r in rows)
    if mode == "semantic":
        assert all(r["keyword_rank"] is None for r in rows)


def test_search_filters(db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def found(*args: str) -> list[tuple[object, object]]:
        return positions(invoke_json("--db", db, "search", "parser", "-k", "50", "--json", *args)["hits"])

    assert {s for s, _ in found("--project", "/p/jsonkit")} == {"jsonkit-crash"}
    assert {s for s, _ in found("--session", "json")} == {"jsonkit-crash"}  # an id prefix
    assert found("--role", "system") == [("misc", 2)]
    assert found("--since", "1d") == found()
    assert found("--since", "2999-01-01") == []
    here = tmp_path / "work" / "jsonkit"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert found("--here") == []  # no session was filed under this directory
    ambiguous = invoke("--db", db, "search", "parser", "--session", "", ok=False)
    assert ambiguous.exit_code == 1 and "must not be empty" in ambiguous.stderr
    clash = invoke("--db", db, "search", "x", "--project", "/p", "--here", ok=False)
    assert clash.exit_code == 2


@pytest.mark.parametrize("query", [q for q in HOSTILE_QUERIES if q.strip() and "\x00" not in q])
def test_hostile_queries_never_fail(db: Path, query: str) -> None:
    result = invoke("--db", db, "search", "--", query, ok=False)
    assert "Traceback" not in result.output
    if result.exit_code == 1:  # past a query bound (search/query.py): one line naming the limit
        assert "the limit is" in result.stderr and len(result.stderr.strip().splitlines()) == 1
        return
    assert result.exit_code == 0, result.output


def test_raw_syntax_error_is_one_line(db: Path) -> None:
    result = invoke("--db", db, "search", "--raw", "NEAR(parser", ok=False)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: invalid FTS5 query 'NEAR(parser': ")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    ok = invoke_json("--db", db, "search", "--raw", "parser NOT crashes", "--mode", "keyword", "--json")[
        "hits"
    ]
    assert ok and ("jsonkit-crash", 0) not in positions(ok)


def test_usage_errors(db: Path) -> None:
    assert invoke("--db", db, "search", "x", "-k", "0", ok=False).exit_code == 2
    assert invoke("--db", db, "search", "x", "--mode", "fuzzy", ok=False).exit_code == 2
    assert invoke("--db", db, "search", "x", "--json", "--nl", ok=False).exit_code == 2
    assert invoke("--db", db, "search", ok=False).exit_code == 2
    missing = invoke("--db", db.with_name("missing.db"), "search", "x", ok=False)
    assert missing.exit_code == 1 and missing.stderr.startswith("Error: no database at")


def test_no_matches(db: Path) -> None:
    result = invoke("--db", db, "search", "zeppelin", "--mode", "keyword")
    assert result.stdout == "" and result.stderr == "no matches\n"
    empty = invoke_json("--db", db, "search", "zeppelin", "--mode", "keyword", "--json")
    assert empty["hits"] == [] and empty["notes"] == []


def test_unembedded_database_reindex_and_index(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"

    async def fill() -> None:
        async with connect(path) as conn:
            store = SQLiteContextStore(conn, "s", "/p")
            await store.append_many(
                [text("user", "the parser crashes"), text("assistant", "fixed the parser")]
            )

    asyncio.run(fill())
    hybrid = invoke("--db", path, "search", "parser")
    assert hybrid.stderr.startswith("note: no message is embedded yet, so this was a keyword search")
    assert len(hybrid.stdout.splitlines()) == 3
    semantic = invoke("--db", path, "search", "parser", "--mode", "semantic", ok=False)
    assert semantic.exit_code == 1 and "`reindex` embeds them" in semantic.stderr
    status = invoke("--db", path, "index").stdout
    assert "model        (none yet" in status and "embedded     0 of 2 stored message(s)" in status

    done = invoke("--db", path, "reindex")
    assert done.stdout == "embedded 2 message(s) with axio-hashing-v1 (384 dimensions)\n"
    info = invoke_json("--db", path, "index", "--json")
    assert info == {
        "model": "axio-hashing-v1",
        "dimension": 384,
        "messages": 2,
        "embedded": 2,
        "vec_available": True,
        "codes_stale": False,
        "semantic": "vec0",
    }
    assert invoke("--db", path, "reindex").stdout.startswith("embedded 0 message(s)")
    semantic_hits = invoke_json("--db", path, "search", "parsers crash", "--mode", "semantic", "--json")[
        "hits"
    ]
    assert semantic_hits[0]["position"] == 0

    mismatch = invoke("--db", path, "reindex", "--dimension", "128", ok=False)
    assert mismatch.exit_code == 1 and "--rebuild" in mismatch.stderr
    report = invoke_json("--db", path, "reindex", "--rebuild", "--dimension", "128", "--json")
    assert (report["embedded"], report["dimension"], report["rebuilt"]) == (2, 128, True)
    # search follows the database's model: hashing at 128 now
    assert invoke_json("--db", path, "search", "parser", "--mode", "semantic", "--json")["hits"]
    named = invoke_json(
        "--db", path, "search", "parser", "--mode", "semantic", "--model", "hashing", "--json"
    )["hits"]
    assert positions(named)[0] == ("s", 1)  # "hashing" takes the database's width


def test_query_with_another_embedder_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"

    async def fill() -> None:
        async with connect(path) as conn:
            await SQLiteContextStore(conn, "s", "/p", embedder=HashingEmbedder(64)).append(
                text("user", "parser")
            )

    asyncio.run(fill())
    assert invoke_json("--db", path, "index", "--json")["dimension"] == 64
    ok = invoke_json("--db", path, "search", "parser", "--mode", "semantic", "--json")["hits"]
    assert positions(ok) == [("s", 0)]


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is not None,
    reason="the minilm extra is installed here; this checks the message shown without it",
)
def test_model_extra_missing_is_one_line(db: Path) -> None:
    missing = (
        "Error: sentence-transformers is not installed; install the extra:"
        " pip install 'axio-context[minilm]'\n"
    )
    result = invoke("--db", db, "search", "parser", "--mode", "semantic", "--model", "minilm", ok=False)
    assert (result.exit_code, result.stdout, result.stderr) == (1, "", missing)
    # hybrid without --model on a minilm database would fall back; with --model it is the same
    # error, not a keyword-only result nor any other failure
    hybrid = invoke("--db", db, "search", "parser", "--model", "minilm", ok=False)
    assert (hybrid.exit_code, hybrid.stdout, hybrid.stderr) == (1, "", missing)


def test_similar_ranks_like_the_library_and_counts_from_the_end(db: Path) -> None:
    async def library(position: int) -> list[tuple[object, object]]:
        async with open_database(db) as d:
            return [(h.session_id, h.position) for h in await d.similar("billing-deploy", position, k=3)]

    rows = invoke_json("--db", db, "similar", "billing", "0", "-k", "3", "--json")["hits"]  # an id prefix
    assert positions(rows) == asyncio.run(library(0))
    assert positions(rows)[0] == ("billing-deploy", 1) and ("billing-deploy", 0) not in positions(rows)
    assert positions(
        invoke_json("--db", db, "similar", "billing-deploy", "-1", "-k", "3", "--json")["hits"]
    ) == (asyncio.run(library(1)))
    out = invoke("--db", db, "similar", "billing-deploy", "0", "-k", "1").stdout.splitlines()
    assert out[0].split() == ["SESSION", "POS", "ROLE", "WHEN", "SNIPPET"]
    assert out[1].split()[:3] == ["billing-deploy", "1", "assistant"]  # a chosen id is shown in full


def test_similar_errors_name_what_is_missing(db: Path, tmp_path: Path) -> None:
    def error(*args: str) -> str:
        result = invoke("--db", db, "similar", *args, ok=False)
        assert result.exit_code != 0
        return result.stderr.strip()

    assert error("billing-deploy", "2") == "Error: session 'billing-deploy' has no message 2 (it has 2)"
    assert error("billing-deploy", "-3") == "Error: session 'billing-deploy' has no message -3 (it has 2)"
    assert error("nope", "0").startswith("Error: no session")
    assert "Invalid value for 'POSITION'" in error("billing-deploy", "last")
    plain = tmp_path / "plain.db"

    async def unembedded() -> None:
        async with connect(plain) as conn:
            await SQLiteContextStore(conn, "s", "/p").append(text("user", "no embedder here"))

    asyncio.run(unembedded())
    result = invoke("--db", plain, "similar", "s", "0", ok=False)
    assert result.exit_code == 1 and "has no embedding" in result.stderr


def test_words_starting_with_a_dash_are_query_words(db: Path) -> None:
    def rows(*args: str) -> list[dict[str, object]]:
        result = invoke("--db", db, "search", "--mode", "keyword", "--json", *args)
        return json.loads(result.stdout)["hits"]  # type: ignore[no-any-return]

    everything = rows("parser", "-k", "50")
    sessions = {r["session_id"] for r in everything}
    assert len(sessions) > 1
    # a word whose letter after - is none of search's short options is a query word
    assert positions(rows("parser", "-zebra", "-k", "50")) == positions(everything)
    dashed = invoke("--db", db, "search", "parser", "-zebra", "--mode", "keyword")
    assert "note: -zebra searches for the word itself; --raw 'parser NOT pizza'" in dashed.stderr
    # after -- every word is QUERY, one starting with an option letter too
    assert positions(rows("-k", "50", "--", "parser", "-pizza", "-slow")) == positions(everything)
    # the options still work wherever they are, written apart, joined, or with =
    assert len(rows("-k", "2", "parser")) == 2
    assert len(rows("parser", "-k2")) == 2
    assert len(rows("parser", "--limit=2")) == 2
    assert {r["session_id"] for r in rows("parser", "-k", "50", "-p", "/p/jsonkit")} == {"jsonkit-crash"}
    # a value attached to -p or -s is that option's, as in click and every Unix tool
    assert {r["session_id"] for r in rows("parser", "-k50", "-p/p/jsonkit")} == {"jsonkit-crash"}
    assert {r["session_id"] for r in rows("parser", "-k50", "-sjsonkit")} == {"jsonkit-crash"}
    assert {r["session_id"] for r in rows("-sbilling", "parser", "-k50")} <= {"billing-deploy"}
    assert rows("parser", "-pizza") == []  # -p izza: no such project
    missing = invoke("--db", db, "search", "parser", "-slow", ok=False)  # -s low
    assert missing.exit_code == 1 and "'low'" in missing.stderr
    raw = invoke("--db", db, "search", "--raw", "--", "-parser", ok=False)
    assert raw.exit_code == 1 and raw.stderr.startswith("Error: invalid FTS5 query '-parser'")
    assert invoke("--db", db, "search", "parser", "--limt", "3", ok=False).exit_code == 2
    helped = " ".join(invoke("search", "--help").stdout.split())
    assert "`search parser -pizza` is `search parser -p izza`" in helped
    assert "`search -- parser -pizza`" in helped
