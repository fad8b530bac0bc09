"""A session's free metadata as every backend stores it: JSON text as the exports write it."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from .codec import decode_json_exact, encode_json
from .errors import CorruptDataError

__all__ = ["decode_metadata", "encode_metadata"]


_metadata_decoder: Final = msgspec.json.Decoder(dict[str, Any])


def encode_metadata(metadata: dict[str, Any]) -> str:
    """The ``sessions.metadata`` text of a mapping: JSON as the exports write it, so NaN,
    infinities, lone surrogates and integers of any size are kept (plain msgspec would write
    NaN as null and refuse a lone surrogate)."""
    return encode_json(metadata, exact=True).decode()


def decode_metadata(session_id: str, text: str) -> dict[str, Any]:
    """A stored ``sessions.metadata`` back as a mapping; anything else is corrupt data."""
    try:
        return decode_json_exact(_metadata_decoder, text.encode("utf-8", "surrogatepass"))
    except msgspec.DecodeError as exc:
        raise CorruptDataError(f"session {session_id!r}: metadata is not a JSON object ({exc})") from None
