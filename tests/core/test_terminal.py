"""Stored text reaches a terminal only through :func:`axio_context.terminal.visible`, and a
database location reaches people only through :func:`axio_context.locations.shown_location`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from axio_context.locations import shown_location
from axio_context.terminal import UNSAFE, escaped_json, visible

#: Every character the terminal would act on: C0 (less newline and tab), DEL, C1, bidi controls.
CONTROLS = (
    [chr(c) for c in range(0x20) if chr(c) not in "\n\t"]
    + [chr(c) for c in range(0x7F, 0xA0)]
    + ["\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A))]
)


@pytest.mark.parametrize("ch", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_is_shown_as_an_escape(ch: str) -> None:
    shown = visible(f"a{ch}b")
    assert shown == "a" + repr(ch)[1:-1] + "b"
    assert not UNSAFE.search(shown)
    assert shown.isprintable()


def test_what_people_see() -> None:
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07 \u202etxt.exe \x9b31m"
    assert visible(hostile) == "\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;cHduZWQ=\\x07 \\u202etxt.exe \\x9b31m"
    # lines and tabs stay for a printer of several lines; text of any other script is kept
    assert visible("one\n\ttwo  é 中文 עברית 🙂") == "one\n\ttwo  é 中文 עברית 🙂"


def test_json_escapes_keep_the_value_exactly() -> None:
    value = {"t": "a\x7f\x9b\u202e\u2066b\x1b", "k\u200f": ["\u061c"]}
    data = json.dumps(value, ensure_ascii=False).encode()
    safe = escaped_json(data)
    assert json.loads(safe) == value
    assert not UNSAFE.search(safe.decode())


# --- locations -----------------------------------------------------------------------------------

PASSWORDS = ["PW", "Secret@Pw", "pa/ss", "pa?ss", "a@b/c?d#e", "p%40ss", "x:y", "ends@"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_url_is_shown_without_its_password(password: str) -> None:
    for url in (
        f"postgresql://postgres:{password}@/db?host=/tmp/sock",
        f"postgres://me:{password}@db.example:5432/app",
        f"postgresql://me:{password}@host/db?sslmode=require&application_name=a@b",
    ):
        shown = shown_location(url)
        assert password not in shown, shown
        assert "***" in shown and shown.startswith(url.split("://")[0] + "://"), shown


def test_what_a_location_looks_like() -> None:
    assert (
        shown_location("postgresql://postgres:PW@/db?host=/tmp/x")
        == "postgresql://postgres:***@/db?host=/tmp/x"
    )
    assert (
        shown_location("postgresql://postgres:pa/ss@/db?host=/tmp/x")
        == "postgresql://postgres:***@/db?host=/tmp/x"
    )
    assert shown_location("postgresql://u:Secret@Pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert (
        shown_location("postgresql:///db?user=u&password=s3cret&host=/s")
        == "postgresql:///db?user=u&password=***&host=/s"
    )
    assert shown_location("postgresql://u@h/db") == "postgresql://u@h/db"  # nothing to hide, // kept
    assert shown_location("postgresql://[::1/db") == "postgresql://[::1/db"  # does not parse: shown
    assert shown_location(Path("/data/x/y.db")) == "/data/x/y.db"
    assert shown_location("relative/context.db") == "relative/context.db"
