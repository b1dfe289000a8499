"""Text embedders: the ``Embedder`` protocol, the packaged static model, a test embedder.

``StaticEmbedder.default()`` loads the model that ships inside this package
(``troth/models/minilm-static-128-int8``): a static, token-level model distilled
from all-MiniLM-L6-v2 (see ``bench/distill_model.py`` and ``docs/retrieval.md``). A
sentence's vector is the mean of its WordPiece tokens' rows, L2-normalised. It needs numpy
only: the model's ``tokenizer.json`` is read by the small WordPiece tokenizer below
(identical output to Hugging Face ``tokenizers`` for this BERT-style model) and its
``embeddings.safetensors`` by a 20-line reader. No torch, no model hub, nothing from the
network: it works offline on a fresh machine.

``HashingEmbedder`` hashes words and character trigrams into a small vector: no files,
no dependencies beyond numpy, deterministic across processes; for unit tests.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "HashingEmbedder",
    "StaticEmbedder",
    "WordPieceTokenizer",
    "read_safetensors",
]

DEFAULT_MODEL = "minilm-static-128-int8"
MODELS_DIR = Path(__file__).resolve().parent / "models"

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str:
        """A stable identifier of the model; stored beside vectors to detect a change."""
        ...

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Return an array of shape ``(len(texts), dim)``, float32, rows of unit length.

        An empty text (or one with no known token) gives a zero row.
        """
        ...


def _normalize_rows(matrix: FloatMatrix) -> FloatMatrix:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: FloatMatrix = (matrix / norms).astype(np.float32, copy=False)
    return normalized


class StaticEmbedder:
    """A static token-embedding model: mean of token rows, L2-normalised.

    Loads ``embeddings.safetensors`` (int8 rows with a per-row float scale, or
    float16/float32 rows), ``tokenizer.json`` and ``config.json`` from a folder.
    """

    def __init__(self, model_dir: Path | str, *, max_tokens: int = 512) -> None:
        """Load the model in ``model_dir``; ``max_tokens`` truncates long texts."""
        folder = Path(model_dir)
        config: dict[str, Any] = json.loads((folder / "config.json").read_text("utf-8"))
        tensors = read_safetensors(folder / "embeddings.safetensors")
        rows = tensors["embeddings"].astype(np.float32)
        if "scales" in tensors:
            rows *= tensors["scales"].astype(np.float32)[:, None]
        self._matrix: FloatMatrix = rows
        self._tokenizer = WordPieceTokenizer.from_file(folder / "tokenizer.json")
        self._max_tokens = max_tokens
        self._name = str(config.get("name", folder.name))

    @classmethod
    def default(cls) -> StaticEmbedder:
        """Load the model shipped with troth (cached per process)."""
        return _default_static_embedder()

    @property
    def name(self) -> str:
        """The model's folder name, e.g. ``minilm-static-128-int8``."""
        return self._name

    @property
    def dim(self) -> int:
        """The vectors' dimension."""
        return int(self._matrix.shape[1])

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed texts: mean of their known tokens' rows, L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        unknown = self._tokenizer.unknown_id
        encode, limit = self._tokenizer.encode, self._max_tokens
        # One gather and one sum per token count instead of a numpy mean per text (~20 µs
        # of numpy overhead each, a tenth of an ingested memory's cost). Summing axis 1 of
        # (texts, tokens, dim) adds each text's token rows in order, as ``mean(axis=0)``
        # does, and the division is the mean's: the same bits (tests/test_embedding.py).
        by_count: dict[int, tuple[list[int], list[list[int]]]] = {}
        for row, text in enumerate(texts):
            ids = [i for i in encode(text)[:limit] if i != unknown]
            if ids:
                rows, lists = by_count.setdefault(len(ids), ([], []))
                rows.append(row)
                lists.append(ids)
        matrix = self._matrix
        for count, (rows, lists) in by_count.items():
            sums = np.add.reduce(matrix[np.asarray(lists, dtype=np.intp)], axis=1)
            out[rows] = sums / np.intp(count)
        return _normalize_rows(out)


_SAFETENSORS_DTYPES = {"F32": np.float32, "F16": np.float16, "I8": np.int8}


