"""FTS5 query translation and raw-query errors, against real FTS5 in sqlean's SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
import sqlean
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axio_context import Message, TextBlock, ToolResultBlock, ToolUseBlock
from axio_context.errors import AxioContextError, SearchQueryError
from axio_context.messages import searchable_text, text_columns
from axio_context_sqlite.search.fts import (
    BM25_WEIGHTS,
    FTS_TOKENIZE,
    MAX_TERMS,
    fts_errors,
    is_fts_query_error,
    match_expression,
    raw_expression,
)

DOCS = [
    ("We fixed the parser crash on nested brackets.", ""),  # 1
    ("The tokenizer handles unicode escapes now.", ""),  # 2
    ("", "grep: src/jsonkit/parser.py:12: def parse_array(self)"),  # 3
    ("Café crème costs NEAR 3 euros AND more", ""),  # 4
    ("error[E0502]: cannot borrow `self.map` as mutable", ""),  # 5
    ("東京タワー is in Tokyo; emoji 🚀 launch", ""),  # 6
    ("", "parser parser parser output of a tool"),  # 7
    ("the parser was slow", ""),  # 8
    ("DROP TABLE messages; is what the attacker typed", ""),  # 9
]


@pytest.fixture
def conn() -> Iterator[sqlean.Connection]:
    c = sqlean.connect(":memory:")
    c.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, body TEXT, tool TEXT)")
    c.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5(body, tool, content='messages', content_rowid='id', "
        f"tokenize='{FTS_TOKENIZE}')"
    )
    c.execute(
        "INSERT INTO messages_fts(messages_fts, rank) VALUES ('rank', ?)",
        (f"bm25({BM25_WEIGHTS[0]}, {BM25_WEIGHTS[1]})",),
    )
    for i, (body, tool) in enumerate(DOCS, start=1):
        c.execute("INSERT INTO messages (id, body, tool) VALUES (?, ?, ?)", (i, body, tool))
        c.execute("INSERT INTO messages_fts (rowid, body, tool) VALUES (?, ?, ?)", (i, body, tool))
    yield c
    c.close()


def search(conn: sqlean.Connection, query: str, operator: str = "OR") -> list[int] | None:
    expr = match_expression(query, operator=operator)  # type: ignore[arg-type]
    if expr is None:
        return None
    rows = conn.execute("SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank", (expr,))
    return [r[0] for r in rows]


def raw_search(conn: sqlean.Connection, query: str) -> list[int]:
    expr = raw_expression(query)
    if expr is None:
        return []
    with fts_errors(query):
        rows = conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank", (expr,)
        ).fetchall()
    return [r[0] for r in rows]


def test_translation_quotes_every_word() -> None:
    assert match_expression("fixed the parser") == '"fixed" OR "the" OR "parser"'
    assert match_expression("fixed parser", operator="AND") == '"fixed" AND "parser"'
    assert match_expression('say "hi"there') == '"say" OR "hi" OR "there"'
    assert match_expression('a"b') == '"a" OR "b"'
    assert match_expression("NEAR(a b)") == '"NEAR(a" OR "b)"'
    assert match_expression("body:x -y ^z") == '"body:x" OR "-y" OR "^z"'


def test_quoted_text_is_a_phrase_and_trailing_star_a_prefix() -> None:
    assert match_expression('"nested brackets" pars*') == '"nested brackets" OR "pars" *'
    assert match_expression("*") is None
    assert match_expression("-* ***") is None
    assert match_expression("*pars") == '"*pars"'


def test_nothing_to_search_for_is_none() -> None:
    for q in ["", "   ", '""', '"', "- + ; ' --", "\x00\x01", "()"]:
        assert match_expression(q) is None, q


def test_bad_operator_is_refused() -> None:
    with pytest.raises(ValueError, match="operator"):
        match_expression("x", operator="NOT")  # type: ignore[arg-type]


def test_terms_are_deduplicated_and_capped() -> None:
    assert match_expression("parser parser PARSER") == '"parser" OR "PARSER"'
    expr = match_expression(" ".join(f"w{i}" for i in range(200)))
    assert expr is not None
    assert expr.count(" OR ") == MAX_TERMS - 1


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"unbalanced quote',
        "unbalanced) (parentheses",
        "(((",
        ")))",
        "NEAR",
        "NEAR(parser crash, 2)",
        "NEAR/3",
        "AND",
        "OR OR OR",
        "NOT parser",
        "parser NOT",
        "-parser",
        "--",
        "*",
        "pars*",
        "**pars**",
        "^parser",
        "body:parser",
        "nosuchcolumn:parser",
        "{body tool}:parser",
        "'; DROP TABLE messages; --",
        "1=1 OR 'a'='a'",
        "x\x00y",
        "\ud800 lone surrogate",
        "tab\tand\nnewline",
        "e\u0301",
        "\u200b\u200d",
        "🚀",
        "東京タワー",
        "a" * 5000,
        "parser " * 500,
        "+",
        ":",
        "+parser",
    ],
)
def test_hostile_queries_never_raise(conn: sqlean.Connection, query: str) -> None:
    search(conn, query)
    search(conn, query, operator="AND")
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == len(DOCS)


def test_sql_and_operators_are_searched_as_words(conn: sqlean.Connection) -> None:
    assert search(conn, "'; DROP TABLE messages; --") == [9]
    assert search(conn, "NEAR AND") == [4]
    assert set(search(conn, "NOT parser") or []) == {1, 3, 7, 8}  # "NOT" excludes nothing
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == len(DOCS)


def test_what_a_person_means_is_found(conn: sqlean.Connection) -> None:
    # Porter stemming: "fixing crashes" finds "fixed ... crash".
    assert search(conn, "fixing crashes", operator="AND") == [1]
    # Prefix search; it matches stems, so a prefix longer than the stem misses (documented).
    assert search(conn, "toke*") == [2]
    assert search(conn, "tokenize*") == [2]
    assert search(conn, "tokeniz*") == []
    # A file path is a phrase of its parts, found inside tool output.
    assert search(conn, "src/jsonkit/parser.py") == [3]
    # Diacritics fold both ways.
    assert search(conn, "cafe creme", operator="AND") == [4]
    assert search(conn, "CAFÉ") == [4]
    # Identifiers with punctuation.
    assert search(conn, "E0502") == [5]
    assert search(conn, "error[E0502]:") == [5]
    # Unicode.
    assert search(conn, "東京タワー") == [6]
    assert search(conn, "🚀 launch") == [6]
    # A quoted phrase wants the words in a row.
    assert search(conn, '"nested brackets"') == [1]
    assert search(conn, '"brackets nested"') == []


def test_people_words_rank_above_tool_output(conn: sqlean.Connection) -> None:
    """Message 7 says "parser" three times in tool output, 8 once in its body: 8 wins."""
    ranked = search(conn, "parser")
    assert ranked is not None
    assert ranked.index(8) < ranked.index(7)
    assert ranked.index(1) < ranked.index(7)


def test_and_wants_every_word_or_ranks_by_how_many(conn: sqlean.Connection) -> None:
    assert search(conn, "parser slow", operator="AND") == [8]
    ranked = search(conn, "parser slow")
    assert ranked is not None
    assert ranked[0] == 8
    assert {1, 3, 7, 8} <= set(ranked)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=80))
def test_any_text_translates_to_a_valid_expression(conn: sqlean.Connection, query: str) -> None:
    for operator in ("OR", "AND"):
        result = search(conn, query, operator)
        assert result is None or set(result) <= set(range(1, len(DOCS) + 1))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.lists(
        st.sampled_from(
            ['"', "(", ")", "*", "-", "+", "^", ":", "NEAR", "AND", "OR", "NOT", "body", "parser", ",", " "]
        ),
        max_size=25,
    ).map("".join)
)
def test_operator_soup_translates_to_a_valid_expression(conn: sqlean.Connection, query: str) -> None:
    """Operators are searched as words: the expression runs, an OR finds at least what AND finds,
    and a query holding the word ``parser`` on its own finds the messages that say it."""
    any_word, every_word = search(conn, query), search(conn, query, "AND")
    if any_word is None or every_word is None:
        assert any_word is None and every_word is None
        assert not any(ch.isalnum() for ch in query)
        return
    assert set(every_word) <= set(any_word) <= set(range(1, len(DOCS) + 1))
    # a chunk between spaces whose only letters are "parser" is the word parser (its operator
    # characters are not letters to the index); the sample has no other letters to mix in
    if '"' not in query and any("".join(filter(str.isalpha, w)) == "parser" for w in query.split()):
        assert {1, 3, 7, 8} <= set(any_word), (query, any_word)


# --- raw mode ----------------------------------------------------------------------------------


def test_blank_raw_query_is_none() -> None:
    assert raw_expression("  \n") is None
    assert raw_expression("a OR b") == "a OR b"


def test_raw_fts5_syntax_passes_through(conn: sqlean.Connection) -> None:
    assert set(raw_search(conn, "parser NOT slow")) == {1, 3, 7}
    assert set(raw_search(conn, "body:parser")) == {1, 8}
    assert raw_search(conn, "NEAR(parser crash, 3)") == [1]
    assert raw_search(conn, "toke*") == [2]


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("(((", "syntax error"),
        ('"unterminated', "unterminated string"),
        ("nosuchcolumn:parser", "no such column"),
        ("parser AND", "syntax error"),
        ("NEAR(a b, x)", "expected integer"),
        ('"x\x00y"', "unterminated string"),
        ("lone \ud800 surrogate", "not valid text"),
    ],
)
def test_raw_syntax_errors_become_search_query_errors(conn: sqlean.Connection, query: str, why: str) -> None:
    with pytest.raises(SearchQueryError, match="invalid FTS5 query") as info:
        raw_search(conn, query)
    assert why in str(info.value)
    assert isinstance(info.value, AxioContextError)
    assert isinstance(info.value, ValueError)
    assert info.value.__cause__ is None or isinstance(info.value.__cause__, sqlean.OperationalError)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(alphabet=st.sampled_from('ab "()*-+^:,.NEARODT{}'), max_size=30) | st.text(max_size=40))
def test_raw_mode_either_answers_or_raises_search_query_error(conn: sqlean.Connection, query: str) -> None:
    """What FTS5 answers a raw query is what the search returns; what FTS5 rejects is a
    SearchQueryError, never SQLite's own error."""
    try:
        direct = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank", (query,)
            )
        ]
    except (sqlean.OperationalError, UnicodeEncodeError):
        direct = None
    try:
        got = raw_search(conn, query)
    except SearchQueryError as exc:
        refused: str | None = str(exc)
        got = []
    else:
        refused = None
    if refused is not None:
        assert refused.startswith("invalid FTS5 query")
        assert direct is None, (query, direct)
    else:
        assert got == (direct if query.strip() else []), query


