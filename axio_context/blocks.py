"""Content blocks: the typed parts of a message.

Every block is a frozen msgspec Struct in one tagged union (tag field ``type``), so the same
classes are the schema for JSON exports and MessagePack storage. The dict shape follows axio
0.12 exactly (``to_dict``/``from_dict``), so code and data written for axio keep working.

A block whose ``type`` this version does not know becomes an :class:`UnknownBlock` that keeps
the mapping it came as and encodes back to exactly it: a database written by a newer version
loads and saves without loss. So does a block of a known type with fields this version does not
know: it is kept whole the same way, rather than decoded with those fields dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, TypeAlias, cast

import msgspec

from .errors import DecodeError

__all__ = [
    "KNOWN_BLOCK_TYPES",
    "NESTED_BLOCK_TYPES",
    "AudioBlock",
    "Block",
    "ContentBlock",
    "ImageBlock",
    "MediaBlock",
    "ProviderBlock",
    "ReasoningBlock",
    "TextBlock",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolUseBlock",
    "UnknownBlock",
    "VideoBlock",
    "from_dict",
    "has_unknown_fields",
    "has_unknown_nested",
    "to_dict",
]


class Block(msgspec.Struct, frozen=True, tag_field="type", omit_defaults=True, forbid_unknown_fields=True):
    """Base of every known content block; the subclass's tag is its ``type``.

    Unknown fields are not dropped: a block of a known type carrying fields this version does
    not know (written by a newer one) fails the typed decoders, and the per-block path keeps it
    whole as an :class:`UnknownBlock` (see :func:`has_unknown_fields`), so it is written back
    exactly as it came.
    """


class TextBlock(Block, frozen=True, tag="text"):
    """Plain text; ``signature``/``provider`` carry a provider's proof where it signs text."""

    text: str
    signature: str = ""
    provider: str = ""

    def __repr__(self) -> str:
        # The signature is an opaque proof: keep it out of logs, as axio does.
        return f"TextBlock(text={self.text!r}, provider={self.provider!r})"


class MediaBlock(Block, frozen=True):
    """Base of the media blocks (image, audio, video): a media type and the raw bytes (base64
    only in JSON). Only its subclasses are blocks; the fields and their order, so the encoding,
    are theirs unchanged."""

    media_type: str
    data: bytes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(media_type={self.media_type!r}, data=<{len(self.data)} bytes>)"


class ImageBlock(MediaBlock, frozen=True, tag="image"):
    """An image; ``data`` is raw bytes (base64 only in JSON)."""


class AudioBlock(MediaBlock, frozen=True, tag="audio"):
    """An audio clip (axio 0.12 extension); ``data`` is raw bytes."""


class VideoBlock(MediaBlock, frozen=True, tag="video"):
    """A video clip (axio 0.12 extension); ``data`` is raw bytes."""


class ToolUseBlock(Block, frozen=True, tag="tool_use"):
    """A tool call made by the assistant; ``id`` pairs it with its ToolResultBlock."""

    id: str
    name: str
    input: dict[str, Any]
    signature: str = ""
    provider: str = ""

    def __repr__(self) -> str:
        return f"ToolUseBlock(id={self.id!r}, name={self.name!r}, input={self.input!r})"


class ReasoningBlock(Block, frozen=True, tag="reasoning"):
    """A provider's reasoning, replayed byte-exact with its signature; never inspect the signature."""

    text: str = ""
    signature: str = ""
    redacted: bool = False
    id: str = ""
    provider: str = ""

    def __repr__(self) -> str:
        return f"ReasoningBlock(text={self.text!r}, redacted={self.redacted!r}, id={self.id!r})"


class ProviderBlock(Block, frozen=True, tag="provider"):
    """An opaque item only the issuing protocol can read (axio 0.12), replayed unchanged."""

    provider: str
    kind: str
    data: dict[str, Any]
    id: str = ""


ToolResultContent: TypeAlias = TextBlock | ImageBlock | AudioBlock | VideoBlock


class ToolResultBlock(Block, frozen=True, tag="tool_result", omit_defaults=False):
    """The result of one tool call; ``content`` is a string or text/media blocks."""

    tool_use_id: str
    content: str | list[ToolResultContent]
    is_error: bool = False