def read_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Read a safetensors file (F32/F16/I8 tensors) into numpy arrays.

    The format is an 8-byte little-endian header length, a JSON header giving each
    tensor's dtype, shape and byte offsets, then the raw bytes. Reading it here saves a
    dependency for the three tensors this module needs.
    """
    data = path.read_bytes()
    (header_length,) = struct.unpack("<Q", data[:8])
    header: dict[str, Any] = json.loads(data[8 : 8 + header_length])
    body = memoryview(data)[8 + header_length :]
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _SAFETENSORS_DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=np.dtype(dtype).newbyteorder("<"))
        tensors[name] = array.reshape(spec["shape"])
    return tensors


_ASCII_CLEANUP = dict.fromkeys(range(32)) | {9: " ", 10: " ", 13: " ", 127: None}
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9\s]")


class WordPieceTokenizer:
    """BERT's uncased WordPiece tokenizer, read from a ``tokenizer.json``.

    Normalisation (drop control characters, space out CJK ideographs, lower-case, strip
    accents), splitting on whitespace and punctuation, then greedy longest-match
    WordPiece with ``##`` continuations; a word that cannot be split is ``[UNK]``. The
    output equals Hugging Face ``tokenizers`` without special tokens (checked on LoCoMo
    and random Unicode, see tests). Words are cached: conversation text repeats them.
    """

    def __init__(
        self, vocab: dict[str, int], *, unknown: str = "[UNK]", prefix: str = "##"
    ) -> None:
        """Build from a token->id vocabulary."""
        self._vocab = vocab
        self.unknown_id: int | None = vocab.get(unknown)
        self._prefix = prefix
        self._max_chars = 100
        self._word_ids = lru_cache(maxsize=1 << 16)(self._split_word)

    @classmethod
    def from_file(cls, path: Path) -> WordPieceTokenizer:
        """Load the WordPiece model of a ``tokenizer.json``."""
        spec: dict[str, Any] = json.loads(path.read_text("utf-8"))
        model = spec["model"]
        if model.get("type") != "WordPiece":
            raise ValueError(f"{path}: expected a WordPiece model, found {model.get('type')}")
        tokenizer = cls(
            model["vocab"],
            unknown=model.get("unk_token", "[UNK]"),
            prefix=model.get("continuing_subword_prefix", "##"),
        )
        tokenizer._max_chars = int(model.get("max_input_chars_per_word", 100))
        return tokenizer

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens."""
        ids: list[int] = []
        for word in self.words(text):
            ids.extend(self._word_ids(word))
        return ids

    def words(self, text: str) -> list[str]:
        """The normalised words and punctuation marks that WordPiece splits further."""
        if text.isascii():
            return _ASCII_WORDS.findall(text.translate(_ASCII_CLEANUP).lower())
        words = []
        for chunk in _normalize_unicode(text).split():
            start = 0
            for index, char in enumerate(chunk):
                if _is_punctuation(char):
                    if start < index:
                        words.append(chunk[start:index])
                    words.append(char)
                    start = index + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def _split_word(self, word: str) -> tuple[int, ...]:
        unknown = () if self.unknown_id is None else (self.unknown_id,)
        if len(word) > self._max_chars:
            return unknown
        ids = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                found = self._vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                return unknown
            ids.append(found)
            start = end
        return tuple(ids)


def _normalize_unicode(text: str) -> str:
    out = []
    for char in text:
        code = ord(char)
        if code in (0, 0xFFFD):
            continue
        category = unicodedata.category(char)
        if char in "\t\n\r" or category == "Zs":
            out.append(" ")
        elif category in ("Cc", "Cf"):
            continue
        elif _is_cjk(code):
            out.append(f" {char} ")
        else:
            out.append(char)
    decomposed = unicodedata.normalize("NFD", "".join(out).lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def _is_punctuation(char: str) -> bool:
    code = ord(char)
    # BERT counts every ASCII non-alphanumeric symbol as punctuation, plus Unicode P*.
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


_default_cache: list[StaticEmbedder] = []


def _default_static_embedder() -> StaticEmbedder:
    # The model is ~4 MB and read-only: load it once per process.
    if not _default_cache:
        _default_cache.append(StaticEmbedder(MODELS_DIR / DEFAULT_MODEL))
    return _default_cache[0]


_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@dataclass(frozen=True, slots=True)
class HashingEmbedder:
    """A deterministic embedder for tests: hashed words and character trigrams.

    Texts sharing words get similar vectors, which is enough to exercise vector search
    without a model. Uses blake2b, so results are the same in every process (unlike
    Python's salted ``hash``).
    """

    dim: int = 64
    name: str = "hashing-64"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed texts into ``dim`` buckets with signed hashing, L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                sign = 1.0 if value & 1 else -1.0
                out[row, (value >> 1) % self.dim] += sign * weight
        return _normalize_rows(out)

    @staticmethod
    def _features(text: str) -> list[tuple[str, float]]:
        features: list[tuple[str, float]] = []
        for word in _WORD.findall(text.lower()):
            features.append(("w:" + word, 1.0))
            padded = f"#{word}#"
            features.extend(("c:" + padded[i : i + 3], 0.3) for i in range(len(padded) - 2))
        return features