def test_other_database_errors_pass_through_unchanged(conn: sqlean.Connection) -> None:
    with pytest.raises(sqlean.OperationalError, match="no such table"), fts_errors("parser"):
        conn.execute("SELECT * FROM no_such_table WHERE x MATCH 'parser'")
    with pytest.raises(KeyError), fts_errors("parser"):
        raise KeyError("not a database error")
    assert not is_fts_query_error(sqlean.OperationalError("database is locked"))
    assert not is_fts_query_error(ValueError("fts5: syntax error"))
    assert is_fts_query_error(sqlite3.OperationalError('fts5: syntax error near "("'))


# --- what gets indexed -------------------------------------------------------------------------


def test_text_columns_split_people_text_from_tool_text() -> None:
    msg = Message(
        role="assistant",
        content=[
            TextBlock(text="Let me grep."),
            ToolUseBlock(id="c1", name="grep", input={"pattern": "parse_array"}),
            ToolResultBlock(tool_use_id="c1", content="src/parser.py:12"),
            ToolResultBlock(tool_use_id="c2", content=[TextBlock(text="nested result")]),
        ],
    )
    body, tool = text_columns(msg)
    assert body == "Let me grep."
    assert tool == 'grep\n{"pattern":"parse_array"}\nsrc/parser.py:12\nnested result'
    # The two columns hold exactly the text searchable_text indexes.
    assert sorted((body + "\n" + tool).split("\n")) == sorted(searchable_text(msg).split("\n"))
    assert text_columns(Message(role="user")) == ("", "")
