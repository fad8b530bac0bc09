"""Which embedder a database's search uses, the same on every backend: a name (``hashing``,
``minilm``, ``minilm-onnx``, a model's own name or a local model directory) or, by default, the
model the database's embeddings come from, loaded once per database object."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Final

from ..embeddings import BUNDLED_MINILM, Embedder, HashingEmbedder, SentenceTransformerEmbedder
from ..errors import EmbedderUnavailableError
from ..onnx_minilm import ONNX_MINILM, OnnxMiniLMEmbedder

__all__ = ["DEFAULT_DIMENSION", "HASHING_MODEL", "choose_embedder"]

#: Dimension of the hashing embedder a database gets when nothing is recorded yet.
DEFAULT_DIMENSION: Final = 384
#: The model name the hashing embedder records.
HASHING_MODEL: Final = HashingEmbedder().model


async def choose_embedder(
    model: str | None,
    recorded: tuple[str, int] | None,
    loaded: MutableMapping[str, Embedder],
    *,
    dimension: int | None = None,
) -> Embedder:
    """The embedder for ``model``, by default the one ``recorded`` (the database's ``(model,
    dimension)``, None before its first embedding) names.

    ``hashing`` (or its model name) is the offline :class:`HashingEmbedder`, as wide as the
    database's embeddings (else ``dimension``, else 384); ``minilm`` the bundled
    all-MiniLM-L6-v2 of the ``minilm`` extra; ``minilm-onnx`` the same model as int8 ONNX without
    torch (the ``minilm-onnx`` extra); anything else a local sentence-transformers model
    directory or cached name. Models are kept in ``loaded`` (the database object's) once loaded.
    """
    name = model or (recorded[0] if recorded else "hashing")
    if name in ("hashing", HASHING_MODEL):
        if dimension is None:
            dimension = recorded[1] if recorded and recorded[0] == HASHING_MODEL else DEFAULT_DIMENSION
        return HashingEmbedder(dimension)
    name = {"minilm": BUNDLED_MINILM, "minilm-onnx": ONNX_MINILM}.get(name, name)
    if name not in loaded:
        try:
            if name == ONNX_MINILM:
                loaded[name] = await OnnxMiniLMEmbedder.load()
            else:
                loaded[name] = await SentenceTransformerEmbedder.load(
                    None if name == BUNDLED_MINILM else name
                )
        except EmbedderUnavailableError as exc:
            if model is not None:
                raise
            raise EmbedderUnavailableError(
                f"this database's embeddings come from {name!r}, which cannot be loaded here: {exc}"
            ) from exc
    return loaded[name]
