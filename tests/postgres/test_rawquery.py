"""Raw FTS5 syntax on PostgreSQL: whatever a person types with --raw either compiles to a tsquery
the server accepts, or is refused before the server as "invalid FTS5 query ..."; never a server
syntax error."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axio_context.errors import SearchQueryError
from axio_context_postgres.rawquery import raw_tsquery


@pytest.mark.parametrize(
    ("query", "tsquery"),
    [
        ("parser AND crashes", "('parser' & 'crashes')"),
        ("parser crashes", "('parser' & 'crashes')"),
        ("parser NOT slow", "('parser' & !'slow')"),
        ("a OR b c", "('a' | ('b' & 'c'))"),
        ('"json parser"', "('json' <-> 'parser')"),
        ("toke*", "'toke':*"),
        ("tool:grep", "'grep':D"),
        ("-tool:grep", "'grep':A"),
        ("body:(a OR b)", "('a':A | 'b':A)"),
        ("NEAR(a b, 1)", "('a' <1> 'b' | 'b' <1> 'a' | 'a' <2> 'b' | 'b' <2> 'a')"),
        ("it''s", None),
    ],
)
def test_compiles(query: str, tsquery: str | None) -> None:
    if tsquery is None:
        with pytest.raises(SearchQueryError, match="invalid FTS5 query"):
            raw_tsquery(query)
    else:
        assert raw_tsquery(query) == tsquery


class Server:
    """One connection on its own event loop, for the sync hypothesis test."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(url))

    def accepts(self, tsquery: str) -> None:
        self.loop.run_until_complete(self.conn.fetchval("SELECT to_tsquery('simple', $1)", tsquery))

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()


@pytest.fixture(scope="module")
def server(pg_url: str) -> Iterator[Server]:
    s = Server(pg_url)
    yield s
    s.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.text(alphabet=st.sampled_from("ab \"()*-+^:,.NEARODT{}\\'"), max_size=30) | st.text(max_size=40)
)
def test_anything_typed_compiles_or_is_refused_before_the_server(server: Server, query: str) -> None:
    try:
        tsquery = raw_tsquery(query)
    except SearchQueryError as exc:
        message = str(exc)
    else:
        server.accepts(tsquery)  # raises (failing the test) if the server refuses it
        message = "invalid FTS5 query (none: it compiled)"
    assert message.startswith("invalid FTS5 query")
