"""The cell openers PostgreSQL's codecs run on every ``bytea``, ``text`` and ``jsonb`` cell
(:meth:`axio_context.sealing.PayloadCipher.openers`): a sealed value opens to what was sealed, a
plain one comes back as the same object, and a value altered, sealed under another key or read as
another kind is one UnsealError."""

from __future__ import annotations

import pytest

from axio_context.sealing import BYTES_MARK, JSON_MARK, TEXT_MARK, PayloadCipher, UnsealError

KEY = bytes(range(32))


def test_each_opener_opens_its_kind_and_passes_plain_cells_as_they_are() -> None:
    cipher = PayloadCipher(KEY)
    open_bytes, open_text = cipher.openers()
    assert open_bytes(cipher.seal_bytes(b"\x00payload")) == b"\x00payload"
    assert open_text(cipher.seal_text("Grüße, ümlaut")) == "Grüße, ümlaut"
    assert open_text(cipher.seal_json('{"a": [1, 2.5]}')) == '{"a": [1, 2.5]}'
    plain_bytes, plain_text = BYTES_MARK[:-1] + b"x", "axsealed"
    assert open_bytes(plain_bytes) is plain_bytes
    assert open_text(plain_text) is plain_text
    assert cipher.open(plain_bytes) is plain_bytes
    assert cipher.open(cipher.seal_text("via open")) == "via open"
    assert cipher.open(7) == 7


@pytest.mark.parametrize("kind", ["bytes", "text", "json"])
def test_an_altered_or_foreign_value_is_one_unseal_error(kind: str) -> None:
    cipher, other = PayloadCipher(KEY), PayloadCipher(bytes(32))
    open_bytes, open_text = cipher.openers()
    if kind == "bytes":
        sealed = cipher.seal_bytes(b"secret")
        value: bytes | str = sealed
        altered: bytes | str = sealed[:-1] + bytes([sealed[-1] ^ 1])
        foreign: bytes | str = other.seal_bytes(b"secret")
        opener = open_bytes
    else:
        seal = cipher.seal_text if kind == "text" else cipher.seal_json
        value = seal("secret")
        mark = TEXT_MARK if kind == "text" else JSON_MARK
        body = value[len(mark) :]
        altered = mark + ("B" if body[0] == "A" else "A") + body[1:]
        foreign = (other.seal_text if kind == "text" else other.seal_json)("secret")
        opener = open_text  # type: ignore[assignment]
    for bad in (altered, foreign, value[: len(value) // 2]):
        with pytest.raises(UnsealError, match="does not decrypt under the key"):
            opener(bad)  # type: ignore[arg-type]


def test_a_value_read_as_another_kind_does_not_open() -> None:
    """The associated data names the kind: text sealed as JSON text does not open as text."""
    cipher = PayloadCipher(KEY)
    _, open_text = cipher.openers()
    as_json = cipher.seal_json('"x"')
    swapped = TEXT_MARK + as_json[len(JSON_MARK) : -1]
    with pytest.raises(UnsealError):
        open_text(swapped)


def test_the_openers_are_made_once_per_cipher() -> None:
    # every pooled connection's codecs take them (open_on_read): one pair, not one per connection
    cipher = PayloadCipher(KEY)
    first, again = cipher.openers(), cipher.openers()
    assert first[0] is again[0] and first[1] is again[1]