class UnknownBlock:
    """A block of a type this version does not know, kept exactly as it came.

    It encodes back to its original mapping, so a newer version's data survives a round trip
    through an older one.
    """

    __slots__ = ("data",)

    data: dict[str, Any]

    def __init__(self, data: dict[str, Any]) -> None:
        if not isinstance(data.get("type"), str):
            raise DecodeError("a content block needs a string `type` field")
        object.__setattr__(self, "data", data)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("UnknownBlock is immutable")

    def __reduce__(self) -> tuple[type[UnknownBlock], tuple[dict[str, Any]]]:
        return (UnknownBlock, (self.data,))

    @property
    def type(self) -> str:
        """The block's ``type`` as the newer writer named it."""
        return str(self.data["type"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnknownBlock) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        return f"UnknownBlock({self.data!r})"


# The union msgspec decodes directly. UnknownBlock is not a Struct, so it cannot be a member of
# a msgspec tagged union; the codec falls back to per-block decoding when an unknown tag shows
# up (see codec.py). Type checkers see the full union, msgspec sees the decodable part.
KnownBlock: TypeAlias = (
    TextBlock
    | ImageBlock
    | AudioBlock
    | VideoBlock
    | ToolUseBlock
    | ToolResultBlock
    | ReasoningBlock
    | ProviderBlock
)
if TYPE_CHECKING:
    ContentBlock: TypeAlias = KnownBlock | UnknownBlock
else:
    ContentBlock = KnownBlock

KNOWN_BLOCK_TYPES: Final[dict[str, type[Block]]] = {
    "text": TextBlock,
    "image": ImageBlock,
    "audio": AudioBlock,
    "video": VideoBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
    "reasoning": ReasoningBlock,
    "provider": ProviderBlock,
}


def to_dict(block: ContentBlock) -> dict[str, Any]:
    """Serialize a block to axio's plain-dict shape (bytes as base64 text)."""
    if isinstance(block, UnknownBlock):
        return dict(block.data)
    if not isinstance(block, Block):
        raise TypeError(f"not a content block: {type(block).__name__}")
    out: dict[str, Any] = msgspec.to_builtins(block)
    if isinstance(block, ReasoningBlock):
        # axio always writes these three, and the optional proof fields only when set.
        out.setdefault("text", "")
        out.setdefault("redacted", False)
        out.setdefault("id", "")
    elif isinstance(block, ProviderBlock):
        out.setdefault("id", "")
    return out


def from_dict(data: dict[str, Any]) -> ContentBlock:
    """Build a block from axio's dict shape; an unknown ``type`` becomes an UnknownBlock."""
    if not isinstance(data, dict):
        raise DecodeError(f"a content block must be a mapping, got {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise DecodeError("a content block needs a string `type` field")
    cls = KNOWN_BLOCK_TYPES.get(kind)
    if cls is None:
        return UnknownBlock(data)
    try:
        # builtin-shaped input: bytes arrive as base64 text, as in JSON.
        block = cast(ContentBlock, msgspec.convert(data, cls))
    except msgspec.ValidationError as exc:
        if has_unknown_fields(exc) or (kind == "tool_result" and has_unknown_nested(data)):
            return UnknownBlock(data)
        raise DecodeError(f"invalid {kind!r} block: {exc}") from None
    return block


#: The block types a tool result's ``content`` list may hold (:data:`ToolResultContent`).
NESTED_BLOCK_TYPES: Final = ("text", "image", "audio", "video")


def has_unknown_fields(error: BaseException) -> bool:
    """Whether a typed decoder refused a block for a field this version does not know (the
    block, from a newer version, is then kept whole as an UnknownBlock)."""
    return "contains unknown field" in str(error)


def has_unknown_nested(data: dict[str, Any]) -> bool:
    """Whether a ``tool_result`` mapping nests a block of a type this version does not know (the
    whole result is then kept as an UnknownBlock)."""
    content = data.get("content")
    if not isinstance(content, list):
        return False
    return any(isinstance(item, dict) and item.get("type") not in NESTED_BLOCK_TYPES for item in content)
