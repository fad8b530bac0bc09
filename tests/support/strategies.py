"""Hypothesis strategies for blocks and messages, shared by the property tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from axio_context import (
    AudioBlock,
    ContentBlock,
    ImageBlock,
    Message,
    ProviderBlock,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    VideoBlock,
)
from axio_context.blocks import KNOWN_BLOCK_TYPES

# JSON and MessagePack both carry 64-bit integers and finite doubles; keep generated data there.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)

short = st.text(max_size=40)
media = st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"])

text_blocks = st.builds(TextBlock, text=st.text(), signature=short, provider=short)
image_blocks = st.builds(ImageBlock, media_type=media, data=st.binary(max_size=300))
audio_blocks = st.builds(AudioBlock, media_type=st.just("audio/wav"), data=st.binary(max_size=64))
video_blocks = st.builds(VideoBlock, media_type=st.just("video/mp4"), data=st.binary(max_size=64))
tool_use_blocks = st.builds(
    ToolUseBlock, id=short, name=short, input=json_objects, signature=short, provider=short
)
tool_result_blocks = st.builds(
    ToolResultBlock,
    tool_use_id=short,
    content=st.text() | st.lists(text_blocks | image_blocks | audio_blocks | video_blocks, max_size=3),
    is_error=st.booleans(),
)
reasoning_blocks = st.builds(
    ReasoningBlock, text=st.text(), signature=st.text(), redacted=st.booleans(), id=short, provider=short
)
provider_blocks = st.builds(ProviderBlock, provider=short, kind=short, data=json_objects, id=short)
unknown_types = st.text(min_size=1, max_size=12).filter(lambda t: t not in KNOWN_BLOCK_TYPES)
unknown_blocks = st.builds(
    lambda kind, rest: UnknownBlock({**rest, "type": kind}),
    unknown_types,
    json_objects,
)

known_blocks: st.SearchStrategy[ContentBlock] = st.one_of(
    text_blocks,
    image_blocks,
    audio_blocks,
    video_blocks,
    tool_use_blocks,
    tool_result_blocks,
    reasoning_blocks,
    provider_blocks,
)
blocks: st.SearchStrategy[ContentBlock] = known_blocks | unknown_blocks
messages = st.builds(
    Message, role=st.sampled_from(["user", "assistant", "system"]), content=st.lists(blocks, max_size=5)
)
